"""Audit viewer: a static site that shows why each trajectory scored what it did.

`python -m gcpc.report.audit` (the `audit_site` stage) reads pipeline outputs only (ingest, frozen
checklists, every configured arm's judgments and call store, finalize tables) and writes
`reports/audit/`: `index.html` (filterable list of trajectories), `assets/` (one stylesheet, one
script) and `t/<page>.html`, one page per trajectory. A page embeds its data (gzipped JSON in base64 on
trajectory pages: `embed_gzip_json`) and renders log events lazily, so a multi-megabyte log opens at once;
it needs no server (open index.html from disk).

The log is shown exactly as the judges saw it: run metadata redacted and each event cut to
`judging.max_event_chars` (the full event is one click away). Evidence quotes are located with the
evidence gate's whitespace rule, so a highlighted span is the span the gate accepted. The official
outcome and per-test results sit in their own panel, marked as never shown to a judge. Nothing
here changes a score.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import math
import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2
import pandas as pd

from gcpc.errors import ParamsError
from gcpc.corpus.models import EVIDENCE_KINDS, Task, Trajectory
from gcpc.corpus.render import event_header, truncate_middle
from gcpc.io import iter_jsonl, read_models
from gcpc.judging.models import Judgment
from gcpc.judging.spec import redact_run_metadata
from gcpc.paths import FINALIZE, INGEST, JUDGE, SYNTHESIZE
from gcpc.synthesis.models import Checklist

SITE = Path("reports/audit")
TEMPLATES = Path(__file__).parent / "templates"
ASSETS = ("audit.css", "audit.js")
METRIC_COLUMNS = ("gcpc_plain", "gcpc_outcome", "perfect", "evidence_coverage", "zero_evidence", "n_items", "n_yes",
                  "n_no", "n_abstain", "n_downgraded", "holistic_score")


# --------------------------------------------------------------------------- quotes


def find_quote(text: str, quote: str) -> tuple[int, int] | None:
    """(start, end) of `quote` in `text` under the evidence gate's rule (runs of whitespace are equal).

    The gate compares whitespace-normalized strings (gcpc.synthesis.gates.normalize_ws); this finds
    the same match in the original text so it can be highlighted in place.
    """
    words = quote.split()
    if not words:
        return None
    pattern = r"\s+".join(re.escape(w) for w in words)
    m = re.search(pattern, text)
    return (m.start(), m.end()) if m else None


# --------------------------------------------------------------------------- inputs


@dataclass
class AuditInputs:
    """Everything the site shows, read from pipeline outputs."""

    trajectories: list[Trajectory]
    tasks: dict[tuple[str, str], Task]
    checklists: dict[tuple[str, str], Checklist]
    judgments: dict[str, list[Judgment]]           # arm -> judgments
    template_hashes: dict[str, dict[str, str]]     # arm -> request key -> prompt template hash
    metrics: pd.DataFrame                          # finalize metrics.parquet
    labels: pd.DataFrame                           # finalize labels.parquet
    arms: list[str]
    primary_arm: str | None
    max_event_chars: int
    generator: str = "n/a"                         # checklist generator, provider/model (params `generator`)

    def __post_init__(self) -> None:
        # plain per-(trajectory, arm) rows: a pandas row lookup per arm and page was most of this stage's time
        self._judgment = {(arm, j.trajectory_id): j for arm, js in self.judgments.items() for j in js}
        self._metric: dict[tuple[str, str], dict[str, Any]] = {}
        for r in self.metrics.to_dict("records"):
            self._metric.setdefault((r["trajectory_id"], r["arm"]), r)  # the first row, as before
        self._labels: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for r in self.labels.to_dict("records"):
            self._labels.setdefault((r["trajectory_id"], r["arm"]), []).append(r)

    def judgment(self, arm: str, trajectory_id: str) -> Judgment | None:
        return self._judgment.get((arm, trajectory_id))

    def metric_row(self, trajectory_id: str, arm: str) -> dict[str, Any] | None:
        """The trajectory's first metrics row for the arm (finalize writes one)."""
        return self._metric.get((trajectory_id, arm))

    def label_rows(self, trajectory_id: str, arm: str) -> list[dict[str, Any]]:
        """The trajectory's label rows for the arm, in file order."""
        return self._labels.get((trajectory_id, arm), [])


