"""`python -m gcpc.corpus`: the ingest stage, configured by params.yaml section `data`."""

from pathlib import Path

from gcpc.corpus.ingest import run
from gcpc.params import load_params, section, stage_args


def main() -> None:
    args = stage_args("Ingest Harbor-format tasks and trials into canonical JSONL.")
    params = load_params(args.params)
    pop = run(section(params, "data"), Path.cwd(), workers=(params.get("ingest") or {}).get("workers"))
    print(f"ingest: {pop['n_tasks']} tasks, {pop['n_trajectories']} trajectories, {pop['n_excluded']} excluded")


if __name__ == "__main__":
    main()
