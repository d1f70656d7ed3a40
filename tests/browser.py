"""Headless Chromium for the browser tests: Debian's `chromium` driven by Playwright.

`playwright install` is never run (its CDN is not reachable); the system browser is used. When no
browser or no Playwright is available the tests skip and say why. .ci/run installs `chromium`.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser")


def chromium_path() -> str | None:
    env = os.environ.get("GCPC_CHROMIUM")
    for p in ((env,) if env else ()) + CANDIDATES:
        if p and Path(p).exists():
            return p
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    return found


def skip_reason() -> str | None:
    """None when a browser can be driven, else why not."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright package is not installed (pip install -e '.[test]')"
    if chromium_path() is None:
        return "no Chromium found (.ci/run installs Debian's 'chromium'; set GCPC_CHROMIUM to another binary)"
    return None


@contextmanager
def browser_context(viewport: tuple[int, int] = (1280, 900)) -> Iterator:
    """A fresh persistent context (its own user-data dir) in the system Chromium."""
    from playwright.sync_api import sync_playwright

    profile = tempfile.mkdtemp(prefix="gcpc-chromium-")
    try:
        with sync_playwright() as pw:
            ctx = pw.chromium.launch_persistent_context(
                profile, executable_path=chromium_path(), headless=True, args=CHROMIUM_ARGS,
                viewport={"width": viewport[0], "height": viewport[1]})
            try:
                yield ctx
            finally:
                ctx.close()
    finally:
        shutil.rmtree(profile, ignore_errors=True)


@contextmanager
def serve_app(app) -> Iterator[str]:
    """Serve a Flask app on 127.0.0.1 (free port) in a thread; yields the base URL."""
    from werkzeug.serving import make_server

    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        thread.join(timeout=10)
