"""`python -m gcpc.judging ARM`: the judge stage for one arm."""

import argparse
import os
import sys

from gcpc import paths
from gcpc.judging.stage import judge_stage
from gcpc.llm.budget import FailureBudgetExceeded
from gcpc.llm.cli import add_llm_arguments, load_llm_params, stage_errors
from gcpc.params import load_params, parse_args

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    arms = "see params.yaml `arm`"
    if {"-h", "--help"} & set(sys.argv[1:]):  # the configured arms, for --help only: a run reads just its own arm
        try:
            arms = ", ".join(sorted(load_params("params.yaml").get("arm") or {})) or "none configured"
        except (OSError, ValueError):
            pass
    parser.add_argument("arm", help=f"the arm to judge, one of the arm set in params.yaml ({arms})")
    parser.add_argument("--params", default="params.yaml", help="composed parameters (default: params.yaml)")
    args = parse_args(add_llm_arguments(parser))
    try:
        with stage_errors():
            counts = judge_stage(load_llm_params(args), args.arm, paths.INGEST, paths.SYNTHESIZE, paths.judge_dir(args.arm))
    except FailureBudgetExceeded as exc:
        sys.exit(f"error: {exc}")
    except ValueError as exc:  # an input that is not what its stage wrote (gcpc.io stage manifest), a bad record
        if os.environ.get("GCPC_DEBUG") == "1":
            raise
        sys.exit(f"error: {exc}")
    print(f"judge[{args.arm}]: {counts.ok}/{counts.written} trajectories judged -> {paths.judge_dir(args.arm)}")
