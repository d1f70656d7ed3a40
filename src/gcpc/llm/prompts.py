"""Prompts are versioned Jinja2 files under prompts/; this renders them into request messages.

A template's text above the line '===' is the stable prefix (rules, schema, checklist): it becomes
the system message and carries a cache marker. Everything after it (task material, trajectory)
becomes the user message, so providers with prompt caching reuse the prefix across calls.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jinja2
from pydantic import BaseModel

from gcpc.io import sha256_text
from gcpc.llm.base import Message

SEPARATOR = "\n===\n"

_env = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True, autoescape=False)


class PromptTemplate:
    """A template plus the rule files it embeds; its hash covers all of them."""

    def __init__(self, template: str | Path, includes: Mapping[str, str | Path] | None = None):
        self.path = Path(template)
        if not self.path.exists():
            raise FileNotFoundError(f"{self.path}: prompt template not found")
        self.source = self.path.read_text(encoding="utf-8")
        self.includes: dict[str, str] = {}
        for name, inc in (includes or {}).items():
            p = Path(inc)
            if not p.exists():
                raise FileNotFoundError(f"{p}: rules file not found (needed by {self.path})")
            self.includes[name] = p.read_text(encoding="utf-8")
        material = [self.source] + [f"{k}\n{v}" for k, v in sorted(self.includes.items())]
        self.hash = sha256_text("\n\x00\n".join(material))

    def render(self, schema: type[BaseModel] | dict[str, Any], **variables: Any) -> list[Message]:
        """Messages for one request; `schema` (a response model, or the request's own JSON schema) is shown as `{{ schema }}`."""
        context = dict(variables)
        for name, text in self.includes.items():
            context[name] = _env.from_string(text).render(**variables).strip()
        shown = schema if isinstance(schema, dict) else schema.model_json_schema()
        context["schema"] = json.dumps(shown, sort_keys=True)
        text = _env.from_string(self.source).render(**context)
        if SEPARATOR in text:
            prefix, rest = text.split(SEPARATOR, 1)
            return [Message(role="system", content=prefix.strip(), cache_prefix=True), Message(role="user", content=rest.strip())]
        return [Message(role="user", content=text.strip())]
