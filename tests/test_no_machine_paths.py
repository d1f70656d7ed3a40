"""No committed result carries an absolute path of the machine that wrote it.

A benchmark result that names `/work/tb1b/gcpc` or writes to `/tmp/fp_new.json` cannot be rerun as
written by anyone else; commands in results and docs are written relative to the repository (a
folder outside it is a named placeholder such as CLONE or WORKDIR, explained beside it). Scanned:
the committed text files under bench/results/, metrics/, figures/ and docs/, and the stage
manifests under data/processed/ (DVC outputs, present once checked out).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ("bench/results", "metrics", "figures", "docs")
TEXT_SUFFIXES = {".json", ".jsonl", ".md", ".csv", ".tsv", ".tex", ".txt", ".yaml", ".yml", ".html", ".svg", ".py", ".log"}

# An absolute path into a user's or a machine's own folders: home and work folders, temporary folders,
# mounts and macOS/Windows equivalents. System locations every machine has (/usr/bin, /dev/null) are not
# "this machine's" and are allowed; so is a path inside a URL (https://host/home/...), which is preceded by a word.
MACHINE_PATH = re.compile(
    r"(?<![\w.~-])(?:/(?:work|root|home|tmp|mnt|scratch|srv|Users|opt/work|var/tmp|var/folders|private/var|private/tmp)/"
    r"|[A-Za-z]:\\\\?(?:Users|work|tmp|temp)\\)", re.IGNORECASE)


# Files that quote corpus text verbatim (checklist items quoting a SWE-bench issue, whose reporter pasted a
# traceback with their own home folder): their quoted fields are data, not a path of the machine that wrote the
# file; every other field is scanned as usual.
QUOTING_CORPUS = {"bench/results/heuristic_boilerplate_sample.jsonl": ("text", "quote")}


def _scanned_text(rel: str, text: str) -> str:
    fields = QUOTING_CORPUS.get(rel)
    if not fields:
        return text
    import json
    rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    return "\n".join(json.dumps({k: v for k, v in row.items() if k not in fields}) for row in rows)


def machine_paths(text: str) -> list[str]:
    """Each absolute machine path in ``text``, with a little context."""
    return [text[max(0, m.start() - 40):m.end() + 40].replace("\n", " ") for m in MACHINE_PATH.finditer(text)]


def scanned_files(root: Path) -> list[Path]:
    listed = subprocess.run(["git", "ls-files", "-z", "--", *SCANNED], cwd=root, capture_output=True, check=True).stdout
    files = [root / p for p in listed.decode().split("\0") if p]
    files = [f for f in files if f.suffix.lower() in TEXT_SUFFIXES and f.is_file()]
    files += sorted((root / "data" / "processed").rglob("stage_manifest.json"))
    return files


def test_the_pattern_finds_machine_paths_and_spares_the_rest():
    found = ["python bench/bench_store.py --footprint /work/tb1b/gcpc --out /tmp/fp_new.json",
             "--workdir /home/alice/run", '"clone": "/root/gcpc"', "C:\\Users\\bob\\gcpc", "/Users/carol/x", "(/mnt/data/a)"]
    spared = ["python bench/bench_store.py --footprint CLONE --out bench/results/footprint.json", "/usr/bin/python3",
              "https://example.org/home/page", "../shared/data/terminal-bench-1", "2>/dev/null", "data/processed/tmp/x",
              "~/work/notes"]
    for text in found:
        assert machine_paths(text), text
    for text in spared:
        assert not machine_paths(text), text


def test_committed_results_and_docs_carry_no_machine_path():
    files = scanned_files(ROOT)
    if not any(f.is_relative_to(ROOT / "bench" / "results") for f in files):
        pytest.skip("bench/results/ is not checked out here")
    offenders = []
    for f in files:
        text = _scanned_text(f.relative_to(ROOT).as_posix(), f.read_text(encoding="utf-8", errors="replace"))
        offenders += [f"{f.relative_to(ROOT)}: …{hit}…" for hit in machine_paths(text)]
    assert not offenders, "absolute paths of the machine that wrote them (write commands relative to the repository):\n" + \
        "\n".join(offenders)


def test_benchmarks_record_their_command_without_machine_paths():
    import sys

    sys.path.insert(0, str(ROOT / "bench"))
    from portable import command_line

    argv = ["--footprint", "/work/tb1b/gcpc", "--out", "/tmp/fp_new.json", f"--keep={ROOT}/bench/tmp-run",
            "--data", "terminal-bench-1", str(ROOT / "bench" / "results" / "footprint.json"), "/home/x/y"]
    cmd = command_line("bench/bench_store.py", argv)
    assert cmd == ("python bench/bench_store.py --footprint FOOTPRINT --out OUT --keep=bench/tmp-run --data terminal-bench-1 "
                   "bench/results/footprint.json PATH")
    assert not machine_paths(cmd)
