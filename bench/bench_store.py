"""Bytes of the judge call stores against the raw agent logs they judge, per arm.

    dvc repro -s judge && python bench/bench_store.py    # demo -> bench/results/store_demo.json
    python bench/bench_store.py --processed PATH --out FILE

Counts every `llm_calls*.jsonl` file (records and `.blobs.jsonl`) under data/processed/judge/<arm>/,
the distinct request keys per arm and how many of them an earlier arm already holds (request keys
leave out `purpose`, so such a request is answered from the shared call cache: no new call), and
the raw bytes of the agent logs the trajectories were read from (their `size.raw_bytes`).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from gcpc.io import iter_jsonl
from gcpc.llm.store import read_call_records

REPO = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--processed", type=Path, default=REPO / "data" / "processed")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "store_demo.json")
    args = parser.parse_args(argv)
    raw = sum((t.get("size") or {}).get("raw_bytes", 0) for t in iter_jsonl(args.processed / "ingest" / "trajectories.jsonl"))
    arms: dict[str, dict] = {}
    seen: set[str] = set()
    for d in sorted(p for p in (args.processed / "judge").iterdir() if p.is_dir()):
        files = sorted(d.glob("llm_calls*.jsonl"))
        keys = {r["key"] for r in read_call_records(d / "llm_calls.jsonl")} if (d / "llm_calls.jsonl").exists() else set()
        arms[d.name] = {"bytes": sum(f.stat().st_size for f in files), "files": [f.name for f in files],
                        "requests": len(keys), "requests_already_held_by_an_earlier_arm": len(keys & seen)}
        seen |= keys
    total = sum(a["bytes"] for a in arms.values())
    result = {"command": "python bench/bench_store.py", "raw_agent_log_bytes": raw, "store_bytes_total": total,
              "store_over_raw": round(total / raw, 3) if raw else None, "arms": arms}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    print(json.dumps({k: v for k, v in result.items() if k != "arms"}, indent=2))
    for name, a in arms.items():
        print(f"{name:14s} {a['bytes']:>10d} bytes {a['requests']:5d} requests, {a['requests_already_held_by_an_earlier_arm']} shared")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
