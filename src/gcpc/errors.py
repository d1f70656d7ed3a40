"""Errors a user can cause and fix (a config, an argument, a missing input or folder).

A `python -m gcpc.…` process (every stage, `python -m gcpc.experiment`) prints such an error as one line,
`error: <what, where, what to do>`, and exits 2 instead of showing a traceback; `GCPC_DEBUG=1` shows
the traceback as before. gcpc/__init__.py installs the hook (`install`) in those processes only, so
library callers and tests see the exceptions unchanged. Inside `dvc exp run`, DVC composes conf/ in its
own process; the Hydra plugin there calls `install_in_dvc`, so a bad override is one line too. No gcpc
imports: every layer raises these.
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
    """The message on one line: Hydra's search-path listing dropped, an interpolation's wrapper prefix removed,
    and for an override of a key that does not exist (a typo), the existing keys it is closest to."""
    text = str(exc)
    if isinstance(exc, OSError) and exc.filename and exc.strerror:  # e.g. open() of a missing file
        text = f"{exc.filename}: {exc.strerror}"
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    lines = [ln for ln in lines if not ln.startswith(("Config search path", "provider=", "full_key:", "object_type="))]
    text = " ".join(lines)
    marker = " raised while resolving interpolation: "
    text = text.split(marker, 1)[1] if marker in text else text
    return f"{text}{_close_keys(exc.__cause__)}"


def _close_keys(cause: BaseException | None) -> str:
    """`judging.max_event_char=8` fails in OmegaConf with the parent node at hand: name its keys that look alike."""
    import difflib

    key, parent, full_key = (getattr(cause, a, None) for a in ("key", "parent_node", "full_key"))
    if not isinstance(key, str) or not isinstance(full_key, str) or not hasattr(parent, "keys"):
        return ""
    close = difflib.get_close_matches(key, [str(k) for k in parent.keys()], n=3, cutoff=0.75)
    prefix = full_key[: -len(key)]
    return f"; did you mean {' or '.join(prefix + k for k in close)}?" if close else ""


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


def install_in_dvc() -> None:
    """Inside `dvc exp run` (hydra_plugins/gcpc_resolvers calls this while DVC composes params.yaml from conf/):
    DVC reports an exception class it does not know (Hydra's, OmegaConf's, ours) as "unexpected error", Hydra's
    message over many lines, and a support footer, exit 255. This wraps DVC's `dvc.cli._log_exceptions` (looked
    up at call time by `dvc.cli.main`) so that a user error raised inside DVC's composition (`compose_and_dump`)
    prints `ERROR: <one line>` and exits 2; `GCPC_DEBUG=1` prints the traceback first. Any other exception, and any
    raised after composition, goes to DVC's own reporting unchanged. A no-op outside a `dvc` process."""
    cli = sys.modules.get("dvc.cli")
    report = getattr(cli, "_log_exceptions", None)
    if report is None or getattr(report, "gcpc_wrapped", False):
        return

    def log_exceptions(exc: Exception) -> int | None:
        if not (is_user_error(exc) and _raised_in(exc, "compose_and_dump")):
            return report(exc)
        if os.environ.get(DEBUG_ENV, "") not in ("", "0"):
            import traceback

            traceback.print_exception(exc)
        cli.logger.error("%s  (%s=1 shows the traceback)", one_line(exc), DEBUG_ENV)
        return EXIT_CODE

    log_exceptions.gcpc_wrapped = True  # type: ignore[attr-defined]
    cli._log_exceptions = log_exceptions  # type: ignore[union-attr]


def _raised_in(exc: BaseException, function: str) -> bool:
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_name == function:
            return True
        tb = tb.tb_next
    return False


def is_gcpc_entry_point(orig_argv: list[str]) -> bool:
    """Whether this process was started as `python -m gcpc.…`."""
    return "-m" in orig_argv[:-1] and orig_argv[orig_argv.index("-m") + 1].split(".")[0] == "gcpc"
