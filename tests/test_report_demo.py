"""Every analysis stage and the report on the demo corpus, in a temporary working directory.

The pipeline up to finalize is built through the library functions its stages call (heuristic
provider, every arm of conf/arm/all.yaml, per-test propagation on; ingest, checklists and judgments are the
session's demo pipeline's, tests/conftest.py, where its params match); then the stage entry points of
this package run exactly as `dvc repro` runs them (cwd = repository root, params.yaml). Checks:
every table and figure the report lists exists and is a valid non-empty file, the report links
them all and names provider and model, results are finite and deterministic, and the notebook
runs on the outputs.
"""

from __future__ import annotations

import json
import math
import os
import sys
from pathlib import Path

import matplotlib.image as mpimg
import pytest
import yaml
from hydra import compose, initialize_config_dir
from demo_outputs import judge_through_finalize
from figure_text import install_recorder
from omegaconf import OmegaConf

from gcpc.analysis.common import DEFAULTS, resolve_analysis
from gcpc.experiment import register_resolvers

ROOT = Path(__file__).resolve().parents[1]

STAGES = ("gcpc.analysis.__main__", "gcpc.report.__main__", "gcpc.analysis.rejudge", "gcpc.analysis.controls",
          "gcpc.annotate.illustrative", "gcpc.analysis.rq2", "gcpc.analysis.rq3", "gcpc.analysis.rq4", "gcpc.analysis.rq5", "gcpc.analysis.floors",
          "gcpc.analysis.item_validity", "gcpc.report.build")


def _compose(overrides: list[str]) -> dict:
    register_resolvers()  # what hydra_plugins/gcpc_resolvers does inside `dvc exp run`
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base=None):
        return OmegaConf.to_container(compose(config_name="config", overrides=overrides), resolve=True)


def _run_stage(module: str) -> None:
    import importlib

    mod = importlib.import_module(module)
    argv = sys.argv
    sys.argv = [module]
    try:
        assert mod.main() in (0, None), module
    finally:
        sys.argv = argv


def _finalize_from_shared(shared: tuple[Path, dict], params: dict) -> bool:
    """Ingest, checklists and judgments of the session's demo pipeline (tests/conftest.py), finalized here with these
    params: the stages up to the judge read no `scoring` or `analysis` key, so where every other section is the same
    their outputs are these params' outputs. False (nothing copied) where another section differs."""
    import shutil

    from gcpc.scoring.finalize import run as finalize_run

    src, shared_params = shared
    if any(params.get(k) != shared_params.get(k) for k in set(params) | set(shared_params) if k not in ("scoring", "analysis")):
        return False
    for stage in ("ingest", "synthesize", "judge"):
        shutil.copytree(src / "data" / "processed" / stage, Path("data/processed") / stage)
    out = Path("data/processed")
    finalize_run(params, out / "ingest", out / "judge", out / "finalize", Path("metrics/finalize.json"))
    return True


