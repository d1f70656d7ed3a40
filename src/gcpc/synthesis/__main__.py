"""`python -m gcpc.synthesis`: the synthesize stage."""

from gcpc import paths
from gcpc.llm.cli import llm_stage_args, load_llm_params, stage_errors
from gcpc.synthesis.stage import run

if __name__ == "__main__":
    args = llm_stage_args(__doc__)
    with stage_errors():
        checklists = run(load_llm_params(args), paths.INGEST, paths.SYNTHESIZE)
    frozen = sum(c.status == "frozen" for c in checklists)
    print(f"synthesize: {frozen}/{len(checklists)} checklists frozen -> {paths.SYNTHESIZE}")
