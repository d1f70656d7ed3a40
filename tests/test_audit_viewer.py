"""Audit viewer: quote location matches the evidence gate, pages use the pipeline's ids, output is
deterministic and reads pipeline outputs without changing them. tests/test_browser.py clicks through it."""

from __future__ import annotations

import hashlib
import json
import random
import re
from pathlib import Path

import pytest

from gcpc.corpus.models import Trajectory
from gcpc.io import read_models
from gcpc.report.audit import build_site, embed_json, embedded_data, find_quote, page_name, read_inputs, trajectory_page
from gcpc.synthesis.gates import normalize_ws


@pytest.fixture(scope="module")
def demo(demo_pipeline):
    return demo_pipeline


def _inputs(work: Path, params: dict):
    p = work / "data/processed"
    return read_inputs(params, ingest_dir=p / "ingest", synth_dir=p / "synthesize", judge_root=p / "judge",
                       finalize_dir=p / "finalize")


def _embedded(page: Path) -> dict:
    return embedded_data(page.read_text(encoding="utf-8"))


def test_find_quote_agrees_with_the_evidence_gate():
    rng = random.Random(7)
    words = ["alpha", "beta", "x=1", "/root/out.csv", "42", "β", "a.b"]
    for _ in range(2000):
        text = "".join(rng.choice(words) + rng.choice([" ", "  ", "\n", "\t", "", " \n "]) for _ in range(rng.randint(0, 12)))
        start, end = sorted(rng.sample(range(len(text) + 1), 2)) if len(text) > 1 else (0, len(text))
        quote = text[start:end]
        if rng.random() < 0.3:
            quote = quote.replace(" ", "\n  ")
        if rng.random() < 0.1:
            quote += " zzz"
        gate = bool(quote.strip()) and normalize_ws(quote) in normalize_ws(text)
        span = find_quote(text, quote)
        assert (span is not None) == gate, (text, quote)
        if span:
            assert normalize_ws(text[span[0]:span[1]]) == normalize_ws(quote)


def test_embedded_json_cannot_close_its_script_tag():
    obj = {"text": "</script><script>alert(1)</script> & <!-- \u2028"}
    out = str(embed_json(obj))
    assert "<" not in out and ">" not in out and "&" not in out
    assert json.loads(out) == obj


def test_site_has_one_page_per_trajectory_with_pipeline_ids(demo, tmp_path):
    work, params = demo
    inp = _inputs(work, params)
    summary = build_site(inp, tmp_path / "site")
    trajs = read_models(work / "data/processed/ingest/trajectories.jsonl", Trajectory)
    assert summary["pages"] == len(trajs)
    files = sorted((tmp_path / "site" / "t").iterdir())
    assert len(files) == len(trajs)
    index = _embedded(tmp_path / "site" / "index.html")
    assert [r["id"] for r in index["rows"]] == sorted(t.trajectory_id for t in trajs)
    assert index["arms"] == sorted(params["arm"])
    for r in index["rows"]:
        page = _embedded(tmp_path / "site" / r["page"])
        assert page["trajectory"]["trajectory_id"] == r["id"]
        assert [a["arm"] for a in page["arms"]] == index["arms"]
    # file count stays small: index, two assets, one page per trajectory
    assert sum(1 for p in (tmp_path / "site").rglob("*") if p.is_file()) == len(trajs) + 3


def test_every_accepted_quote_is_highlighted_and_downgrades_keep_their_reason(demo):
    work, params = demo
    inp = _inputs(work, params)
    n_marks = n_down = 0
    for traj in inp.trajectories:
        page = trajectory_page(traj, inp)
        marks = {m[2] for e in page["events"] for m in e["marks"] + e["full_marks"]}
        events = {e["i"]: e for e in page["events"]}
        for arm in page["arms"]:
            if arm["status"] != "ok":
                continue
            for lab in arm["labels"]:
                accepted = arm["evidence_gate"] and lab["label"] != "Abstain" and not lab["downgraded"]
                for ev in lab["evidence"]:
                    if accepted:
                        assert ev["found"] in ("shown", "in the cut part of the event"), (traj.trajectory_id, arm["arm"], ev)
                        assert ev["ref"] in marks
                        e = events[ev["event_index"]]
                        s, t, _ = next(m for m in e["marks"] + e["full_marks"] if m[2] == ev["ref"])
                        text = e["text"] if ev["found"] == "shown" else e["full"]
                        assert normalize_ws(text[s:t]) == normalize_ws(ev["quote"])
                        n_marks += 1
                if lab["downgraded"]:
                    assert lab["downgrade_reason"] and lab["raw_label"] != lab["label"] == "Abstain"
                    if "quote not found" in lab["downgrade_reason"]:
                        assert any(ev["found"] != "shown" for ev in lab["evidence"])
                    n_down += 1
    assert n_marks > 50