@pytest.fixture(scope="module")
def demo(tmp_path_factory, demo_pipeline):
    work = tmp_path_factory.mktemp("repo")
    (work / "data").mkdir()
    os.symlink(ROOT / "data" / "demo", work / "data" / "demo")
    os.symlink(ROOT / "prompts", work / "prompts")
    composed = _compose(["arm=all"])
    base = yaml.safe_load((ROOT / "params.yaml").read_text())
    analysis = composed["analysis"]
    analysis["bootstrap"]["n_resamples"] = 200
    params = base | {"arm": composed["arm"], "analysis": analysis,
                     "scoring": (base.get("scoring") or {}) | {"per_test_propagation": True}}
    cwd = Path.cwd()
    os.chdir(work)
    try:
        (work / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
        if not _finalize_from_shared(demo_pipeline, params):
            judge_through_finalize(params)
        with pytest.MonkeyPatch.context() as mp:
            install_recorder(mp, work / "figure_text")  # every PNG's text layout, for test_figure_text_*
            for module in STAGES:
                _run_stage(module)
        yield work
    finally:
        os.chdir(cwd)


def test_conf_defaults_equal_code_defaults():
    params = _compose([])
    derived = resolve_analysis({}, params["arm"])  # conf derives the analysed arms from the arm set, as the code does
    assert params["analysis"] == {k: derived[k] if k in ("primary_arm", "rejudge", "controls") else v for k, v in DEFAULTS.items()}
    assert resolve_analysis(params["analysis"], params["arm"]) == derived


def test_every_listed_table_and_figure_is_valid(demo):
    from gcpc.report.build import listed_outputs

    outputs = listed_outputs()
    assert len([p for p in outputs if p.suffix == ".png"]) == 7
    for rel in outputs:
        path = demo / rel
        assert path.exists() and path.stat().st_size > 0, rel
        if path.suffix == ".png":
            img = mpimg.imread(path)
            assert img.ndim == 3 and img.shape[0] > 200 and img.shape[1] > 200, rel
            assert float(img[..., :3].std()) > 0.01, f"{rel} is blank"
        elif path.suffix == ".pdf":
            data = path.read_bytes()
            assert data.startswith(b"%PDF") and b"%%EOF" in data[-64:] and len(data) > 2000, rel
        else:
            assert "|" in path.read_text(encoding="utf-8") or r"\begin{tabular}" in path.read_text(encoding="utf-8")
        if path.suffix == ".md":
            tex = path.with_suffix(".tex").read_text(encoding="utf-8")
            assert tex.startswith(r"\begin{tabular}") and tex.rstrip().endswith(r"\end{tabular}"), rel


def test_figure_text_stays_on_the_canvas_and_apart(demo):
    """Every figure the report lists, as its stage drew it: no text artist's extent leaves the canvas or
    overlaps another text artist, and no legend covers its axes' data (tests/figure_text.py)."""
    from gcpc.report.build import listed_outputs

    pngs = sorted(p.stem for p in listed_outputs() if p.suffix == ".png")
    recorded = {f.stem: json.loads(f.read_text(encoding="utf-8")) for f in (demo / "figure_text").glob("*.json")}
    assert sorted(recorded) == pngs
    problems = [f"{name}.png: {line}" for name in pngs for line in recorded[name]]
    assert not problems, "\n".join(problems)


def test_every_figure_of_a_non_llm_judge_says_so(demo):
    """Issue 48, item 4: every figure the demo's heuristic judge made carries "(not an LLM)" in its rendered text (the
    PDF is the same Figure saved again: gcpc.analysis.figures.save_figure), and a retest noise floor of a
    deterministic judge says it is zero by construction."""
    from gcpc.report.build import listed_outputs

    words = {f.stem: f.read_text(encoding="utf-8") for f in (demo / "figure_text" / "words").glob("*.txt")}
    pngs = sorted(p.stem for p in listed_outputs() if p.suffix == ".png")
    assert sorted(words) == pngs
    unlabelled = [name for name in pngs if "(not an LLM)" not in words[name]]
    assert not unlabelled, f"figures of the heuristic judge without '(not an LLM)': {unlabelled}"
    floors = [line for line in words["fig5_skill_deltas"].splitlines() if line.startswith("retest |Δ| p95")]
    assert floors and all("by construction" in line for line in floors), floors


def test_report_links_everything_and_names_provenance(demo):
    from gcpc.report.build import listed_outputs

    text = (demo / "figures" / "report.md").read_text(encoding="utf-8")
    for rel in listed_outputs():
        assert f"({rel.name})" in text, f"report does not link {rel.name}"
    assert text.count("![") == 7
    assert "heuristic/gcpc-heuristic-v1" in text and "Checklist generator: heuristic/gcpc-heuristic-v1" in text
    assert "Illustrative annotations written for this project" in text
    assert "**Not an LLM.**" in text and "by construction" in text
    for section in ("## RQ1", "## RQ2", "## RQ3", "## RQ4", "## RQ5"):
        assert section in text
    rq2_section = text[text.index("## RQ2"):text.index("## RQ3")]
    assert " Q3 records; 0 stale (" in rq2_section and "Panel C" in rq2_section


def test_results_are_finite_json_and_say_what_they_used(demo):
    results = {}
    for name in ("rq1", "rq2", "rq3", "rq4", "rq5"):
        raw = (demo / "data/processed/analyze" / f"{name}.json").read_text()
        results[name] = json.loads(raw)
        json.dumps(results[name], allow_nan=False)
    for f in sorted((demo / "metrics").glob("rq*.json")):
        def walk(o):
            if isinstance(o, dict):
                for v in o.values():
                    yield from walk(v)
            elif isinstance(o, list):
                for v in o:
                    yield from walk(v)
            elif isinstance(o, float):
                yield o
        assert all(math.isfinite(v) for v in walk(json.loads(f.read_text()))), f.name
        assert f.read_text().isascii(), f"{f.name}: metric names must be ASCII (dvc exp show columns)"
    rq1 = results["rq1"]
    ref = rq1["reference"]
    # equal information (§4.1): plain GCPC against every outcome-blind arm, Holistic first; never an outcome-using score
    assert ref["available"] and {d["score"] for d in ref["deltas"]} == {"gcpc_plain"}
    assert [d["reference_arm"] for d in ref["deltas"]] == ["holistic", "generic", "tick", "tick_adapted"]
    assert ref["deltas"][0]["headline"] and ref["deltas"][0]["b"] == "holistic:gcpc_plain"
    assert rq1["zero_evidence_excluded"] and all(r["reason"] for r in rq1["zero_evidence_excluded"])
    assert all(0.0 <= d["share_positive"] <= 1.0 for d in ref["deltas"] if d.get("delta") is not None)
    assert "gcpc_per_test" in rq1["config"]["scores"]  # the per-test propagation variant is analysed when present
    assert rq1["arms"]["holistic"]["gcpc_outcome"]["skipped"].startswith("this arm produces no")
    rq2 = results["rq2"]
    assert rq2["available"] and rq2["annotations"]["illustrative"] and rq2["annotations"]["n_excluded"] == 0
    # regenerated from the frozen checklists: Q3 on the checklists in use, Panel C shown (issue 45 item 4)
    assert rq2["annotations"]["q3_currency"] | {"n_records": 0} == {
        "arm": "gcpc", "n_records": 0, "n_stale": 0, "n_without_hash": 0, "n_unknown_items": 0, "checked": True}
    assert rq2["alpha"]["Q3"]["alpha"] is not None and any(e.get("n_units") for e in rq2["item_agreement"])
    rq3 = results["rq3"]
    assert rq3["pairing"]["mode"] == "explicit" and rq3["pairing"]["source"].endswith("roles.json")
    assert rq3["pairing"]["n_pairs"] >= 12 and sum(rq3["transition_counts"].values()) == rq3["pairing"]["n_pairs"]
    # the demo's duplicate trials were removed at ingest: their pairs are excluded with that reason
    assert all("excluded at ingest" in e["reason"] or "non-binary" in e["reason"] for e in rq3["exclusions"])
    assert rq3["noise_floor"]["available"] and "by construction" in rq3["noise_floor"]["note"]
    rq4 = results["rq4"]
    assert set(rq4["panel_b"]["gcpc"]) == {"endpoint on · propagation on", "endpoint on · propagation off",
                                           "endpoint off · propagation on", "endpoint off · propagation off"}
    # issue 45, item 1: an arm's four cells on one set (the demo's all-Abstain FAIL logs leave all four), the
    # increment paired on it and stated in the report
    ze = {r["trajectory_id"] for r in rq1["zero_evidence_excluded"] if r["arm"] == "gcpc"}
    assert ze and {r["trajectory_id"] for r in rq4["panel_b_left_out"]["gcpc"]} == ze
    for arm, cells in rq4["panel_b"].items():
        assert len({c["n"] for c in cells.values()}) == 1 and rq4["panel_b_increment"][arm]["n"] == next(iter(cells.values()))["n"], arm
    inc = rq4["panel_b_increment"]["gcpc"]
    both, neither = rq4["panel_b"]["gcpc"]["endpoint on · propagation on"], rq4["panel_b"]["gcpc"]["endpoint off · propagation off"]
    assert inc["separation"] == pytest.approx(both["separation"] - neither["separation"])
    report = (demo / "figures" / "report.md").read_text(encoding="utf-8")
    assert f"`gcpc` +{inc['separation']:.3f} [{inc['ci_low']:.3f}, {inc['ci_high']:.3f}] on the same {inc['n']} trajectories" in report
    er = rq4["panel_c"]["evidence_replacement"]["arms"]["gcpc"]
    assert er["n"] > 0 and 0.0 <= er["share_no"] <= er["share_no_or_abstain"] <= 1.0
    assert rq4["panel_c"]["idle_floor"]["arms"]["gcpc"]["n_tasks"] == 6
    rq5 = results["rq5"]
    assert rq5["reliability"]["scores"]["gcpc_plain"]["alpha"] == 1.0 and "by construction" in rq5["reliability"]["by_construction"]
    assert rq5["judge_swap"]["scores"]["gcpc_plain"]["rho"] == pytest.approx(1.0)
    assert rq5["pair_diagnosis"]["benchmarks"]["demo"]["terminal_bench"] is False


def test_rerun_is_byte_identical(demo):
    watched = ["data/processed/analyze/rq3.json", "figures/fig5_skill_deltas.png", "figures/fig5_skill_deltas.pdf",
               "figures/rq4_ablations.png", "figures/rq5_reliability.pdf", "figures/table2_human.md", "figures/report.md",
               "figures/fig4_auc.png", "data/processed/controls/summary.json", "data/processed/rejudge/scores.parquet"]
    before = {p: (demo / p).read_bytes() for p in watched}
    cwd = Path.cwd()
    os.chdir(demo)
    try:
        for module in STAGES[1:]:
            _run_stage(module)
    finally:
        os.chdir(cwd)
    assert {p: (demo / p).read_bytes() for p in watched} == before


def test_notebook_loads_outputs_without_recomputing(demo):
    nb = json.loads((ROOT / "notebooks" / "explore.ipynb").read_text(encoding="utf-8"))
    assert nb["nbformat"] == 4 and nb["cells"]
    for cell in nb["cells"]:
        assert cell["cell_type"] in ("markdown", "code") and isinstance(cell["source"], list)
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [] and cell["execution_count"] is None
    source = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    assert "gcpc.analysis" not in source  # loads results, never recomputes them
    ns: dict = {}
    cwd = Path.cwd()
    os.chdir(demo)
    try:
        for cell in nb["cells"]:
            if cell["cell_type"] == "code":
                exec(compile("".join(cell["source"]), "explore.ipynb", "exec"), ns)  # noqa: S102
    finally:
        os.chdir(cwd)
    assert set(ns["results"]) == {"rq1", "rq2", "rq3", "rq4", "rq5"}
    assert len(ns["auc"]) > 0 and len(ns["rq3_rows"]) > 0 and len(ns["panel_b"]) > 0


def test_notebook_executes_headless_in_a_kernel(demo):
    """The notebook as a user runs it: a fresh Jupyter kernel (nbclient), every cell, no error."""
    nbclient = pytest.importorskip("nbclient", reason="nbclient is in the [test] and [notebook] extras")
    nbformat = pytest.importorskip("nbformat", reason="nbformat is in the [test] and [notebook] extras")
    pytest.importorskip("ipykernel", reason="ipykernel is in the [test] and [notebook] extras")
    nb = nbformat.read(ROOT / "notebooks" / "explore.ipynb", as_version=4)
    client = nbclient.NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(demo)}})
    client.execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    assert any("analysis results: rq1, rq2, rq3, rq4, rq5" in o.get("text", "") for o in outputs)

