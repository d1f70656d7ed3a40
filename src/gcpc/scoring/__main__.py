"""`python -m gcpc.scoring`: the finalize stage (official-outcome step + metrics table)."""

from gcpc import paths
from gcpc.params import load_params, stage_args
from gcpc.scoring.finalize import run

if __name__ == "__main__":
    metrics = run(load_params(stage_args(__doc__).params), paths.INGEST, paths.JUDGE, paths.FINALIZE, paths.METRICS / "finalize.json")
    print(f"finalize: {len(metrics)} (trajectory, arm) rows -> {paths.FINALIZE}")
