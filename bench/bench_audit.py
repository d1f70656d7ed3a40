"""Benchmark: audit-viewer page build and open time for a 2 MB log, in headless Chromium.

    python bench/bench_audit.py [--mb 2] [--repeat 3] [--out bench/results/audit_viewer.json]

Builds the demo pipeline outputs in a temporary folder, adds one synthetic trajectory whose log is
`--mb` MB (events of ~4 KB, the last one cited as evidence), writes its audit page, then opens it in
the system Chromium (as tests/test_browser.py does) and measures: page build time (Python), time to
`load` and until the script has laid out every event placeholder, number of events rendered at open,
and the time from clicking the verdict to its quote being highlighted. Target: the page is usable
(placeholders laid out) in under 2 s and the jump takes under 0.5 s. Median of `--repeat` runs.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/ itself, also when imported by tests
from portable import command_line  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
TARGET_OPEN_S, TARGET_JUMP_S = 2.0, 0.5


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=2.0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", type=Path, default=ROOT / "bench/results/audit_viewer.json")
    ns = ap.parse_args()

    from browser import browser_context, chromium_path, skip_reason
    from demo_outputs import build_demo_outputs

    from gcpc.corpus.models import Event, EventKind, SourceRef
    from gcpc.judging.models import ItemLabel, Judgment
    from gcpc.llm.schemas import Evidence
    from gcpc.report.audit import build_site, page_name, read_inputs

    if skip_reason():
        print(skip_reason(), file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        params = build_demo_outputs(work)
        p = work / "data/processed"
        inp = read_inputs(params, ingest_dir=p / "ingest", synth_dir=p / "synthesize", judge_root=p / "judge",
                          finalize_dir=p / "finalize")
        rng = random.Random(0)  # text that does not compress away: pages embed their data gzipped

        def filler() -> str:
            return "\n".join(f"line {k:04d} " + "".join(rng.choice("0123456789abcdef") for _ in range(60)) for k in range(56))

        n = max(2, int(ns.mb * 1_000_000 / (len(filler()) + 20)) + 2)
        events = [Event(index=i, kind=EventKind.TOOL_OUTPUT, tool="Bash", text=f"{filler()}\nmarker-{i}-end",
                        source=SourceRef(path="big.log", line=i + 1)) for i in range(n)]
        base = inp.trajectories[0]
        big = base.model_copy(update={"trajectory_id": base.trajectory_id + "-big", "events": events})
        arm = inp.arms[0]
        j = Judgment(trajectory_id=big.trajectory_id, benchmark=big.benchmark, task_id=big.task_id, arm=arm,
                     checklist_hash="h", provider="heuristic", model="m", request_key="k", status="ok", evidence_gate=True,
                     labels=[ItemLabel(item_id="i01", route="judge", label="Yes", raw_label="Yes", reason="last event",
                                       evidence=[Evidence(event_index=n - 1, quote=f"marker-{n - 1}-end")])])
        inp2 = replace(inp, trajectories=[big], judgments={a: ([j] if a == arm else []) for a in inp.arms},
                       max_event_chars=100_000)
        builds, opens, loads, jumps, rendered = [], [], [], [], []
        for _ in range(ns.repeat):
            t0 = time.perf_counter()
            build_site(inp2, work / "site")
            builds.append(time.perf_counter() - t0)
        html = work / "site" / "t" / page_name(big.trajectory_id)
        with browser_context() as ctx:
            for _ in range(ns.repeat):
                page = ctx.new_page()
                t0 = time.perf_counter()
                page.goto(html.as_uri(), wait_until="load")
                loads.append(time.perf_counter() - t0)
                page.wait_for_function(f"document.querySelectorAll('.ev').length === {n}")
                opens.append(time.perf_counter() - t0)
                rendered.append(page.locator('.ev[data-filled="1"]').count())
                t1 = time.perf_counter()
                page.locator("button.cite").first.click()
                page.wait_for_selector("mark.active")
                jumps.append(time.perf_counter() - t1)
                page.close()
        result = {
            "command": command_line("bench/bench_audit.py", sys.argv[1:]),
            "log_bytes": sum(len(e.text.encode()) for e in events), "events": n,
            "page_bytes": html.stat().st_size,
            "build_s_median": round(statistics.median(builds), 3),
            "load_s_median": round(statistics.median(loads), 3),
            "open_s_median": round(statistics.median(opens), 3),
            "jump_s_median": round(statistics.median(jumps), 3),
            "events_rendered_at_open_median": statistics.median(rendered),
            "targets": {"open_s": TARGET_OPEN_S, "jump_s": TARGET_JUMP_S},
            "meets_targets": statistics.median(opens) < TARGET_OPEN_S and statistics.median(jumps) < TARGET_JUMP_S,
            "machine": {"python": platform.python_version(), "platform": platform.platform(), "cpus": os.cpu_count(),
                        "chromium": chromium_path(), "load_average": [round(x, 2) for x in os.getloadavg()]},
            "repeat": ns.repeat,
        }
    ns.out.parent.mkdir(parents=True, exist_ok=True)
    ns.out.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2, sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
