"""Errors a user can cause and fix (a config, an argument, a missing input or folder).

A `python -m gcpc.…` process (every stage, `python -m gcpc.params`) prints such an error as one line,
`error: <what, where, what to do>`, and exits 2 instead of showing a traceback; `GCPC_DEBUG=1` shows
the traceback as before. gcpc/__init__.py installs the hook (`install`) in those processes only, so
library callers, tests and DVC itself see the exceptions unchanged. No gcpc imports: every layer
raises these.
"""

from __future__ import annotations

import os
import sys
from types import TracebackType

DEBUG_ENV = "GCPC_DEBUG"
EXIT_CODE = 2


class UserError(Exception):
    """Base of the errors a user fixes (as opposed to a bug, which keeps its traceback)."""


class ConfigError(UserError, ValueError):
    """A composed configuration that cannot run; the message names the offending keys."""


class ParamsError(UserError, KeyError):
    """A params.yaml key missing or naming nothing configured (a KeyError, as before, for callers that catch one)."""

    def __str__(self) -> str:  # KeyError would print the message in quotes
        return str(self.args[0]) if self.args else ""


HYDRA_USER_ERRORS = {"MissingConfigException", "ConfigCompositionException", "OverrideParseException",
                     "InterpolationResolutionError"}
"""Hydra / OmegaConf errors of a bad override or config (`arm=foo`, a typo'd key), by class name: not imported here."""


def is_user_error(exc: BaseException) -> bool:
    return isinstance(exc, UserError | FileNotFoundError | NotADirectoryError) or type(exc).__name__ in HYDRA_USER_ERRORS


def one_line(exc: BaseException) -> str:
    """The message on one line: Hydra's search-path listing dropped, an interpolation's wrapper prefix removed."""
    text = str(exc)
    if isinstance(exc, OSError) and exc.filename and exc.strerror:  # e.g. open() of a missing file
        text = f"{exc.filename}: {exc.strerror}"
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    lines = [ln for ln in lines if not ln.startswith(("Config search path", "provider=", "full_key:", "object_type="))]
    text = " ".join(lines)
    marker = " raised while resolving interpolation: "
    return text.split(marker, 1)[1] if marker in text else text


def excepthook(exc_type: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
    if os.environ.get(DEBUG_ENV, "") not in ("", "0") or not is_user_error(exc):
        sys.__excepthook__(exc_type, exc, tb)
        return
    print(f"error: {one_line(exc)}  ({DEBUG_ENV}=1 shows the traceback)", file=sys.stderr)
    import atexit

    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    atexit._run_exitfuncs()  # what a normal exit runs; then the exit code a user error has
    os._exit(EXIT_CODE)


def install() -> None:
    sys.excepthook = excepthook


def is_gcpc_entry_point(orig_argv: list[str]) -> bool:
    """Whether this process was started as `python -m gcpc.…`."""
    return "-m" in orig_argv[:-1] and orig_argv[orig_argv.index("-m") + 1].split(".")[0] == "gcpc"
