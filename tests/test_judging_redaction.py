"""Run configuration printed inside a log (launch command, banner, init record) never reaches a judge."""

from gcpc.corpus.models import Event, EventKind, Outcome, SourceRef, Trajectory
from gcpc.judging.spec import REDACTED, redact_run_metadata

SRC = SourceRef(path="sessions/agent.log", line=1)


def traj(events: list[str]) -> Trajectory:
    return Trajectory(
        trajectory_id="tb1/run/t1", benchmark="terminal-bench-1", task_id="hello", harness="mini-swe-agent",
        model="anthropic/claude-sonnet-4-20250514", condition="without_skills", source="run", trial="t1",
        outcome=Outcome(status="PASS", reward=1.0),
        events=[Event(index=i, kind=EventKind.SYSTEM if i == 0 else EventKind.TOOL_OUTPUT, text=t, source=SRC)
                for i, t in enumerate(events)],
        source_path="x",
    )


def test_model_and_harness_names_are_redacted_in_every_event():
    t = traj(["[agent launch] mini -m anthropic/claude-sonnet-4-20250514 -t 'task'",
              "This is Mini-SWE-Agent version 1.9 using claude-sonnet-4-20250514", "hello.txt written"])
    red = redact_run_metadata(t)
    texts = [e.text for e in red.events]
    assert all("claude-sonnet" not in x and "mini-swe-agent" not in x.lower() for x in texts)
    assert texts[0] == f"[agent launch] mini -m {REDACTED} -t 'task'"
    assert texts[2] == "hello.txt written"
    assert [e.index for e in red.events] == [0, 1, 2]


def test_claude_code_init_event_does_not_reveal_the_skill_condition(tmp_path):
    import json

    from gcpc.corpus.claude_code import parse_log

    log = tmp_path / "claude-code.txt"
    log.write_text(json.dumps({"type": "system", "subtype": "init", "cwd": "/root", "tools": ["Bash"],
                               "model": "claude-x@1", "skills": ["secret-skill"]}) + "\n")
    events = parse_log(log)
    assert events and "secret-skill" not in events[0].text and "claude-x" not in events[0].text


def test_the_ascii_pre_check_redacts_what_the_regex_alone_would():
    """redact_run_metadata skips the regex for ASCII texts without a needle (issue 29): same events either way,
    including case variants and the non-ASCII characters Python's case-insensitive regex folds onto ASCII."""
    import re

    texts = ["plain output", "MINI-SWE-AGENT started", "using Claude-Sonnet-4-20250514 now", "claude-sonnet-4@20250514",
             "mini-\u017fwe-agent (long s)", "\u0130 mini-swe-agent", "n\u00e4chste: mini-swe-agent",
             "mini\u2011swe\u2011agent (non-breaking hyphens)", "", "anthropic/claude-sonnet-4-20250514/x"]
    t = traj(texts)
    needles = ["anthropic/claude-sonnet-4-20250514", "claude-sonnet-4-20250514", "mini-swe-agent"]
    pattern = re.compile("|".join(re.escape(n) for n in needles), re.IGNORECASE)
    assert [e.text for e in redact_run_metadata(t).events] == [pattern.sub(REDACTED, x) for x in texts]
    assert redact_run_metadata(t).events[4].text == REDACTED + " (long s)"  # the regex folds it onto s: kept


def test_a_log_that_never_names_its_run_is_passed_on_without_a_pass_over_its_events():
    """issue 36: one search of all texts joined settles the common case (no copy); a name split across two
    events is not a mention, and a needle found in any event, ASCII or not, still redacts as before."""
    clean = traj(["plain output", "more output: mini-swe", "-agent is not one name here"])
    assert redact_run_metadata(clean) is clean
    for texts in (["ok", "n\u00e4chste MINI-SWE-AGENT"], ["ok", "mini-\u017fwe-agent"], ["ok", "claude-sonnet-4-20250514"]):
        t = traj(texts)
        red = redact_run_metadata(t)
        assert red is not t and REDACTED in red.events[-1].text and red.events[0].text == texts[0]


def test_the_characters_the_regex_folds_onto_ascii_are_exactly_the_four_checked():
    """The lower-case search stands in for the regex on non-ASCII texts without these characters (issue 36)."""
    import re
    import string
    import sys

    from gcpc.judging.spec import FOLDS_TO_ASCII

    letters = re.compile("[" + re.escape(string.ascii_letters) + "]", re.IGNORECASE)
    folded = {chr(c) for c in range(128, sys.maxunicode + 1) if letters.fullmatch(chr(c))}
    lowers_to_ascii = {chr(c) for c in range(128, sys.maxunicode + 1) if any(ord(x) < 128 for x in chr(c).lower())}
    assert folded | lowers_to_ascii == set(FOLDS_TO_ASCII)
    texts = ["box \u2500\u2500 MINI-SWE-AGENT \u2502", "\u2500 claude-sonnet-4-20250514", "\u2500 mini-\u017fwe-agent", "\u2500 plain"]
    pattern = re.compile("|".join(re.escape(n) for n in ["claude-sonnet-4-20250514", "mini-swe-agent"]), re.IGNORECASE)
    assert [e.text for e in redact_run_metadata(traj(texts)).events] == [pattern.sub(REDACTED, x) for x in texts]


def test_the_regex_free_replacement_is_the_regexs():
    """Random texts over an alphabet rich in needle fragments, overlaps and case variants (issue 36)."""
    import random
    import re

    rng = random.Random(36)
    needles = ["anthropic/claude-sonnet-4-20250514", "claude-sonnet-4-20250514", "mini-swe-agent"]
    pattern = re.compile("|".join(re.escape(n) for n in needles), re.IGNORECASE)
    parts = needles + ["MINI-SWE-AGENT", "mini-swe-", "agent", "anthropic/", "Claude-Sonnet-4-2025051", "4", " ", "\u2500",
                       "\u00e4", "x", "mini-\u017fwe-agent", "\n"]
    texts = ["".join(rng.choice(parts) for _ in range(rng.randint(1, 12))) for _ in range(400)]
    red = redact_run_metadata(traj(texts))
    assert [e.text for e in red.events] == [pattern.sub(REDACTED, x) for x in texts]
