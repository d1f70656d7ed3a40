"""Write the ILLUSTRATIVE human-annotation file of the demo corpus (RQ2 input).

These are not judgments by real people. They were written for the gcpc project, by this script,
so that the RQ2 analysis (docs/annotations.md) has an input to run on offline. Ratings follow
each demo trial's scripted behaviour (data/demo/roles.json `kind`: a clean run rates high, an idle
run rates 0) plus seeded per-annotator bias and noise, so they disagree a little, as people do.

Inputs (read only): data/demo/jobs/<job>/<trial>/result.json (trial folders and rewards),
data/demo/roles.json (trial kinds), and for Q3 the frozen checklists
data/processed/synthesize/checklists.jsonl (item ids and checklist hashes; run
`dvc repro synthesize` first). Output: data/demo/annotations/annotations.jsonl.

Deterministic: stdlib only, one seeded generator, sorted iteration. Run from the repository root:

    python data/demo/make_annotations.py [--checklists PATH/TO/checklists.jsonl]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
JOBS = HERE / "jobs"
ROLES = HERE / "roles.json"
CHECKLISTS = HERE.parents[1] / "data" / "processed" / "synthesize" / "checklists.jsonl"
OUT = HERE / "annotations" / "annotations.jsonl"
SEED = 20260207
BENCHMARK = "demo"  # conf/data/demo.yaml's benchmark id
ANNOTATORS = {"A1": 0.0, "A2": -0.6, "A3": 0.5}  # annotator -> rating bias (points on the 0-10 scale)
NOISE = 1.0  # sd of per-rating noise
# Scripted behaviour of a demo trial -> how much progress an annotator would see (0-10).
PROGRESS = {"ok": 9.0, "near": 7.0, "partial": 6.0, "wrong": 5.0, "injection": 5.0, "skip": 4.0,
            "timeout": 3.0, "crash": 2.0, "claims": 1.5, "idle": 0.0}
# Per trial kind: probability that a checklist criterion is in fact satisfied / shown unsatisfied.
CRITERION = {"ok": (0.9, 0.05), "near": (0.7, 0.2), "partial": (0.6, 0.3), "wrong": (0.5, 0.4),
             "injection": (0.5, 0.4), "skip": (0.5, 0.3), "timeout": (0.3, 0.3), "crash": (0.2, 0.5),
             "claims": (0.05, 0.35), "idle": (0.0, 0.3)}
PAIRS_PER_TASK = 6
Q3_TRIALS_PER_TASK = 3
LABEL_AGREEMENT = 0.85  # chance an annotator reports the criterion's underlying state


def trials() -> list[dict]:
    kinds = {}
    if ROLES.exists():
        kinds = {t["path"]: t["kind"] for t in json.loads(ROLES.read_text(encoding="utf-8")).get("trials", [])}
    out = []
    for result in sorted(JOBS.glob("*/*/result.json")):
        folder = result.parent
        rel = f"jobs/{folder.parent.name}/{folder.name}"
        data = json.loads(result.read_text(encoding="utf-8"))
        reward = ((data.get("verifier_result") or {}).get("rewards") or {}).get("reward")
        kind = kinds.get(rel) or ("ok" if reward == 1.0 else "wrong" if reward == 0.0 else "partial")
        out.append({"path": rel, "task": data.get("task_name") or folder.name.split("__")[0], "kind": kind})
    if not out:
        sys.exit(f"{JOBS}: no trial folders with result.json")
    return out


def checklists(path: Path) -> dict[str, dict]:
    if not path.exists():
        sys.exit(f"{path}: not found; run `dvc repro synthesize` first (Q3 labels need the frozen item ids)")
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        if rec.get("benchmark") == BENCHMARK and rec.get("status") == "frozen":
            out[rec["task_id"]] = {"hash": rec["checklist_hash"], "items": [i["item_id"] for i in rec["items"]]}
    return out


def rating(rng: random.Random, base: float, bias: float) -> int:
    return int(min(10, max(0, round(base + bias + rng.gauss(0.0, NOISE)))))


def build(checklists_path: Path = CHECKLISTS) -> list[dict]:
    rng = random.Random(SEED)
    ts = trials()
    cls = checklists(checklists_path)
    records: list[dict] = [{"meta": {
        "illustrative": True,
        "written_for": "gcpc demo corpus",
        "description": ("ILLUSTRATIVE annotations written for the gcpc project by data/demo/make_annotations.py. "
                        "They are NOT judgments by real people and must not be reported as human agreement."),
        "generator": "data/demo/make_annotations.py", "seed": SEED, "annotators": sorted(ANNOTATORS),
        "questions": {"Q1": "progress toward completing the task, 0-10, from the execution log",
                      "Q1b": "progress rating asked again after the annotator has read the task's checklist, 0-10",
                      "Q2": "which of two trajectories of the same task made more progress (a, b or tie)",
                      "Q3": "is this checklist criterion satisfied according to the log (Yes, No, Abstain)"},
    }}]
    base = {t["path"]: PROGRESS[t["kind"]] for t in ts}
    for t in ts:
        for q in ("Q1", "Q1b"):
            for a, bias in ANNOTATORS.items():
                records.append({"question": q, "annotator": a, "trajectory": t["path"],
                                "rating": rating(rng, base[t["path"]], bias)})
    by_task: dict[str, list[dict]] = {}
    for t in ts:
        by_task.setdefault(t["task"], []).append(t)
    for task, group in sorted(by_task.items()):
        combos = [(x, y) for i, x in enumerate(group) for y in group[i + 1:]]
        for x, y in sorted(rng.sample(combos, min(PAIRS_PER_TASK, len(combos))), key=lambda p: (p[0]["path"], p[1]["path"])):
            a, b = (x, y) if rng.random() < 0.5 else (y, x)
            for ann, bias in ANNOTATORS.items():
                ra, rb = rating(rng, base[a["path"]], bias), rating(rng, base[b["path"]], bias)
                records.append({"question": "Q2", "annotator": ann, "task_id": task, "a": a["path"], "b": b["path"],
                                "preferred": "a" if ra > rb else "b" if rb > ra else "tie"})
        cl = cls.get(task)
        if cl is None:
            continue
        for t in sorted(rng.sample(group, min(Q3_TRIALS_PER_TASK, len(group))), key=lambda t: t["path"]):
            p_yes, p_no = CRITERION[t["kind"]]
            for item in cl["items"]:
                u = rng.random()
                state = "Yes" if u < p_yes else "No" if u < p_yes + p_no else "Abstain"
                for ann in ANNOTATORS:
                    label = state if rng.random() < LABEL_AGREEMENT else rng.choice([x for x in ("Yes", "No", "Abstain") if x != state])
                    records.append({"question": "Q3", "annotator": ann, "trajectory": t["path"], "item_id": item,
                                    "label": label, "checklist_hash": cl["hash"]})
    return records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checklists", type=Path, default=CHECKLISTS, help="frozen checklists (default: %(default)s)")
    records = build(parser.parse_args().checklists)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    with OUT.open("w", encoding="utf-8", newline="\n") as fh:
        for rec in records:
            fh.write(json.dumps(rec, sort_keys=True, ensure_ascii=False, separators=(",", ":")) + "\n")
    print(f"wrote {len(records) - 1} illustrative annotation records -> {OUT.relative_to(HERE.parents[1])}")


if __name__ == "__main__":
    main()
