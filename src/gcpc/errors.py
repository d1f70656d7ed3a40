"""Errors a user can cause and fix (a config, an argument, a missing input): the stages print their
message on one line and exit 2 instead of a traceback (GCPC_DEBUG=1 shows it). No gcpc imports:
every layer raises them."""

from __future__ import annotations


class ConfigError(ValueError):
    """A composed configuration that cannot run; the message names the offending keys."""
