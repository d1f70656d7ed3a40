"""Injection probe benchmark: labels flipped by echoed text, before and after echo resistance.

    python bench/bench_injection.py                                  # this checkout -> bench/results/injection.json
    git archive <commit> | tar -x -C /tmp/before && \
    python bench/bench_injection.py --before-src /tmp/before        # also the same probe on another checkout

See bench/injection_probe.py for the probes (echoed checklist, heredoc, echoed instruction,
`cat instruction.md`, fake verifier report, fake PASS line, "SYSTEM:" instructions, `python -c`,
a file written and read back) and the control. Counts are items of the demo corpus's FAIL
trajectories whose heuristic label changes when the probe is appended; `raw` is the judge's own
label (ungated arm), `gated` the label after the evidence gate.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/ itself, also when imported by tests
from portable import command_line  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

import injection_probe  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before-src", help="another checkout (e.g. `git archive main`): the probe is run on its sources too")
    parser.add_argument("--out", default=str(REPO / "bench" / "results" / "injection.json"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        after = injection_probe.run_probe(REPO, Path(tmp))
    out = {"command": command_line("bench/bench_injection.py", sys.argv[1:]), "after": after}
    if args.before_src:
        src = Path(args.before_src).resolve()
        shutil.copy(REPO / "bench" / "injection_probe.py", src / "bench" / "injection_probe.py")
        env = dict(os.environ, PYTHONPATH=str(src / "src"))
        proc = subprocess.run([sys.executable, str(src / "bench" / "injection_probe.py"), str(src)], cwd=src, env=env,
                              capture_output=True, text=True, check=True)
        out["before"] = json.loads(proc.stdout)
        out["before_src"] = "checkout given by --before-src (path not recorded)"
    for name in ("before", "after"):
        if name in out:
            t = out[name]["totals"]
            print(f"{name}: {t['raw_flips']} flips ({t['raw_to_yes']} to Yes) ungated, {t['gated_flips']} gated, over "
                  f"{len(out[name]['probes'])} probes x {out[name]['n_items']} items of {out[name]['n_fail_trajectories']} FAIL trajectories")
    Path(args.out).write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    print(f"-> {args.out}")


if __name__ == "__main__":
    main()
