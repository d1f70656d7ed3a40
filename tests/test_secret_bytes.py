"""Output bytes never depend on the machine's store secret (issue 44, item 5): the demo's judge stages (the arms
gcpc, generic, tick, holistic) and the finalize stage after them, run once with `AWS_SECRET_ACCESS_KEY=testing`
(moto's usual dummy, a word of the demo's own text) and once with a 40-character secret, write byte-identical
files; the call stores too, but for `latency_s` (the answering HTTP call's wall time, which no two paid runs share).
The default run judges the demo's smoke subset (conf/data/smoke.yaml: 4 trajectories, 22 paid requests a run); the
whole demo (50 trajectories) is opt-in, GCPC_E2E_FULL=1.

The call cache is on an object store (moto's S3 server on 127.0.0.1, `GCPC_CACHE_DIR=s3://lab/<run>`), so each
judge stage reads the store's secret and registers it with `gcpc.secrets` as it opens the store; a secret under
`gcpc.secrets.MIN_SECRET` characters must mask nothing. Each run has its own workspace, bucket prefix and user
cache, so both pay every answer (the fake OpenAI-compatible server counts them). Its judge quotes the demo's text:
every verdict's reason and every TICK answer's reasoning quote the item or question they answer, the TICK
generator asks the demo's generic question "…by running, printing or testing it?" (conf/arm/generic.yaml) among
its questions, and every free text repeats that wording, so the word `testing` reaches each arm's judgments
through the provider's replies (counted: the test is not vacuous).

Each run's judge arms run in a fresh process (a secret registered in one run must not mask the other's text),
through `python -m gcpc.judging <arm>`'s own entry point (runpy, one process for the four arms: the SDK and boto3
imports are paid once); finalize, which opens no store, is the call `python -m gcpc.scoring` makes, in this process.

With `MIN_SECRET` set to 1 (the old behaviour: every secret registered) the test fails: the judgments read
"…printing or [REDACTED] it?", the TICK questions generated change with them (replies are redacted before they are
parsed), and with them TICK's requests, its usage summary and finalize's scores."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from fakeservers import FakeOpenAI
from judge_corpus import ingest_and_freeze
from moto_support import start_moto

ROOT = Path(__file__).resolve().parents[1]
WORD = "testing"
SECRETS = {"short": WORD, "long": "lab-secret-" + "Hk4Wq8Zr2Tn6Yb0Pm3Vx7Jc5Ls9Fd"}
API_KEY = "sk-lab-" + "7Qx2Lm9Pz4Rt8Vw3Ky6Nb1Hd5Jf0Gs"
ARMS = ("gcpc", "generic", "tick", "holistic")
"""Every kind of arm that calls a model (gcpc_gate sends gcpc's requests; floors call none)."""
GENERIC_CHECK = next(q for q in yaml.safe_load((ROOT / "conf" / "arm" / "generic.yaml").read_text(encoding="utf-8"))
                     ["generic"]["questions"] if WORD in q)
"""The demo's generic question with the word: "Did the agent check its result, for example by running, printing or
testing it?"."""
ITEM = re.compile(r"^- \[([^\]]+)\] (.+)$", re.M)
QUESTION = re.compile(r"^## Question\n(.+)$", re.M)
INSTRUCTION = re.compile(r"^## Task instruction[^\n]*\n(.+)$|^INSTRUCTION:\n(.+)$", re.M)
JUDGE = {"provider": "openai", "model": "gpt-fake-1", "temperature": 0.0, "seed": 0, "max_tokens": 2048,
         "max_attempts": 2, "concurrency": 8, "timeout_s": 30.0,
         "retry": {"max_retries": 2, "backoff_base_s": 0.01, "backoff_max_s": 0.05, "max_retry_after_s": 1.0}}
RUN_ARMS = ("import runpy, sys\n"
            "for arm in sys.argv[1:]:\n"
            "    sys.argv = ['gcpc.judging', arm]\n"
            "    runpy.run_module('gcpc.judging', run_name='__main__', alter_sys=True)\n")


def quoting_judge(ctx) -> str:
    """A judge whose free text quotes the prompt it answers (the demo's own text), deterministic in the prompt."""
    text = ctx.system + "\n" + ctx.user
    note = "checked as the question asks, by " + GENERIC_CHECK.split(" by ", 1)[1].rstrip("?")
    if ctx.schema_name == "ChecklistJudgment":
        return json.dumps({"verdicts": [{"item_id": i, "label": ["Yes", "No", "Abstain"][n % 3], "evidence": [],
                                         "reason": f"'{t}': {note}"} for n, (i, t) in enumerate(ITEM.findall(text))]})
    if ctx.schema_name == "TickChecklist":
        instruction = [m.group(2) for m in INSTRUCTION.finditer(text) if m.group(2)][-1]
        return json.dumps({"analysis": f"The instruction asks: {instruction}", "questions": [
            f"Does the agent do what the instruction asks: {instruction}", GENERIC_CHECK]})
    if ctx.schema_name == "TickAnswer":
        question = QUESTION.findall(text)[-1]
        return json.dumps({"reasoning": f"'{question}': {note}", "verdict": ["YES", "NO"][len(ctx.user) % 2]})
    if ctx.schema_name == "HolisticJudgment":
        instruction = [m.group(1) for m in INSTRUCTION.finditer(text) if m.group(1)][-1]
        return json.dumps({"rationale": f"'{instruction}': {note}", "score": len(ctx.user) % 11})
    raise AssertionError(f"unexpected schema {ctx.schema_name}")


DATA = [pytest.param("smoke"), pytest.param("demo", marks=pytest.mark.skipif(
    os.environ.get("GCPC_E2E_FULL") != "1", reason="opt-in (GCPC_E2E_FULL=1): the whole demo, 50 trajectories and "
    "256 paid requests a run, ~4 min on 2 busy cores; the default run judges its smoke subset"))]


def _project(dest: Path, data: str, base_url: str) -> Path:
    """A project folder as the judge and finalize stages see it: params.yaml composed from conf/ for `data` with the
    four arms (as `dvc exp run -S data=… -S arm=[…]` composes it), the judge on the fake server, prompts/, and the
    ingest and synthesize outputs (the corpus ingested, checklists frozen by the heuristic generator), made once in
    this process for both runs to copy."""
    from gcpc.experiment import compose

    dest.mkdir(parents=True)
    compose(dest / "params.yaml", [f"data={data}", f"arm=[{','.join(ARMS)}]"], ROOT / "conf")
    params = yaml.safe_load((dest / "params.yaml").read_text(encoding="utf-8"))
    assert sorted(params["arm"]) == sorted(ARMS) and params["data"]["root"] == "data/demo"
    params["judge"] = dict(JUDGE, base_url=base_url)
    (dest / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=True), encoding="utf-8")
    os.symlink(ROOT / "prompts", dest / "prompts")
    ingest_and_freeze(dest / "data" / "processed" / "ingest", dest / "data" / "processed" / "synthesize", params["data"])
    return dest


