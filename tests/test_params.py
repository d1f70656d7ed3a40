"""params.yaml is what conf/ composes to, so `dvc repro` and `dvc exp run` start from the same parameters."""

from pathlib import Path

import pytest
import yaml

from gcpc.experiment import compose
from gcpc.params import load_params, section

ROOT = Path(__file__).resolve().parents[1]


def test_committed_params_equal_the_composition_of_conf(tmp_path):
    out = tmp_path / "params.yaml"
    compose(out, conf_dir=ROOT / "conf")
    assert yaml.safe_load(out.read_text()) == yaml.safe_load((ROOT / "params.yaml").read_text()), \
        "params.yaml is stale: run `python -m gcpc.experiment` and commit it"


def test_overrides_select_groups(tmp_path):
    out = tmp_path / "params.yaml"
    compose(out, ["llm@judge=replay", "analysis.bootstrap.seed=7"], conf_dir=ROOT / "conf")
    params = load_params(out)
    assert params["judge"]["provider"] == "replay" and params["generator"]["provider"] == "heuristic"
    assert section(params, "analysis.bootstrap.seed") == 7


def test_missing_keys_and_files_are_named(tmp_path):
    with pytest.raises(KeyError, match="analysis.nope"):
        section({"analysis": {}}, "analysis.nope")
    with pytest.raises(FileNotFoundError, match="params.yaml"):
        load_params(tmp_path / "params.yaml")
