"""A small judge-stage corpus for the fake-server tests: the demo ingested, checklists frozen by the heuristic
generator, and trajectories replicated (each copy's last event marked) until there are enough distinct requests."""

from __future__ import annotations

import copy
from pathlib import Path

from gcpc.io import iter_jsonl, record_outputs, write_jsonl

ROOT = Path(__file__).resolve().parents[1]


def ingest_and_freeze(ingest_dir: Path, synth_dir: Path, data: dict | None = None) -> None:
    """The demo corpus (or `data`, a composed params.yaml's data section: the smoke subset, say) ingested into
    `ingest_dir` and its checklists frozen (heuristic generator) into `synth_dir`."""
    from gcpc.corpus.ingest import run as ingest
    from gcpc.corpus.models import Task
    from gcpc.io import read_models
    from gcpc.params import load_params
    from gcpc.synthesis.generate import SynthesisSettings
    from gcpc.synthesis.stage import synthesize_all

    params = load_params(ROOT / "params.yaml")
    ingest({**(data or params["data"]), "out_dir": str(ingest_dir)}, ROOT)
    tasks = read_models(ingest_dir / "tasks.jsonl", Task)
    settings = SynthesisSettings.from_params({**params.get("synthesis", {}), "prompts_dir": str(ROOT / "prompts")})
    synthesize_all(tasks, {"provider": "heuristic", "model": "gcpc-heuristic-v1", "max_tokens": 4096, "seed": 0, "temperature": 0.0},
                   settings, synth_dir, progress=False)


def frozen_corpus(root: Path) -> Path:
    """`root/ingest` and `root/synth` as `ingest_and_freeze` writes them (the demo, checklists frozen)."""
    ingest_and_freeze(root / "ingest", root / "synth")
    return root


def replicated_corpus(root: Path, at_least: int) -> Path:
    """`root/data/processed/{ingest,synthesize}` with >= `at_least` trajectories (so as many distinct judge requests)."""
    processed = root / "data" / "processed"
    ingest_and_freeze(processed / "ingest", processed / "synthesize")
    trajectories = list(iter_jsonl(processed / "ingest" / "trajectories.jsonl"))
    out = []
    for r in range(-(-at_least // len(trajectories))):
        for t in trajectories:
            t = copy.deepcopy(t)
            if r:
                t["trajectory_id"] += f"~r{r}"
                if t["events"]:
                    t["events"][-1]["text"] += f"\n(replica {r})"
            out.append(t)
    write_jsonl(processed / "ingest" / "trajectories.jsonl", out)
    record_outputs(processed / "ingest", ["trajectories.jsonl"])  # the ingest's manifest says what is there now
    return root
