"""Ingest grows with its input, not faster (issue 36, item 6): no full garbage collection while a corpus is read
(a Harbor corpus is read in the stage's own process), no file-system walk per text made relative, and the
population report's exclusion table is not quadratic in the exclusions."""

from __future__ import annotations

import gc
import os
from pathlib import Path

from malformed.make_variants import CONFIGS, make_corpora

from gcpc.corpus import harbor, ingest as ingest_mod
from gcpc.corpus.ingest import ingest, population, population_markdown, relative_text, relativizer
from gcpc.corpus.models import Exclusion


def test_no_full_collection_while_a_harbor_corpus_is_read(tmp_path, monkeypatch):
    dest = tmp_path / "variants"
    dest.mkdir()
    make_corpora(dest)
    seen: list[int] = []
    real = harbor.read_trial

    def spy(*a, **k):
        seen.append(gc.get_threshold()[2])
        return real(*a, **k)

    monkeypatch.setattr(ingest_mod, "read_trial", spy)
    before = gc.get_threshold()
    result = ingest(CONFIGS["harbor"], dest)
    assert seen and min(seen) >= 100_000  # before: the default (10), a full collection every few hundred trials
    assert gc.get_threshold() == before and result.exclusions


def test_relative_text_resolves_each_root_once(tmp_path, monkeypatch):
    calls = []
    real = os.path.realpath
    monkeypatch.setattr(os.path, "realpath", lambda p, *a, **k: calls.append(p) or real(p, *a, **k))
    relative = relativizer([tmp_path / "sub", tmp_path])  # as ingest orders them: the corpus root first
    texts = [f"error in {tmp_path}/sub/t{i}/x.json" for i in range(50)]
    assert [relative(t) for t in texts] == [f"error in t{i}/x.json" for i in range(50)]
    assert len(calls) == 2
    assert relative_text(texts[0], [tmp_path / "sub"]) == "error in t0/x.json"


def test_population_report_does_not_compare_exclusions_pairwise(monkeypatch):
    exclusions = [Exclusion(path=f"jobs/t{i}", reason="unreadable trial: bad json") for i in range(300)]
    exclusions += [Exclusion(path=f"jobs/d{i}", reason="duplicate: same task and log as x", duplicate_of="x")
                   for i in range(300)]

    def refuse(self, other):  # before: `e not in dups` compared every exclusion with every duplicate
        raise AssertionError("pairwise comparison of exclusions")

    from gcpc.corpus.ingest import IngestResult

    pop = population(IngestResult(corpora=["c"], tasks=[], trajectories=[], exclusions=exclusions, notes=[]))
    monkeypatch.setattr(Exclusion, "__eq__", refuse)
    text = population_markdown(pop, exclusions)
    assert text.count("| jobs/d") == 300 and text.count("| jobs/t") == 300
