"""`python -m gcpc.synthesis`: the synthesize stage."""

from gcpc import paths
from gcpc.params import load_params, stage_args
from gcpc.synthesis.stage import run

if __name__ == "__main__":
    args = stage_args(__doc__)
    checklists = run(load_params(args.params), paths.INGEST, paths.SYNTHESIZE)
    frozen = sum(c.status == "frozen" for c in checklists)
    print(f"synthesize: {frozen}/{len(checklists)} checklists frozen -> {paths.SYNTHESIZE}")
