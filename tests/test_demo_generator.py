"""The committed demo corpus is exactly what data/demo/make_demo.py writes from data/demo/content/.

The generator only renders; what the demo says (scenarios, outputs, test failures, texts) is data in
content/. A hand edit of a trial, or a content change not regenerated, fails here, as does a content
file nothing reads any more.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "data" / "demo"


def _files(root: Path) -> dict[str, Path]:
    found = [p for sub in ("tasks", "jobs") for p in (root / sub).rglob("*") if p.is_file()]
    return {p.relative_to(root).as_posix(): p for p in found + [root / "roles.json"]}


def test_generator_writes_the_committed_demo_byte_for_byte(tmp_path):
    r = subprocess.run([sys.executable, str(DEMO / "make_demo.py"), "--out", str(tmp_path)], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "wrote 50 trials (48 binary) and 6 tasks" in r.stdout
    made, committed = _files(tmp_path), _files(DEMO)
    assert sorted(made) == sorted(committed)
    differ = [rel for rel in made if made[rel].read_bytes() != committed[rel].read_bytes()]
    assert not differ, f"{len(differ)} files differ from the generator's, e.g. {differ[:3]}"
    modes = {rel: (made[rel].stat().st_mode & 0o111) != 0 for rel in made}
    assert {rel for rel, x in modes.items() if x} == {rel for rel in made if rel.endswith("/tests/test.sh")}


def test_every_content_file_is_read_by_the_generator():
    code = (DEMO / "make_demo.py").read_text(encoding="utf-8")
    named = set(re.findall(r'content\("([^"]+)"\)', code)) | {f"{t}_task.json" for t in
                                                              json.loads((DEMO / "content" / "trials.json").read_text())["tasks"]}

    def refs(x) -> set[str]:
        if isinstance(x, dict):
            return ({x["file"]} if isinstance(x.get("file"), str) else set()) | set().union(*map(refs, x.values()))
        return set().union(*map(refs, x)) if isinstance(x, list) else set()

    for name in sorted(named):
        if name.endswith(".json"):
            named |= refs(json.loads((DEMO / "content" / name).read_text(encoding="utf-8")))
    on_disk = {p.name for p in (DEMO / "content").iterdir()}
    assert on_disk == named, f"unread: {sorted(on_disk - named)}; missing: {sorted(named - on_disk)}"
