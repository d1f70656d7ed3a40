"""Prompts are versioned Jinja2 files under prompts/; this renders them into request messages.

A template's text above the line '===' is the stable prefix (rules, schema, examples): it becomes
the system message and carries a cache marker. Everything after it becomes the user message, so
providers with prompt caching reuse the prefix across calls (synthesis, TICK question generation).

Judge requests use `LayoutTemplate` instead (prompts/judging/layout/README.md): one fixed system
block, then the rendered log with the cache marker, then the arm's own text. The cached prefix is
then the same for every arm, TICK question and pass of a trajectory.
"""

from __future__ import annotations

import functools
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


@functools.lru_cache(maxsize=64)
def _compiled(source: str) -> jinja2.Template:
    """A template compiled once per process: compiling costs ~10 ms, and a stage renders the same few per request."""
    return _env.from_string(source)


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

    def render(self, schema: type[BaseModel] | dict[str, Any] | str, **variables: Any) -> list[Message]:
        """Messages for one request; `schema` (a response model, or the request's own JSON schema) is shown as `{{ schema }}`
        (a string is shown as it is: `gcpc.llm.settings.SCHEMA_NOT_SHOWN` where the decoder enforces the schema)."""
        context = dict(variables)
        for name, text in self.includes.items():
            context[name] = _compiled(text).render(**variables).strip()
        if isinstance(schema, str):
            context["schema"] = schema
        else:
            shown = schema if isinstance(schema, dict) else schema.model_json_schema()
            context["schema"] = json.dumps(shown, sort_keys=True)
        text = _compiled(self.source).render(**context)
        if SEPARATOR in text:
            prefix, rest = text.split(SEPARATOR, 1)
            return [Message(role="system", content=prefix.strip(), cache_prefix=True), Message(role="user", content=rest.strip())]
        return [Message(role="user", content=text.strip())]


class LayoutTemplate(PromptTemplate):
    """An arm's judge template in the shared judging layout: [system block, log (cache marker), arm's text].

    `layout` is the folder with `system.md` and `log.jinja` (prompts/judging/layout); the hash covers
    the arm's template and both layout files, so a change to any of them changes the request keys.
    """

    SYSTEM, LOG = "system.md", "log.jinja"

    def __init__(self, template: str | Path, layout: str | Path):
        super().__init__(template)
        if SEPARATOR in self.source:
            raise ValueError(f"{self.path}: a judge template holds only the arm's part (no '===' line); "
                             f"the layout ({layout}) supplies the system block and the log")
        self.layout = Path(layout)
        parts = []
        for name in (self.SYSTEM, self.LOG):
            f = self.layout / name
            if not f.exists():
                raise FileNotFoundError(f"{f}: judging layout file not found (needed by {self.path})")
            parts.append(f.read_text(encoding="utf-8"))
        self.system, self.log_source = parts
        self.hash = sha256_text("\n\x00\n".join([self.source, f"{self.SYSTEM}\n{self.system}", f"{self.LOG}\n{self.log_source}"]))

    def render(self, schema: type[BaseModel] | dict[str, Any] | str, **variables: Any) -> list[Message]:
        if "log" not in variables:
            raise TypeError(f"{self.path}: a judge template is rendered with the log (`log=`)")
        arm_text = super().render(schema, **variables)[0].content
        log_block = _compiled(self.log_source).render(log=variables["log"]).strip()
        return [Message(role="system", content=self.system.strip()),
                Message(role="user", content=log_block, cache_prefix=True),
                Message(role="user", content=arm_text)]
