"""Annotation app for the paper's human study (RQ2): SQLite study, Flask pages, export/import.

`python -m gcpc.annotate serve --annotators A1,A2,A3` creates the study from pipeline outputs on
first start and serves it on http://127.0.0.1:5000/; see docs/annotation-app.md.
"""
