"""SWE-bench Verified ingest benchmark: the shared set (`conf/data/swe-bench-verified.yaml`) read end to end.

    python bench/bench_swe_bench_ingest.py                    # 3 repeats -> bench/results/swe_bench_ingest.json
    python bench/bench_swe_bench_ingest.py --repeat 1 --out /tmp/swe.json
    python bench/bench_swe_bench_ingest.py --limit 5 --out /tmp/smoke.json   # a smoke-size run (tests do this)

The whole corpus (instances.jsonl, every `.traj.json` of the configured runs, every report.json,
de-duplication) is ingested `--repeat` times in this process; the median wall time gives
trajectories/s and MB/s over the bytes of the trajectory files (MB = 10^6 bytes). Issue 26's target:
the 246 trajectories in under 30 s on the project's 2-core machine. The load average before and after is
recorded, since the machine is shared. `--limit N` reads only the first N instances (sorted by id), through a
temporary corpus of hard links (copies where links fail) outside the project, so a test can run the script quickly.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import yaml

from gcpc.corpus.ingest import ingest

REPO = Path(__file__).resolve().parents[1]
CONFIG = "conf/data/swe-bench-verified.yaml"
TARGET_S = 30.0
"""Issue 26: ingest of the shared SWE-bench Verified set in under 30 s."""


def _limited(cfg: dict, n: int, tmp: Path) -> dict:
    """The config over a corpus of the first n instances (sorted), linked (or copied) into `tmp`."""
    src = REPO / cfg["root"]
    ids = sorted(json.loads(line)["instance_id"] for line in (src / cfg["tasks_file"]).read_text(encoding="utf-8").splitlines()
                 if line.strip())[:n]
    keep = set(ids)
    (tmp / cfg["tasks_file"]).write_text("".join(line + "\n" for line in (src / cfg["tasks_file"]).read_text(encoding="utf-8").splitlines()
                                                 if line.strip() and json.loads(line)["instance_id"] in keep), encoding="utf-8")
    for d in [*cfg["trials_dirs"], *cfg.get("reports_dirs", [])]:
        for path in sorted((src / d).rglob("*")):
            rel = path.relative_to(src)
            if path.is_file() and any(part in keep for part in rel.parts) and not (tmp / rel).exists():
                (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
                try:
                    os.link(path, tmp / rel)
                except OSError:
                    shutil.copyfile(path, tmp / rel)
    return {**cfg, "root": str(tmp)}


def run(cfg: dict, repeat: int) -> dict:
    root = REPO / cfg["root"]
    traj_bytes = sum(p.stat().st_size for d in cfg["trials_dirs"] for p in (root / d).rglob("*.traj.json"))
    load_before = [round(x, 2) for x in os.getloadavg()]
    times: list[float] = []
    result = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = ingest(cfg, REPO)
        times.append(time.perf_counter() - t0)
    assert result is not None
    wall = statistics.median(times)
    outcomes = [t.outcome.status for t in result.trajectories]
    return {
        "corpus": CONFIG,
        "repeats": repeat,
        "wall_s_median": round(wall, 3),
        "wall_s_all": [round(t, 3) for t in times],
        "target_wall_s": TARGET_S,
        "meets_target": wall < TARGET_S,
        "tasks": len(result.tasks),
        "trajectories": len(result.trajectories),
        "pass": outcomes.count("PASS"),
        "fail": outcomes.count("FAIL"),
        "other": outcomes.count("other"),
        "exclusions": len(result.exclusions),
        "events": sum(len(t.events) for t in result.trajectories),
        "trajectory_mb": round(traj_bytes / 1e6, 2),
        "trajectories_per_s": round(len(result.trajectories) / wall, 1),
        "trajectory_mb_per_s": round(traj_bytes / 1e6 / wall, 2),
        "load_average_before": load_before,
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--limit", type=int, default=None, help="only the first N instances (smoke size)")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "swe_bench_ingest.json")
    args = parser.parse_args(argv)
    os.chdir(REPO)
    cfg = yaml.safe_load((REPO / CONFIG).read_text(encoding="utf-8"))
    if not (REPO / cfg["root"]).is_dir():
        print(f"error: {REPO / cfg['root']} not found (the shared data, see ../shared/data/swe-bench-verified/README.md)",
              file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        out = run(_limited(cfg, args.limit, Path(tmp)) if args.limit else cfg, args.repeat)
    out |= {"limit": args.limit, "python": platform.python_version(), "cpus": os.cpu_count()}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    print(json.dumps(out, indent=2, sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