def _env(home: Path, endpoint: str, prefix: str, secret: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and not k.startswith(("AWS_", "GCPC_"))}
    env.update(OPENAI_API_KEY=API_KEY, GCPC_CACHE_DIR=f"s3://lab/{prefix}", AWS_ENDPOINT_URL=endpoint,
               AWS_ACCESS_KEY_ID="lab-access", AWS_SECRET_ACCESS_KEY=secret, AWS_DEFAULT_REGION="us-east-1",
               XDG_CACHE_HOME=str(home / "user-cache"))
    return env


def _run(args: list[str], cwd: Path, env: dict[str, str]) -> None:
    proc = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"{' '.join(args)} -> {proc.returncode}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"


def _finalize(work: Path) -> None:
    """`python -m gcpc.scoring` in `work`: the library call its entry point makes, in this process (finalize opens no
    store and reads no secret: the judgments are all that differ between the runs; pandas is loaded already)."""
    from gcpc import paths
    from gcpc.params import load_params
    from gcpc.scoring.finalize import run

    run(load_params(work / "params.yaml"), work / paths.INGEST, work / paths.JUDGE, work / paths.FINALIZE,
        work / paths.METRICS / "finalize.json")


def _outputs(work: Path) -> dict[str, bytes]:
    """Every file the judge and finalize stages wrote."""
    return {p.relative_to(work).as_posix(): p.read_bytes()
            for sub in ("data/processed/judge", "data/processed/finalize", "metrics")
            for p in sorted((work / sub).rglob("*")) if p.is_file()}


def _chat_requests(server: FakeOpenAI) -> int:
    with server.lock:
        return sum("chat/completions" in r["route"] for r in server.requests)


def _calls(text: bytes) -> list[dict]:
    """A call store's records without `latency_s`, the one field two paid runs never share (`CallRecord`: the
    answering HTTP call's wall time, volatile by design), with every other byte of each line."""
    return [{k: v for k, v in json.loads(line).items() if k != "latency_s"} for line in text.decode().splitlines()]


@pytest.mark.parametrize("data", DATA)
def test_a_short_store_secret_changes_no_output_byte(data, tmp_path):
    server, endpoint = start_moto()
    try:
        import boto3

        boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="lab-access", aws_secret_access_key=SECRETS["long"],
                     region_name="us-east-1").create_bucket(Bucket="lab")
        outputs, paid = {}, {}
        with FakeOpenAI(responder=quoting_judge) as llm:
            project = _project(tmp_path / "project", data, llm.url + "/v1")
            for run, secret in SECRETS.items():
                work = shutil.copytree(project, tmp_path / run / "gcpc", symlinks=True)
                env = _env(tmp_path / run, endpoint, f"calls-{run}", secret)
                before = _chat_requests(llm)
                _run([sys.executable, "-c", RUN_ARMS, *ARMS], work, env)
                _finalize(work)
                paid[run] = _chat_requests(llm) - before
                outputs[run] = _outputs(work)
    finally:
        server.stop()

    short, long = outputs["short"], outputs["long"]
    stores = {arm: _calls(long[f"data/processed/judge/{arm}/llm_calls.jsonl"]) for arm in ARMS}
    # both runs paid every answer (nothing came from the other's prefix or user cache), each key once
    assert paid["short"] == paid["long"] == sum(len(s) for s in stores.values()) > 0, paid
    # not vacuous: the word reached every arm's judgments through the provider's replies (the long secret's run
    # cannot mask it), and finalize wrote its outputs
    judgments = {arm: long[f"data/processed/judge/{arm}/judgments.jsonl"].decode() for arm in ARMS}
    counts = {arm: judgments[arm].count(WORD) for arm in ARMS}
    replies = {arm: sum((r["response_text"] or "").count(WORD) for r in stores[arm]) for arm in ARMS}
    assert all(counts.values()) and all(replies.values()), (counts, replies)
    assert any(p.startswith("data/processed/finalize/") for p in long) and "metrics/finalize.json" in long

    assert sorted(short) == sorted(long)
    calls = [p for p in short if p.endswith("/llm_calls.jsonl")]
    differ = [p for p in short if p not in calls and short[p] != long[p]]
    differ += [p for p in calls if _calls(short[p]) != _calls(long[p])]
    assert not differ, f"output bytes depend on the store's secret: {differ}"
    print(f"data={data}: {paid['short']} requests paid in each run; '{WORD}' in the judgments: {counts}; "
          f"{len(short)} output files equal ({len(calls)} call stores but for latency_s)")