def _template_hashes(calls: Path) -> dict[str, str]:
    """request key -> template hash, from a stage's call store (the prompt hash of the judge call)."""
    if not calls.exists():
        return {}
    out: dict[str, str] = {}
    for rec in iter_jsonl(calls):
        key, req = rec.get("key"), rec.get("request") or {}
        if key and req.get("template_hash"):
            out[key] = req["template_hash"]
    return out


def read_inputs(params: dict[str, Any], *, ingest_dir: Path = INGEST, synth_dir: Path = SYNTHESIZE,
                judge_root: Path = JUDGE, finalize_dir: Path = FINALIZE) -> AuditInputs:
    gen = params.get("generator") or {}
    arms = sorted((params.get("arm") or {}).keys())
    if not arms:
        raise ParamsError("params.yaml: 'arm' configures no judging arm")
    judgments: dict[str, list[Judgment]] = {}
    hashes: dict[str, dict[str, str]] = {}
    for arm in arms:
        path = judge_root / arm / "judgments.jsonl"
        if not path.exists():
            raise FileNotFoundError(f"{path}: judgments for configured arm '{arm}' are missing (run the judge stage)")
        judgments[arm] = read_models(path, Judgment)
        hashes[arm] = _template_hashes(judge_root / arm / "llm_calls.jsonl")
    metrics_path, labels_path = finalize_dir / "metrics.parquet", finalize_dir / "labels.parquet"
    for p in (metrics_path, labels_path):
        if not p.exists():
            raise FileNotFoundError(f"{p}: not found (run the finalize stage first)")
    primary = (params.get("analysis") or {}).get("primary_arm")
    return AuditInputs(
        trajectories=read_models(ingest_dir / "trajectories.jsonl", Trajectory),
        tasks={(t.benchmark, t.task_id): t for t in read_models(ingest_dir / "tasks.jsonl", Task)},
        checklists={(c.benchmark, c.task_id): c for c in read_models(synth_dir / "checklists.jsonl", Checklist)},
        judgments=judgments, template_hashes=hashes,
        metrics=pd.read_parquet(metrics_path), labels=pd.read_parquet(labels_path), arms=arms,
        primary_arm=primary if primary in arms else None,
        max_event_chars=int((params.get("judging") or {}).get("max_event_chars", 4000)),
        generator="/".join(str(gen[k]) for k in ("provider", "model") if gen.get(k)) or "n/a",
    )


# --------------------------------------------------------------------------- page data


