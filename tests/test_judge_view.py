"""The judge view (gcpc.judging.view): harness setup dropped, installation collapsed, budget cut;
every removal counted; with every cleaning off it is exactly `render_log`."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gcpc.corpus.ingest import ingest
from gcpc.corpus.models import Event, EventKind, SourceRef
from gcpc.corpus.noise import COLLAPSE_MARKER, collapse_install_runs, is_install_line
from gcpc.corpus.render import render_log
from gcpc.judging.spec import ArmSpec, judge_view, redact_run_metadata
from gcpc.judging.view import HARNESS_PREFIX, ViewSettings, judge_input

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"

PIP = ["Collecting numpy", "  Downloading numpy-2.3.2-cp313-cp313-manylinux_2_28_x86_64.whl (16.6 MB)",
       "     \u2501" * 1 + "\u2501" * 39 + " 16.6/16.6 MB 40.1 MB/s eta 0:00:00",
       "Installing collected packages: numpy", "Successfully installed numpy-2.3.2"]


def ev(i: int, kind: EventKind, text: str, tool: str | None = None) -> Event:
    return Event(index=i, kind=kind, text=text, tool=tool, source=SourceRef(path="log", line=i + 1))


def test_noise_regex_lines():
    for line in PIP + ["Get:5 http://ports.ubuntu.com/ubuntu-ports noble/main arm64 Packages [1776 kB]",
                       "Setting up libssl3t64:arm64 (3.0.13-0ubuntu3.5) ...", " + uvicorn==0.35.0",
                       "Resolved 120 packages in 1.20s", "added 57 packages, and audited 58 packages in 3s",
                       "100%|##########| 10/10 [00:01<00:00,  9.52it/s]"]:
        assert is_install_line(line), line
    for line in ["    - numpy==2.3.2", "def install(self):", "Installed the fix; all 12 tests pass", "result = 42", "=" * 30,
                 "test_outputs.py::test_numpy PASSED", "Collecting results..."]:
        assert not is_install_line(line), line


def test_collapse_keeps_short_runs_and_last_line():
    text = "\n".join(["$ pip install numpy", *PIP, "done"])
    c = collapse_install_runs(text, 5)
    assert c.runs == 1 and c.lines == 4
    assert c.text.split("\n") == ["$ pip install numpy", COLLAPSE_MARKER.format(n=4), PIP[-1], "done"]
    short = "\n".join(["x", *PIP[:4], "y"])
    assert collapse_install_runs(short, 5).text == short


def test_harness_setup_dropped_and_counted():
    events = [ev(0, EventKind.SYSTEM, HARNESS_PREFIX + "root@x:/app# source /installed-agent/install-agent.sh\n"
                 + "\n".join(PIP) + "\nINSTALL_SUCCESS"),
              ev(1, EventKind.TOOL_CALL, "pip install numpy", "bash"),
              ev(2, EventKind.TOOL_OUTPUT, "\n".join(PIP + PIP), "bash")]
    shown = judge_input(events, ViewSettings())
    assert shown.cuts["harness_setup"] == {"events": 1, "lines": 6, "install_lines": 5}
    assert shown.cuts["install_collapsed"] == {"events": 1, "runs": 1, "lines": 9}
    assert "INSTALL_SUCCESS" not in shown.log and "[harness setup output dropped: 6 lines" in shown.log
    assert [e["index"] for e in shown.events] == [0, 1, 2]  # indices (what judges cite) never change
    assert shown.events[2]["text"] in shown.log


def test_all_cleaning_off_is_render_log():
    events = [ev(0, EventKind.SYSTEM, HARNESS_PREFIX + "cmd\n" + "\n".join(PIP)),
              ev(1, EventKind.TOOL_OUTPUT, "y" * 9000, "bash")]
    plain = ViewSettings(max_event_chars=4000, drop_harness_setup=False, collapse_install_min_lines=0)
    assert judge_input(events, plain).log == render_log(events, 4000)
    assert judge_view(events, 4000)[0] == render_log(events, 4000)


def test_budget_cuts_longest_first_deterministically():
    events = [ev(0, EventKind.TOOL_CALL, "ls", "bash"), ev(1, EventKind.TOOL_OUTPUT, "a" * 3000, "bash"),
              ev(2, EventKind.TOOL_OUTPUT, "b" * 900, "bash"), ev(3, EventKind.AGENT_MESSAGE, "c" * 2500)]
    view = ViewSettings(max_log_chars=4000)
    shown = judge_input(events, view)
    assert len(shown.log) <= 4000 and shown.cuts["budget"]["over_budget"] is False
    texts = [e["text"] for e in shown.events]
    assert texts[0] == "ls" and texts[2] == "b" * 900  # short events untouched
    cap = shown.cuts["budget"]["cap"]
    assert len(texts[1]) == len(texts[3]) == cap and "chars truncated" in texts[1]
    assert shown.cuts["budget"]["events"] == 2
    assert shown.cuts["budget"]["chars"] == (3000 - cap) + (2500 - cap)
    assert judge_input(events, view) == shown  # deterministic
    # the largest cap that fits: one more character would not
    fixed = len(shown.log) - sum(len(t) for t in texts)
    assert fixed + 2 + 900 + 2 * (cap + 1) > 4000


def test_arm_spec_reads_view_from_params():
    arm = ArmSpec.from_params("gcpc", {"kind": "checklist", "template": "prompts/judging/gcpc.jinja"},
                              {"max_event_chars": 3000, "max_log_chars": 20000, "collapse_install_min_lines": 0})
    assert arm.view == ViewSettings(max_event_chars=3000, max_log_chars=20000, collapse_install_min_lines=0)
    with pytest.raises(ValueError):
        ViewSettings.from_params({"max_log_chars": 10})


@pytest.fixture(scope="module")
def tb1_trajectories():
    cfg = yaml.safe_load((REPO / "conf/data/terminal-bench-1.yaml").read_text(encoding="utf-8"))
    if not (REPO / cfg["root"] / cfg["trials_dirs"][0]).is_dir():
        pytest.skip(f"real data not available at {DATA} (the shared curated-data checkout is absent)")
    return ingest(cfg, REPO).trajectories


@pytest.mark.slow
def test_no_harness_install_lines_in_rendered_tb1(tb1_trajectories):
    """The noise regex over the judge view of every Terminal-Bench 1 trajectory: no line of the
    harness's own installation reaches the judge, and no run of install lines as long as the
    collapse threshold is left in any output."""
    view = ViewSettings()
    dropped = 0
    for traj in tb1_trajectories:
        shown = judge_input(redact_run_metadata(traj).events, view)
        dropped += shown.cuts["harness_setup"]["install_lines"]
        for raw, e in zip(traj.events, shown.events, strict=True):
            lines = e["text"].split("\n")
            if raw.kind == EventKind.SYSTEM and raw.text.startswith(HARNESS_PREFIX):
                assert not any(is_install_line(ln) for ln in lines), (traj.trajectory_id, e["index"])
            if raw.kind not in (EventKind.TOOL_OUTPUT, EventKind.SYSTEM):
                continue  # the agent's own commands and messages are never collapsed
            run = 0
            for ln in lines:
                run = run + 1 if is_install_line(ln) else 0
                assert run < view.collapse_install_min_lines, (traj.trajectory_id, e["index"])
    assert dropped > 100_000  # the harness installs its agent in nearly every trial; all of it is gone


def test_input_cuts_reuse_the_view_just_built():
    """Arms record the cuts of the view they built for the request; reusing them is exact and never shared."""
    from gcpc.judging.view import input_cuts

    events = [ev(0, EventKind.TOOL_OUTPUT, "Collecting numpy\n" * 8 + "x" * 5000)]
    view = ViewSettings(max_event_chars=1000)
    built = judge_input(events, view).cuts
    again = input_cuts(events, view)
    assert again == built and again["install_collapsed"]["runs"] == 1 and again["event_cut"]["events"] == 1
    again["event_cut"]["events"] = 99  # a caller's change stays its own
    assert input_cuts(events, view) == built
    other = ViewSettings(max_event_chars=0)  # another view of the same events is built, not taken from the last
    assert input_cuts(events, other) == judge_input(events, other).cuts != built
    copy_of_events = list(events)
    assert input_cuts(copy_of_events, view) == built


def test_shared_collapse_computes_each_text_once_with_the_same_view(monkeypatch):
    """The cost estimate renders each log once per arm inside `shared_collapse`: the install-run collapse of an
    event text is computed once there, and the view is the one rendered without it (issue 36)."""
    import gcpc.judging.view as view_mod

    events = [ev(0, EventKind.TOOL_CALL, "pip install numpy", "bash"),
              ev(1, EventKind.TOOL_OUTPUT, "\n".join(["$ pip install numpy", *PIP, "done"]), "bash")]
    settings = ViewSettings()
    plain = judge_input(events, settings)
    calls = []
    real = view_mod.collapse_install_runs
    monkeypatch.setattr(view_mod, "collapse_install_runs", lambda text, n: calls.append(text) or real(text, n))
    with view_mod.shared_collapse():
        shown = [judge_input(events, settings) for _ in range(3)]  # three arms
    assert len(calls) == 1
    assert all(s.log == plain.log and s.cuts == plain.cuts and s.events == plain.events for s in shown)
    judge_input(events, settings)  # outside it: computed again, nothing held
    assert len(calls) == 2 and view_mod._COLLAPSED is None
