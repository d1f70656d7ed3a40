"""Where each stage reads and writes; dvc.yaml declares the same paths as deps and outs."""

from pathlib import Path

PROCESSED = Path("data/processed")
INGEST = PROCESSED / "ingest"
SYNTHESIZE = PROCESSED / "synthesize"
VALIDATE = PROCESSED / "validate"
JUDGE = PROCESSED / "judge"
FINALIZE = PROCESSED / "finalize"
ANALYZE = PROCESSED / "analyze"
AUDIT = PROCESSED / "audit"
REJUDGE = PROCESSED / "rejudge"
CONTROLS = PROCESSED / "controls"
METRICS = Path("metrics")
FIGURES = Path("figures")


def judge_dir(arm: str) -> Path:
    return JUDGE / arm