def page_name(trajectory_id: str) -> str:
    """A file name per trajectory id: readable, and unique through a short hash of the full id."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", trajectory_id).strip("_")[:80]
    return f"{slug}-{hashlib.sha256(trajectory_id.encode('utf-8')).hexdigest()[:8]}.html"


def _clean(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if hasattr(v, "item"):  # numpy scalar
        return _clean(v.item())
    return v


def _events(traj: Trajectory, max_chars: int) -> list[dict[str, Any]]:
    out = []
    for e in traj.events:
        shown = truncate_middle(e.text, max_chars)
        rec: dict[str, Any] = {"i": e.index, "kind": e.kind.value, "head": event_header(e), "text": shown,
                               "evidence_kind": e.kind in EVIDENCE_KINDS, "marks": [], "full_marks": []}
        if shown != e.text:
            rec["full"] = e.text
        out.append(rec)
    return out


def _locate(events: list[dict[str, Any]], by_index: dict[int, dict[str, Any]], event_index: int, quote: str,
            ref: str) -> str:
    """Register a highlight for one evidence quote; returns where it was found: shown, full or missing."""
    ev = by_index.get(event_index)
    if ev is None:
        return "no such event"
    span = find_quote(ev["text"], quote)
    if span:
        ev["marks"].append([span[0], span[1], ref])
        if "full" in ev:
            full = find_quote(ev["full"], quote)
            if full:
                ev["full_marks"].append([full[0], full[1], ref])
        return "shown"
    if "full" in ev:
        full = find_quote(ev["full"], quote)
        if full:
            ev["full_marks"].append([full[0], full[1], ref])
            return "in the cut part of the event"
    return "not in the event"


def trajectory_page(traj: Trajectory, inp: AuditInputs) -> dict[str, Any]:
    """The data of one trajectory page (JSON-ready)."""
    judged = redact_run_metadata(traj)
    events = _events(judged, inp.max_event_chars)
    by_index = {e["i"]: e for e in events}
    key = (traj.benchmark, traj.task_id)
    task, cl = inp.tasks.get(key), inp.checklists.get(key)
    arms = []
    for arm in inp.arms:
        j = inp.judgment(arm, traj.trajectory_id)
        if j is None:
            arms.append({"arm": arm, "status": "missing", "error": "no judgment for this trajectory in this arm's output"})
            continue
        m = inp.metric_row(traj.trajectory_id, arm)
        metrics = {c: _clean(m[c]) for c in METRIC_COLUMNS if m is not None and c in m}
        outcome_labels = {}
        endpoint = None
        for r in inp.label_rows(traj.trajectory_id, arm):
            if r["route"] == "endpoint":
                endpoint = {"item_id": r["item_id"], "label_outcome": _clean(r["label_outcome"])}
            else:
                outcome_labels[r["item_id"]] = _clean(r["label_outcome"])
        labels = []
        for lab in j.labels:
            evidence = []
            for n, ev in enumerate(lab.evidence):
                ref = f"{arm}|{lab.item_id}|{n}"
                evidence.append({"event_index": ev.event_index, "quote": ev.quote, "ref": ref,
                                 "found": _locate(events, by_index, ev.event_index, ev.quote, ref)})
            labels.append({"item_id": lab.item_id, "text": lab.text, "route": lab.route, "label": lab.label,
                           "raw_label": lab.raw_label, "downgraded": lab.downgraded, "downgrade_reason": lab.downgrade_reason,
                           "reason": lab.reason, "evidence": evidence, "test_refs": lab.test_refs,
                           "label_outcome": outcome_labels.get(lab.item_id), "request_key": lab.request_key})
        arms.append({"arm": arm, "kind": j.kind, "status": j.status, "error": j.error, "provider": j.provider,
                     "model": j.model, "request_key": j.request_key, "evidence_gate": j.evidence_gate,
                     "checklist_hash": j.checklist_hash, "prompt_hash": inp.template_hashes[arm].get(j.request_key or ""),
                     "score": j.score, "rationale": j.rationale, "analysis": j.analysis, "floor": j.floor, "metrics": metrics, "labels": labels,
                     "endpoint": endpoint, "primary": arm == inp.primary_arm})
    checklist = None
    if cl is not None:
        checklist = {"status": cl.status, "failure": cl.failure, "checklist_hash": cl.checklist_hash,
                     "attempts": cl.attempts, "provenance": cl.provenance.model_dump(mode="json"),
                     "items": [{"item_id": i.item_id, "text": i.text, "quote": i.quote, "route": i.route,
                                "test_refs": i.test_refs} for i in cl.items]}
    return {
        "trajectory": {k: getattr(traj, k) for k in ("trajectory_id", "benchmark", "task_id", "harness", "model", "condition",
                                                     "source", "trial", "source_path", "log_format")}
                      | {"log_files": traj.log_files, "notes": traj.notes, "n_events": len(traj.events)},
        "outcome": traj.outcome.model_dump(mode="json") | {"test_results": dict(sorted(traj.test_results.items()))},
        "instruction": task.instruction if task else None,
        "checklist": checklist,
        "arms": arms,
        "events": events,
        "max_event_chars": inp.max_event_chars,
    }


def index_rows(inp: AuditInputs) -> list[dict[str, Any]]:
    """One row per trajectory with every arm's scores, for the index table and its filters."""
    by_arm_traj: dict[tuple[str, str], dict[str, Any]] = {}
    for r in inp.metrics.to_dict("records"):
        by_arm_traj[(str(r["arm"]), str(r["trajectory_id"]))] = {c: _clean(r[c]) for c in METRIC_COLUMNS if c in r}
    status = {(arm, j.trajectory_id): j.status for arm, js in inp.judgments.items() for j in js}
    rows = []
    for t in sorted(inp.trajectories, key=lambda t: t.trajectory_id):
        arms = {}
        for arm in inp.arms:
            m = by_arm_traj.get((arm, t.trajectory_id), {})
            arms[arm] = {"status": status.get((arm, t.trajectory_id), "missing"), "gcpc_plain": m.get("gcpc_plain"),
                         "gcpc_outcome": m.get("gcpc_outcome"), "zero_evidence": bool(m.get("zero_evidence") or False),
                         "n_downgraded": int(m.get("n_downgraded") or 0)}
        rows.append({"id": t.trajectory_id, "page": f"t/{page_name(t.trajectory_id)}", "benchmark": t.benchmark,
                     "task_id": t.task_id, "condition": t.condition, "outcome": t.outcome.status, "n_events": len(t.events),
                     "arms": arms})
    return rows


