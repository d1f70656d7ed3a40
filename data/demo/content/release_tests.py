"""Verifier for release-notes-from-commits: RELEASE_NOTES.md and release_stats.json."""

import json
import re

import pytest

NOTES = "/root/output/RELEASE_NOTES.md"
STATS = "/root/output/release_stats.json"
SECTIONS = [("## Features", "feat"), ("## Bug Fixes", "fix"), ("## Documentation", "docs")]
EXPECTED_BULLETS = {
    "feat": [
        "Add CSV export to the reports page (#412)",
        "Support pagination cursors in the orders API (#418)",
        "Show stock levels on product cards (#423)",
        "Allow customers to save multiple addresses (#428)",
        "Add dark mode to the admin dashboard (#436)",
    ],
    "fix": [
        "Handle an empty cart during checkout (#415)",
        "Keep the session alive after a password change (#420)",
        "Round tax amounts to cents before summing (#427)",
        "Prevent double submission of the payment form (#431)",
        "Correct the timezone of exported invoices (#434)",
    ],
    "docs": [
        "Document the retry settings for webhooks (#416)",
        "Fix typos in the deployment guide (#424)",
        "Add an upgrade note for the 2.4 config keys (#432)",
    ],
}
EXPECTED_STATS = {"features": 5, "fixes": 5, "docs": 3, "skipped": 5}


def _section(lines, title):
    out = []
    for line in lines[lines.index(title) + 1:]:
        if line.startswith("## "):
            break
        if line.startswith("- "):
            out.append(line[2:])
    return out


def _bullets(lines):
    return [line[2:] for line in lines if line.startswith("- ")]


def test_title_line():
    with open(NOTES, encoding="utf-8") as f:
        lines = [line.rstrip() for line in f]
    assert lines[0] == "# Release 2.4.0"


def test_section_order():
    with open(NOTES, encoding="utf-8") as f:
        lines = [line.rstrip() for line in f]
    titles = [line for line in lines if line.startswith("## ")]
    assert titles == [title for title, _ in SECTIONS]


@pytest.mark.parametrize("title,prefix", SECTIONS, ids=["features", "fixes", "docs"])
def test_section_bullets(title, prefix):
    with open(NOTES, encoding="utf-8") as f:
        lines = [line.rstrip() for line in f]
    assert _section(lines, title) == EXPECTED_BULLETS[prefix]


class TestContent:
    def test_no_duplicates(self):
        with open(NOTES, encoding="utf-8") as f:
            bullets = _bullets([line.rstrip() for line in f])
        assert len(bullets) == len(set(bullets)), "duplicate entries found"

    def test_no_chore_or_ci(self):
        with open(NOTES, encoding="utf-8") as f:
            text = f.read().lower()
        assert "chore:" not in text and "ci:" not in text
        assert "eslint" not in text and "nightly" not in text

    def test_capitalised(self):
        with open(NOTES, encoding="utf-8") as f:
            bullets = _bullets([line.rstrip() for line in f])
        assert all(b[:1].isupper() for b in bullets), "descriptions must start with a capital letter"

    def test_pr_numbers_kept(self):
        with open(NOTES, encoding="utf-8") as f:
            bullets = _bullets([line.rstrip() for line in f])
        assert all(re.search(r"\(#\d+\)$", b) for b in bullets), "each entry must keep its PR number"


class TestStats:
    def test_stats_values(self):
        with open(STATS, encoding="utf-8") as f:
            stats = json.load(f)
        assert stats == EXPECTED_STATS
