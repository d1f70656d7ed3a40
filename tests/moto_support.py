"""moto's S3 server mode on 127.0.0.1, for the object-store tests (tests/test_remote_cache.py, tests/test_team_store.py).

Skips with the reason where the team extra is missing or the server cannot listen. moto keeps its buckets in one
in-process backend, so two servers started by one pytest run see each other's objects."""

from __future__ import annotations

import pytest


def start_moto(*needs: str) -> tuple[object, str]:
    """A started ThreadedMotoServer and its endpoint URL; `needs`: further team-extra modules to import first."""
    try:
        from moto.server import ThreadedMotoServer
        import boto3  # noqa: F401

        for name in needs:
            __import__(name)
    except ImportError as exc:
        pytest.skip(f"the team extra is not installed ({exc.name}): uv sync --locked --extra team")
    import logging

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    try:
        server.start()
        host, port = server.get_host_and_port()
    except Exception as exc:  # noqa: BLE001 - any failure to listen is a skip, with its reason
        pytest.skip(f"moto's S3 server could not start on 127.0.0.1: {exc}")
    return server, f"http://{host}:{port}"