def test_a_gate_downgrade_is_shown_with_its_reason_and_unfound_quote(demo):
    """The heuristic judge cites only real quotes, so a downgrade is made here with the real gate."""
    from dataclasses import replace

    from gcpc.judging.evidence import gate_verdicts
    from gcpc.llm.schemas import Evidence, ItemVerdict

    work, params = demo
    inp = _inputs(work, params)
    arm = next(a for a in inp.arms if params["arm"][a].get("kind") == "checklist" and params["arm"][a].get("evidence_gate", True))
    j = next(j for j in inp.judgments[arm] if j.status == "ok" and j.labels)
    traj = next(t for t in inp.trajectories if t.trajectory_id == j.trajectory_id)
    out_event = next(e for e in traj.events if e.kind.value == "tool_output")
    lab = j.labels[0]
    bad = ItemVerdict(item_id=lab.item_id, label="Yes", reason="made up", evidence=[Evidence(event_index=out_event.index, quote="no such text 1234")])
    gated = gate_verdicts([bad], traj.events, routes={lab.item_id: lab.route}, test_refs={lab.item_id: lab.test_refs})[0]
    assert gated.downgraded
    changed = j.model_copy(update={"labels": [gated, *j.labels[1:]]})
    inp2 = replace(inp, judgments={**inp.judgments, arm: [changed if x is j else x for x in inp.judgments[arm]]})
    page = trajectory_page(traj, inp2)
    shown = next(a for a in page["arms"] if a["arm"] == arm)["labels"][0]
    assert shown["downgraded"] and shown["raw_label"] == "Yes" and shown["label"] == "Abstain"
    assert shown["downgrade_reason"] == f"quote not found in event [{out_event.index}]"
    assert shown["evidence"][0]["found"] == "not in the event"


def test_outcome_and_per_test_results_are_kept_apart_from_the_judge_view(demo):
    work, params = demo
    inp = _inputs(work, params)
    traj = next(t for t in inp.trajectories if t.outcome.status == "FAIL" and t.test_results)
    page = trajectory_page(traj, inp)
    assert page["outcome"]["status"] == "FAIL" and page["outcome"]["test_results"] == dict(sorted(traj.test_results.items()))
    # the log part is what judges saw: headers and (cut) texts exactly as the judge-visible rendering
    from gcpc.corpus.render import render_log
    from gcpc.judging.spec import redact_run_metadata

    shown = "\n\n".join(f"{e['head']}\n{e['text']}" for e in page["events"]) + "\n"
    assert shown == render_log(redact_run_metadata(traj).events, inp.max_event_chars)


def test_site_is_deterministic_and_changes_no_pipeline_output(demo, tmp_path):
    work, params = demo
    processed = work / "data/processed"

    def digest(root: Path) -> dict[str, str]:
        return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*")) if p.is_file()}

    before = digest(processed)
    build_site(_inputs(work, params), tmp_path / "a")
    build_site(_inputs(work, params), tmp_path / "b")
    assert digest(tmp_path / "a") == digest(tmp_path / "b")
    assert digest(processed) == before


def test_page_names_are_unique_and_safe():
    ids = ["skillsbench/with/x__1", "skillsbench_with_x__1", "a/b", "a_b", "ü/ß"]
    names = [page_name(i) for i in ids]
    assert len(set(names)) == len(names)
    assert all(re.fullmatch(r"[A-Za-z0-9._-]+\.html", n) for n in names)


def test_missing_inputs_are_named(demo, tmp_path):
    work, params = demo
    with pytest.raises(FileNotFoundError, match="judgments for configured arm 'nope'"):
        read_inputs(params | {"arm": {"nope": {}}}, judge_root=work / "data/processed/judge")
    with pytest.raises(FileNotFoundError, match="metrics.parquet"):
        p = work / "data/processed"
        read_inputs(params, ingest_dir=p / "ingest", synth_dir=p / "synthesize", judge_root=p / "judge", finalize_dir=tmp_path)


def test_every_page_names_its_judges_and_floor_arms_show_their_feature(demo, tmp_path):
    """Issue 28: who judged at the top of every page, "Not an LLM" for the heuristic provider, and a floor
    arm's feature values (it has no questions or verdicts) in the page data."""
    work, params = demo
    build_site(_inputs(work, params), tmp_path / "site")
    pages = [tmp_path / "site" / "index.html", *sorted((tmp_path / "site" / "t").iterdir())]
    for page in pages:
        top = page.read_text(encoding="utf-8").split("<h1", 1)[0]
        assert '<div id="judges"' in top and "heuristic/gcpc-heuristic-v1" in top, page.name
        assert "<b>Not an LLM.</b>" in top and "not findings about LLM judges" in top, page.name
    floors = [a for a in _embedded(pages[1])["arms"] if a.get("kind") == "floor"]
    if not floors:
        pytest.skip("the composed arm set has no floor arm")
    for a in floors:
        assert a["labels"] == [] and a["model"].startswith("floor:")
        assert a["floor"] and "log_chars" in a["floor"] and a["score"] is not None


def test_trajectory_pages_embed_gzipped_json_that_round_trips_deterministically():
    from gcpc.report.audit import embed_gzip_json

    obj = {"events": [{"text": "<script>alert(1)</script> & \u2028 ünï " * 50}], "n": 3}
    a, b = str(embed_gzip_json(obj)), str(embed_gzip_json(obj))
    assert a == b and not set(a) & set("<>&\"'")
    html = f'<script type="application/gzip+base64" id="audit-data">{a}</script>'
    assert embedded_data(html) == obj
    assert len(a) < len(json.dumps(obj)) / 4


def test_tick_analysis_is_shown_before_its_questions(demo, tmp_path):
    """Issue 35, item 3: the TICK generator's analysis is in each TICK arm's page data and the page shows it
    above the questions."""
    work, params = demo
    build_site(_inputs(work, params), tmp_path / "site")
    page = sorted((tmp_path / "site" / "t").iterdir())[0]
    ticks = [a for a in _embedded(page)["arms"] if a.get("kind") == "tick" and a["status"] == "ok"]
    assert ticks, "the composed arm set has no TICK arm"
    for a in ticks:
        assert a["analysis"].startswith("Heuristic analysis (rule-based, not an LLM):")
    js = (Path(__file__).resolve().parents[1] / "src/gcpc/report/templates/audit.js").read_text(encoding="utf-8")
    assert js.index("Analysis (before the questions): ") < js.index('table(["question", "verdict"]')
