"""API keys: read from environment variables only, and scrubbed from anything gcpc writes.

Keys never enter params, requests, records, state files or summaries by construction (the
request model has no place for one and the SDK's headers are never stored). As a second line
of defence every key read here is registered, and `redact` removes it from any text gcpc is
about to write or raise (the call store runs every line through it, and provider errors are
redacted before they are recorded), in case a server echoes a credential back in an error.

(A top-level module, not under gcpc.llm: every stage that writes a file redacts, and importing
the LLM package for that cost each stage process a few hundred milliseconds. `gcpc.llm.secrets`
is the same module's functions under their old name.)
"""

from __future__ import annotations

import os
import threading

DEFAULT_ENV = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}
PLACEHOLDER = "not-needed"  # sent to keyless OpenAI-compatible servers; not a secret

_lock = threading.Lock()
_registered: set[str] = set()


def register(secret: str) -> None:
    if secret and len(secret) >= 6 and secret != PLACEHOLDER:
        with _lock:
            _registered.add(secret)


def active() -> bool:
    """Whether any secret is registered (redaction can change text)."""
    with _lock:
        return bool(_registered)


def redact(text: str) -> str:
    if not text:
        return text
    with _lock:
        secrets = sorted(_registered, key=len, reverse=True)
    for s in secrets:
        if s in text:
            text = text.replace(s, "[REDACTED]")
    return text


def api_key(provider: str, env_name: str | None, *, required: bool = True) -> str:
    """The key for `provider` from `env_name` (default ANTHROPIC_API_KEY / OPENAI_API_KEY)."""
    name = env_name or DEFAULT_ENV.get(provider)
    value = os.environ.get(name, "") if name else ""
    if value:
        register(value)
        return value
    if not required:
        return PLACEHOLDER
    raise RuntimeError(f"llm provider '{provider}': environment variable {name} is not set "
                       f"(API keys are read only from the environment; set api_key_env in conf/llm to use another variable)")
