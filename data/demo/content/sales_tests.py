"""Verifier for sales-csv-summary: the JSON summary and the per-region breakdown."""

import csv
import json
import math
from collections import defaultdict
from pathlib import Path

import pytest

INPUT_CSV = "/root/data/orders.csv"
SUMMARY_JSON = "/root/output/sales_summary.json"
REGION_CSV = "/root/output/region_revenue.csv"
EXPECTED_KEYS = {"total_revenue", "order_count", "top_region", "revenue_by_month"}
MONTHS = ["2024-07", "2024-08", "2024-09"]
TOL = 0.01


def _reference():
    """Recompute the expected figures from the raw orders (completed orders only)."""
    by_month = defaultdict(float)
    by_region = defaultdict(float)
    orders = defaultdict(int)
    with open(INPUT_CSV, newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            if row["status"].strip() != "completed":
                continue
            revenue = int(row["quantity"]) * float(row["unit_price"])
            by_month[row["order_date"][:7]] += revenue
            by_region[row["region"]] += revenue
            orders[row["region"]] += 1
    return {
        "total_revenue": round(sum(by_month.values()), 2),
        "order_count": sum(orders.values()),
        "top_region": max(by_region, key=by_region.get),
        "revenue_by_month": {m: round(v, 2) for m, v in by_month.items()},
        "by_region": {r: round(v, 2) for r, v in by_region.items()},
        "orders": dict(orders),
    }


def test_summary_exists():
    assert Path(SUMMARY_JSON).exists(), f"{SUMMARY_JSON} was not created"


def test_summary_keys():
    with open(SUMMARY_JSON, encoding="utf-8") as f:
        summary = json.load(f)
    assert set(summary) == EXPECTED_KEYS, f"unexpected keys: {sorted(summary)}"


class TestSummaryValues:
    def test_total_revenue(self):
        with open(SUMMARY_JSON, encoding="utf-8") as f:
            summary = json.load(f)
        expected = _reference()["total_revenue"]
        assert math.isclose(summary["total_revenue"], expected, abs_tol=TOL), f"total_revenue: expected {expected:.2f}, got {summary['total_revenue']}"

    def test_order_count(self):
        with open(SUMMARY_JSON, encoding="utf-8") as f:
            summary = json.load(f)
        expected = _reference()["order_count"]
        assert summary["order_count"] == expected

    def test_top_region(self):
        with open(SUMMARY_JSON, encoding="utf-8") as f:
            summary = json.load(f)
        expected = _reference()["top_region"]
        assert summary["top_region"] == expected


@pytest.mark.parametrize("month", MONTHS)
def test_revenue_by_month(month):
    with open(SUMMARY_JSON, encoding="utf-8") as f:
        summary = json.load(f)
    expected = _reference()["revenue_by_month"][month]
    assert month in summary["revenue_by_month"], f"missing month {month}"
    assert math.isclose(summary["revenue_by_month"][month], expected, abs_tol=TOL), f"{month}: expected {expected:.2f}, got {summary['revenue_by_month'][month]}"


class TestRegionBreakdown:
    def test_header(self):
        with open(REGION_CSV, newline="", encoding="utf-8") as f:
            header = next(csv.reader(f))
        assert header == ["region", "revenue", "orders"]

    def test_sorted_by_revenue_descending(self):
        with open(REGION_CSV, newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
        revenues = [float(r["revenue"]) for r in rows]
        assert revenues == sorted(revenues, reverse=True), "region_revenue.csv must be sorted by revenue, descending"
