"""The memory ratio of bench/bench_memory.py is defined once (bench/README.md) and every committed result
carries the absolute figures it is computed from, so a changed baseline cannot pass for a gain."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RESULT = ROOT / "bench" / "results" / "memory.json"
FIELDS = ("log_bytes", "peak_rss_bytes", "baseline_rss_bytes", "baseline", "peak_bytes_over_baseline", "peak_over_log",
          "peak_rss_over_log")


def test_readme_defines_the_ratio_once():
    text = (ROOT / "bench" / "README.md").read_text(encoding="utf-8")
    definition = "peak_over_log = (peak_rss_bytes - baseline_rss_bytes) / log_bytes"
    assert text.count(definition) == 1


def test_committed_memory_results_carry_absolute_figures_under_the_one_definition():
    if not RESULT.exists():
        pytest.skip("bench/results/memory.json is not checked out here")
    result = json.loads(RESULT.read_text(encoding="utf-8"))
    assert "bench/README.md" in result["ratio"] and "baseline_rss_bytes" in result["ratio"]
    assert "load_average_before" in result["machine"] and "load_average_after" in result["machine"]
    assert result["results"], "no format measured"
    for fmt, r in result["results"].items():
        missing = [f for f in FIELDS if f not in r]
        assert not missing, f"memory.json: {fmt} lacks {missing}"
        assert "~1 KB log of the same format" in r["baseline"], f"memory.json: {fmt}: another baseline ({r['baseline']!r})"
        assert r["peak_bytes_over_baseline"] == r["peak_rss_bytes"] - r["baseline_rss_bytes"], fmt
        assert r["peak_over_log"] == round(r["peak_bytes_over_baseline"] / r["log_bytes"], 2), fmt
        assert r["peak_rss_over_log"] == round(r["peak_rss_bytes"] / r["log_bytes"], 2), fmt
        assert r["target_met"] == (r["peak_over_log"] < 2), fmt
