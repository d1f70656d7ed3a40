"""`python -m gcpc.synthesis.validate_stage`: the validate stage (gate report)."""

from gcpc import paths
from gcpc.corpus.models import Task
from gcpc.io import read_models, write_json, write_text
from gcpc.params import load_params, stage_args
from gcpc.synthesis.models import Checklist, SynthesisAttempt
from gcpc.synthesis.validate import metrics, report_markdown, validate

if __name__ == "__main__":
    load_params(stage_args(__doc__).params)  # no parameters of its own; checks that params.yaml is readable
    report = validate(
        read_models(paths.INGEST / "tasks.jsonl", Task),
        read_models(paths.SYNTHESIZE / "checklists.jsonl", Checklist),
        read_models(paths.SYNTHESIZE / "attempts.jsonl", SynthesisAttempt),
    )
    write_json(paths.VALIDATE / "gate_report.json", report)
    write_text(paths.VALIDATE / "gate_report.md", report_markdown(report))
    write_json(paths.METRICS / "validate.json", metrics(report))
    print(f"validate: {report['summary']['n_frozen']} frozen checklists, {report['summary']['n_items']} items -> {paths.VALIDATE}")
