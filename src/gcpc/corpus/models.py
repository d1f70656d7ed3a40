"""Typed records that every stage exchanges: tasks, trajectories and their log events.

These are the boundary of the corpus package: readers of native formats produce them,
every later stage consumes them from the ingest stage's JSONL outputs.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_serializer

from gcpc.corpus.ids import printable


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class VerifierTest(Frozen):
    """One referencable pytest test of a task's official verifier."""

    id: str = Field(description="pytest node id relative to tests/, e.g. test_outputs.py::TestX::test_y")
    file: str
    name: str = Field(description="function name, e.g. test_y")
    cls: str | None = None
    source: str = Field(description="source text of the test function (used for linking and the restatement gate)")
    role: Literal["fail_to_pass", "pass_to_pass"] | None = Field(
        default=None, description="the verifier's own grouping where it declares one (SWE-bench FAIL_TO_PASS / PASS_TO_PASS); "
                                  "part of the task's verifier, never a result of a run; left out of the record when absent")

    @model_serializer(mode="wrap")
    def _without_absent_role(self, handler: object) -> dict:
        data = handler(self)  # type: ignore[operator]
        if data.get("role") is None:
            data.pop("role", None)
        return data


class Task(Frozen):
    benchmark: str
    task_id: str
    instruction: str
    metadata: dict[str, str | int | float | bool | list[str] | None] = Field(default_factory=dict)
    tests: list[VerifierTest] = Field(default_factory=list)
    verifier_files: dict[str, str] = Field(default_factory=dict, description="relative path -> text")
    source_path: str
    provenance: dict[str, str] = Field(
        default_factory=dict,
        description="where instruction, tests and verifier come from; 'verifier_source': 'absent' when the "
                    "verifier's code is not in the data (test ids then come from reported results only)")


class EventKind(StrEnum):
    AGENT_MESSAGE = "agent_message"
    TOOL_CALL = "tool_call"
    TOOL_OUTPUT = "tool_output"
    FILE_CONTENT = "file_content"
    SYSTEM = "system"


EVIDENCE_KINDS = frozenset({EventKind.TOOL_OUTPUT, EventKind.FILE_CONTENT})
"""Only these event kinds may support a Yes or No: what the environment displayed, never the agent's word."""


class SourceRef(Frozen):
    path: str
    line: int = Field(description="1-based line of the record in its source file")
    end_line: int | None = Field(default=None, description="last 1-based line of the record when it spans several")
    byte_start: int | None = Field(default=None, description="byte offset where the record starts in its file")
    byte_end: int | None = Field(default=None, description="byte offset just past the record (exclusive)")


class Event(Frozen):
    index: int
    kind: EventKind
    text: str
    tool: str | None = None
    is_error: bool = False
    source: SourceRef


OutcomeStatus = Literal["PASS", "FAIL", "other"]


class Outcome(Frozen):
    status: OutcomeStatus
    reward: float | None = None
    reason: str | None = Field(default=None, description="why status is 'other' (partial reward, exception, missing); "
                                                         "on a PASS / FAIL, the exception the trial recorded (Harbor exception_info)")
    raw: str | None = Field(default=None, description="the official result as recorded, e.g. 'is_resolved=null'")


class LogSize(Frozen):
    """Raw agent log vs judge-visible rendering, in characters and estimated tokens."""

    raw_bytes: int
    raw_chars: int
    raw_tokens: int
    rendered_chars: int
    rendered_tokens: int
    render_max_chars: int | None = Field(description="per-event cut used for the rendered size (None: no cut)")
    tokenizer: str = Field(description="how tokens were counted (see gcpc.corpus.size)")


class Trajectory(Frozen):
    trajectory_id: str
    benchmark: str
    task_id: str
    harness: str
    model: str
    condition: str = Field(description="with_skills | without_skills | self_generated | unknown")
    source: str = Field(description="job / contributor the trial came from")
    trial: str
    outcome: Outcome
    test_results: dict[str, str] = Field(default_factory=dict, description="verifier test id -> passed/failed/...")
    events: list[Event]
    source_path: str
    log_format: str | None = Field(default=None, description="reader that produced the events, e.g. 'tb1-agent-log'")
    log_files: list[str] = Field(default_factory=list, description="agent log files read, in order")
    size: LogSize | None = None
    notes: list[str] = Field(default_factory=list, description="what the reader cut, cleaned or could not read")


class Exclusion(Frozen):
    path: str
    reason: str
    benchmark: str | None = None
    source: str | None = Field(default=None, description="job / run the trial came from, when known")
    task_id: str | None = None
    duplicate_of: str | None = Field(default=None, description="trajectory id (or path) this one duplicates")

    @field_validator("path", "reason", "source", "task_id", "duplicate_of", mode="before")
    @classmethod
    def _writable(cls, value: object) -> object:
        """A folder name that is not UTF-8 is shown with \\xNN escapes (it could not be written as JSON)."""
        return printable(value) if isinstance(value, str) else value
