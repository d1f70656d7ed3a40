"""Verifier for beam-deflection-units: midspan deflection and moment of simply supported beams."""

import csv
import json
import math

import pytest

RESULTS_JSON = "/root/output/beam_results.json"
RESULTS_CSV = "/root/output/beam_results.csv"
CSV_HEADER = ["beam_id", "max_deflection_mm", "max_moment_kNm", "passes_limit"]
REL_TOL = 0.005

# Reference values computed in SI units: delta = P * L**3 / (48 * E * I), M = P * L / 4, limit L / 360
EXPECTED = {
    "B-101": {"max_deflection_mm": 6.29, "max_moment_kNm": 21.354, "passes_limit": True},
    "B-102": {"max_deflection_mm": 6.777, "max_moment_kNm": 23.4, "passes_limit": True},
    "B-103": {"max_deflection_mm": 4.776, "max_moment_kNm": 1.98, "passes_limit": True},
    "B-104": {"max_deflection_mm": 30.822, "max_moment_kNm": 8.135, "passes_limit": False},
}


def test_beam_order():
    with open(RESULTS_JSON, encoding="utf-8") as f:
        ids = [row["beam_id"] for row in json.load(f)]
    assert ids == list(EXPECTED), "beams must keep the input order"


@pytest.mark.parametrize("beam_id", list(EXPECTED))
def test_deflection(beam_id):
    with open(RESULTS_JSON, encoding="utf-8") as f:
        got = {r["beam_id"]: r for r in json.load(f)}[beam_id]["max_deflection_mm"]
    expected = EXPECTED[beam_id]["max_deflection_mm"]
    assert math.isclose(got, expected, rel_tol=REL_TOL), f"{beam_id}: deflection {got} mm, expected {expected} mm"


class TestLimitAndCsv:
    def test_moments(self):
        with open(RESULTS_JSON, encoding="utf-8") as f:
            results = {r["beam_id"]: r for r in json.load(f)}
        for beam_id, expected in EXPECTED.items():
            got = results[beam_id]["max_moment_kNm"]
            assert math.isclose(got, expected["max_moment_kNm"], rel_tol=REL_TOL), f"{beam_id}: moment {got} kN*m"

    def test_passes_limit_flags(self):
        with open(RESULTS_JSON, encoding="utf-8") as f:
            got = {r["beam_id"]: r["passes_limit"] for r in json.load(f)}
        expected = {k: v["passes_limit"] for k, v in EXPECTED.items()}
        assert got == expected, "passes_limit must be true iff the deflection is at most L / 360"

    def test_csv_header(self):
        with open(RESULTS_CSV, newline="", encoding="utf-8") as f:
            header = next(csv.reader(f))
        assert header == CSV_HEADER

    def test_csv_matches_json(self):
        with open(RESULTS_CSV, newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
        with open(RESULTS_JSON, encoding="utf-8") as f:
            by_id = {r["beam_id"]: r for r in json.load(f)}
        assert [r["beam_id"] for r in rows] == list(by_id)
        for r in rows:
            assert math.isclose(float(r["max_deflection_mm"]), by_id[r["beam_id"]]["max_deflection_mm"], rel_tol=1e-6)