# --------------------------------------------------------------------------- rendering


def _env() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True,
                             undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    env.filters["embed"] = embed_json
    env.filters["embed_gzip"] = embed_gzip_json
    return env


def embed_json(obj: Any) -> str:
    """JSON safe inside <script type="application/json">: no '<', '>' or '&' survives literally."""
    text = json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return jinja2.utils.markupsafe.Markup(
        text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
        .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def embed_gzip_json(obj: Any) -> str:
    """A page's data as base64 of gzipped JSON (the viewer inflates it with the browser's DecompressionStream).

    Logs are most of a page; compressed, a page takes about a quarter of the bytes (Terminal-Bench 1:
    71 kB per trajectory as JSON, ~16 kB so), which keeps the site proportional to the corpus (issue 29).
    mtime 0 and a fixed level keep the bytes deterministic. Base64 holds no '<', '>' or '&'."""
    raw = json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return jinja2.utils.markupsafe.Markup(base64.b64encode(gzip.compress(raw, compresslevel=9, mtime=0)).decode("ascii"))


def embedded_data(html: str) -> Any:
    """The data a page of the site embeds (either encoding), as the viewer reads it; for tests and tools."""
    m = re.search(r'<script type="application/(json|gzip\+base64)" id="audit-data">(.*?)</script>', html, re.S)
    if m is None:
        raise ValueError("audit page: no #audit-data script")
    text = m.group(2)
    return json.loads(gzip.decompress(base64.b64decode(text)) if m.group(1) == "gzip+base64" else text)


def judges_banner(inp: AuditInputs) -> dict[str, Any]:
    """Who judged, for the top of every page: each arm's provider/model (from its judgments), the checklist
    generator, and the report's "not an LLM" notice where the heuristic provider answered."""
    from gcpc.analysis.common import judges_text
    from gcpc.llm.notice import NOT_AN_LLM, mentions_heuristic

    who = {arm: f"{js[0].provider}/{js[0].model}" for arm, js in sorted(inp.judgments.items()) if js}
    return {"judges": judges_text(who), "generator": inp.generator,
            "not_an_llm": NOT_AN_LLM.replace("`", "") if mentions_heuristic([*who.values(), inp.generator]) else ""}


def build_site(inp: AuditInputs, out_dir: Path = SITE) -> dict[str, Any]:
    """Write the site; returns a small summary (pages written). Deterministic: same inputs, same bytes."""
    if out_dir.exists():
        shutil.rmtree(out_dir)
    (out_dir / "t").mkdir(parents=True)
    (out_dir / "assets").mkdir()
    env = _env()
    for name in ASSETS:
        shutil.copyfile(TEMPLATES / name, out_dir / "assets" / name)
    rows = index_rows(inp)
    tasks = sorted({r["task_id"] for r in rows})
    outcomes = sorted({r["outcome"] for r in rows})
    index = {"rows": rows, "arms": inp.arms, "primary_arm": inp.primary_arm or inp.arms[0], "tasks": tasks,
             "outcomes": outcomes}
    banner = judges_banner(inp)
    _write(out_dir / "index.html", env.get_template("audit_index.html.jinja").render(data=index, n=len(rows), banner=banner))
    page_tpl = env.get_template("audit_trajectory.html.jinja")
    seen: set[str] = set()
    for t in sorted(inp.trajectories, key=lambda t: t.trajectory_id):
        name = page_name(t.trajectory_id)
        if name in seen:
            raise ValueError(f"audit site: two trajectories map to page {name}")
        seen.add(name)
        page = trajectory_page(t, inp)
        _write(out_dir / "t" / name, page_tpl.render(data=page, title=t.trajectory_id, banner=banner))
    return {"pages": len(seen), "index": str(out_dir / "index.html")}


def _write(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8", newline="\n")


def run(params: dict[str, Any], out_dir: Path = SITE) -> dict[str, Any]:
    return build_site(read_inputs(params), out_dir)


def main() -> int:
    from gcpc.params import load_params, stage_args

    args = stage_args("Audit viewer: static site under reports/audit/ (one page per trajectory)")
    try:
        summary = run(load_params(args.params))
    except FileNotFoundError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    print(f"audit site: {summary['pages']} trajectory pages -> {summary['index']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
