"""Regenerate the screenshots in docs/img/ (audit viewer and annotation app on the demo corpus).

    python docs/make_screenshots.py

Needs the test extra (playwright) and Debian's chromium, like tests/test_browser.py. Builds the demo
pipeline outputs in a temporary folder; nothing in the repository but docs/img/*.png is written.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from browser import browser_context, serve_app, skip_reason  # noqa: E402
from demo_outputs import build_demo_outputs  # noqa: E402

OUT = ROOT / "docs" / "img"


def main() -> int:
    reason = skip_reason()
    if reason:
        print(f"cannot take screenshots: {reason}", file=sys.stderr)
        return 2
    from gcpc.annotate.app import create_app
    from gcpc.annotate.study import study_from_outputs
    from gcpc.report.audit import build_site, read_inputs

    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        params = build_demo_outputs(work)
        p = work / "data/processed"
        build_site(read_inputs(params, ingest_dir=p / "ingest", synth_dir=p / "synthesize", judge_root=p / "judge",
                               finalize_dir=p / "finalize"), work / "site")
        db = work / "study.sqlite"
        study_from_outputs(db, params, ["A1", "A2"], ingest_dir=p / "ingest", synth_dir=p / "synthesize",
                           protocol_path=ROOT / "prompts/annotation/protocol.yaml", illustrative=True,
                           description="Demo study (illustrative)", n_tasks=1, per_task=2)
        with browser_context(viewport=(1400, 860)) as ctx:
            page = ctx.new_page()
            page.goto((work / "site" / "index.html").as_uri())
            page.select_option("#f-outcome", "FAIL")
            page.screenshot(path=str(OUT / "audit-index.png"))
            page.locator("#index tbody tr a").first.click()
            page.wait_for_load_state()
            page.locator("#checklist button.cite").nth(1).click()
            page.wait_for_timeout(300)
            page.screenshot(path=str(OUT / "audit-trajectory.png"))
            with serve_app(create_app(db)) as base:
                page.goto(base + "/a/A1/")
                page.check("input[name=Q1][value='6']")
                page.screenshot(path=str(OUT / "annotate-rate.png"))
                for _ in range(2):
                    page.check("input[name=Q1][value='6']")
                    page.check("input[name=Q1b][value='5']")
                    page.click("#submit")
                    page.wait_for_load_state()
                page.check("#pair-form input[value='a']")  # Q2 comes before the checklist (the paper's order)
                page.click("#submit")
                page.wait_for_load_state()
                page.locator(".item").first.locator("input").first.check()
                page.locator(".side-by-side").scroll_into_view_if_needed()
                page.screenshot(path=str(OUT / "annotate-checklist.png"))
    for f in sorted(OUT.glob("*.png")):
        print(f.relative_to(ROOT), f.stat().st_size)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
