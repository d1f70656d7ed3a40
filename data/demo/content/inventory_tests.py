"""Verifier for inventory-yaml-to-csv: flat CSV export and summary JSON."""

import csv
import json
import math

import pytest

CSV_PATH = "/root/output/inventory.csv"
SUMMARY_PATH = "/root/output/inventory_summary.json"
HEADER = ["sku", "name", "warehouse", "quantity", "unit_price", "total_value"]
WAREHOUSES = {"WH-NORTH", "WH-SOUTH", "WH-EAST"}
EXPECTED_ROWS = 9
EXPECTED_GRAND_TOTAL = 38303.49
EXPECTED_ITEMS = {
    "LM-0307": {"name": "Brass floor lamp", "warehouse": "WH-SOUTH", "quantity": "0", "unit_price": "159.00", "total_value": "0.00"},
    "SH-0315": {"name": "Wall shelf, walnut", "warehouse": "WH-NORTH", "quantity": "40", "unit_price": "34.00", "total_value": "1360.00"},
    "TB-2210": {"name": "Café table", "warehouse": "WH-NORTH", "quantity": "6", "unit_price": "1249.50", "total_value": "7497.00"},
}


def test_csv_header():
    with open(CSV_PATH, newline="", encoding="utf-8") as f:
        header = next(csv.reader(f))
    assert header == HEADER


def test_no_bom():
    with open(CSV_PATH, "rb") as f:
        head = f.read(3)
    assert head != b"\xef\xbb\xbf", "inventory.csv must be UTF-8 without a BOM"


class TestRows:
    def test_row_count(self):
        with open(CSV_PATH, newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
        assert len(rows) == EXPECTED_ROWS

    def test_sorted_by_sku(self):
        with open(CSV_PATH, newline="", encoding="utf-8") as f:
            skus = [r["sku"] for r in csv.DictReader(f)]
        assert skus == sorted(skus)

    def test_warehouse_codes(self):
        with open(CSV_PATH, newline="", encoding="utf-8") as f:
            codes = {r["warehouse"] for r in csv.DictReader(f)}
        assert codes == WAREHOUSES


@pytest.mark.parametrize("sku", sorted(EXPECTED_ITEMS))
def test_item_values(sku):
    with open(CSV_PATH, newline="", encoding="utf-8") as f:
        row = next((r for r in csv.DictReader(f) if r["sku"] == sku), None)
    assert row is not None, f"{sku} missing from the CSV"
    expected = EXPECTED_ITEMS[sku]
    assert row["name"] == expected["name"]
    assert row["warehouse"] == expected["warehouse"]
    assert row["quantity"] == expected["quantity"], f"{sku}: quantity {row['quantity']!r}, expected {expected['quantity']!r}"
    assert math.isclose(float(row["unit_price"]), float(expected["unit_price"]), abs_tol=0.01), f"{sku}: unit_price {row['unit_price']}"
    assert math.isclose(float(row["total_value"]), float(expected["total_value"]), abs_tol=0.01), f"{sku}: total_value {row['total_value']}"


class TestSummary:
    def test_summary_values(self):
        with open(SUMMARY_PATH, encoding="utf-8") as f:
            summary = json.load(f)
        assert summary["item_count"] == EXPECTED_ROWS
        assert summary["warehouse_count"] == len(WAREHOUSES)
        assert math.isclose(summary["grand_total"], EXPECTED_GRAND_TOTAL, abs_tol=0.01), f"grand_total {summary['grand_total']}"
