"""Verifier for nginx-error-triage: error_report.json and suspicious_ips.txt."""

import json

import pytest

REPORT_JSON = "/root/output/error_report.json"
SUSPICIOUS_TXT = "/root/output/suspicious_ips.txt"
EXPECTED_KEYS = {"total_requests", "malformed_lines", "status_counts", "error_rate", "top_error_paths"}

EXPECTED_TOTAL = 323
EXPECTED_MALFORMED = 3
EXPECTED_STATUS_COUNTS = {"200": 220, "304": 25, "401": 23, "403": 21, "404": 17, "500": 8, "502": 5, "503": 4}
EXPECTED_ERROR_RATE = 0.0526
EXPECTED_TOP_ERROR_PATHS = ["/api/checkout", "/api/orders", "/api/search"]
EXPECTED_SUSPICIOUS = ["198.51.100.7", "203.0.113.45"]


def test_report_keys():
    with open(REPORT_JSON, encoding="utf-8") as f:
        report = json.load(f)
    missing = EXPECTED_KEYS - set(report)
    assert not missing, f"missing keys: {sorted(missing)}"


class TestCounts:
    def test_total_requests(self):
        with open(REPORT_JSON, encoding="utf-8") as f:
            report = json.load(f)
        assert report["total_requests"] == EXPECTED_TOTAL

    def test_malformed_lines(self):
        with open(REPORT_JSON, encoding="utf-8") as f:
            report = json.load(f)
        assert report["malformed_lines"] == EXPECTED_MALFORMED

    def test_status_counts(self):
        with open(REPORT_JSON, encoding="utf-8") as f:
            report = json.load(f)
        counts = {str(k): int(v) for k, v in report["status_counts"].items()}
        assert counts == EXPECTED_STATUS_COUNTS

    def test_error_rate(self):
        with open(REPORT_JSON, encoding="utf-8") as f:
            report = json.load(f)
        assert 0.0 <= report["error_rate"] <= 1.0, "error_rate must be a fraction, not a percentage"
        assert abs(report["error_rate"] - EXPECTED_ERROR_RATE) <= 0.0005


@pytest.mark.parametrize("rank", [0, 1, 2])
def test_top_error_paths(rank):
    with open(REPORT_JSON, encoding="utf-8") as f:
        report = json.load(f)
    paths = report["top_error_paths"]
    assert len(paths) == 3, f"expected 3 paths, got {len(paths)}"
    assert paths[rank] == EXPECTED_TOP_ERROR_PATHS[rank]


class TestSuspiciousIps:
    def test_expected_ips(self):
        with open(SUSPICIOUS_TXT, encoding="utf-8") as f:
            ips = [line.strip() for line in f if line.strip()]
        assert ips == EXPECTED_SUSPICIOUS, "IPs with more than 10 responses of status 401/403"
