"""Malformed-input corpora made by `make_variants.py` (used by tests/test_corpus_hostile.py)."""
