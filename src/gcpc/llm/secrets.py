"""API keys and redaction: see gcpc.secrets (the state lives there; these are the same functions)."""

from gcpc.secrets import DEFAULT_ENV, PLACEHOLDER, active, api_key, redact, register

__all__ = ["DEFAULT_ENV", "PLACEHOLDER", "active", "api_key", "redact", "register"]
