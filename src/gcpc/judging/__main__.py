"""`python -m gcpc.judging ARM`: the judge stage for one arm."""

import argparse
import sys

from gcpc import paths
from gcpc.io import iter_jsonl
from gcpc.judging.stage import run
from gcpc.llm.budget import FailureBudgetExceeded
from gcpc.params import load_params, parse_args

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("arm")
    parser.add_argument("--params", default="params.yaml")
    args = parse_args(parser)
    try:
        run(load_params(args.params), args.arm, paths.INGEST, paths.SYNTHESIZE, paths.judge_dir(args.arm), collect=False)
    except FailureBudgetExceeded as exc:
        sys.exit(f"error: {exc}")
    status = [j["status"] for j in iter_jsonl(paths.judge_dir(args.arm) / "judgments.jsonl")]
    print(f"judge[{args.arm}]: {status.count('ok')}/{len(status)} trajectories judged -> {paths.judge_dir(args.arm)}")
