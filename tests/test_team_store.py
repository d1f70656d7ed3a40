"""docs/team.md walked on three clones: a lab's paper run, paid once, results through a DVC remote and the call
cache on an S3-compatible object store (issues 37 and 44).

The doc's command blocks carry labels (`<!-- walk STEP: MACHINES [note] -->` before each ```bash block; every
```bash block has one). This test reads them and runs every command, in the doc's order, on the machines named,
through bash, with the machine's environment carried from one command to the next (so the doc's `export` lines are
what set it). What the test changes in a command is the short table `SUBSTITUTE` (credentials and the store's URL:
`...` and `https://s3.lab.example.org` become this test's values); what it does not run is `_skipped`, each with its
reason, printed; the walk asserts that every command of the doc was run or skipped.

The lab: moto's server mode (the `team` extra) on 127.0.0.1 is the store, the fake Anthropic server (tests/fakeservers)
the paid judge: the doc's `claude-sonnet-4-6` config unchanged (its `base_url` unset, so the anthropic SDK reads
`ANTHROPIC_BASE_URL` from the environment: the one variable the test adds for the judge; the request key does not
hold the URL). The project is the project's own pipeline (every stage of dvc.yaml and pipelines/*/dvc.yaml, ingest
to the report, with the sources, prompts, Hydra plugin, .dvc/config and demo corpus they depend on); the lab's
`conf/config.yaml` defaults are `data: smoke` (the demo's 4-trajectory subset) and `arm: [gcpc, tick]`, committed in
the origin, nothing else changed (the judge's `concurrency: 16`, `max_attempts: 3` and retry settings are the conf's:
no fault of this test is retried by backoff, so they cost no time). Each machine is a clone with its own home, DVC
cache and user cache; a bare repository is the lab's git remote.

What the test adds to the doc's commands (never in place of one):
* step 0, after A's interrupted run: a bucket typo and `s3:/` end the judge stage with the doc's own
  Troubleshooting line, exit status 2, no request;
* the kill: A's stage is killed (SIGKILL, DVC and the stage) once half its requests are answered and stored (call
  store and bucket) and the rest are held in flight by the server; in flight then: at most `concurrency`;
* B's first reply carries the API key (an invalid answer, asked again within the key's tries): the canary;
* `together`: the server holds every request until both machines have tried a claim in the store (moto's log,
  told apart by each machine's access key), so the two runs overlap however the machine is loaded;
* counts, outputs compared byte for byte, `dvc status`, C's model stages re-run with the call cache off (0
  requests: C's pulled call stores hold every answer), and the canary over every object of the bucket.

Request counts per step are printed (and written to $GCPC_TEAM_COUNTS when set) for docs/team.md's Measured table."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from fakeservers import FakeAnthropic, Fault
from moto_support import start_moto

from gcpc.io import iter_jsonl

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "team.md"
pytestmark = pytest.mark.slow

KEYS = {m: f"sk-ant-CANARY-{m}-" + hashlib.sha256(f"team store {m}".encode()).hexdigest()[:32] for m in "ABC"}
"""Each machine its own API key (each a canary): the server tells the machines apart by the key they send."""
SECRET = "lab-secret-" + "Hk4Wq8Zr2Tn6Yb0Pm3Vx7Jc5Ls9Fd1G"
"""The store's secret access key: a canary too."""
BUCKET = "gcpc-lab"

STORY = ("install", "environment", "lab", "judge", "pull", "interrupted", "resume", "together", "assemble",
         "reproduce", "experiment", "apply")
"""The doc's walk labels, in its order: the steps this test knows what to check around."""
LABEL = re.compile(r"<!-- walk (?P<step>[a-z-]+): (?P<machines>[ABC](?: [ABC])*)(?P<note>[^>]*?) -->\n```bash\n"
                   r"(?P<body>.*?)\n```\n", re.S)


def SUBSTITUTE(machine: str, endpoint: str) -> dict[str, str]:  # noqa: N802 - the table the docstring names
    """What this test changes in the doc's commands, per machine: its credentials and the store's URL."""
    return {"AWS_ACCESS_KEY_ID=...": f"AWS_ACCESS_KEY_ID=lab-access-{machine}",  # per machine: moto's log tells them apart
            "AWS_SECRET_ACCESS_KEY=...": f"AWS_SECRET_ACCESS_KEY={SECRET}",
            "ANTHROPIC_API_KEY=...": f"ANTHROPIC_API_KEY={KEYS[machine]}",
            "https://s3.lab.example.org": endpoint}


def _aws_cli(env: dict[str, str]) -> bool:
    if shutil.which("aws", path=env["PATH"]) is None:
        return False
    return subprocess.run(["aws", "--version"], env=env, capture_output=True, timeout=60).returncode == 0


def _skipped(command: str, env: dict[str, str]) -> str | None:
    """Why the walk does not run a command of the doc (None: it runs it)."""
    if command.startswith("uv sync "):
        return "the install: this test's interpreter is that environment (moto, dvc-s3 and boto3 imported to get here)"
    if command.startswith("aws s3 mb ") and not _aws_cli(env):
        return "the AWS CLI is not installed here; the doc's next line (`python -c ... create_bucket`) makes the bucket"
    return None


@dataclass
class Block:
    step: str
    machines: tuple[str, ...]
    note: str
    commands: list[str]


def doc_blocks(text: str) -> list[Block]:
    """The doc's labelled command blocks; a command is a line (a trailing backslash joins the next), comments and
    blank lines left out."""
    blocks = []
    for m in LABEL.finditer(text):
        lines = m["body"].replace("\\\n", " ").splitlines()
        commands = [line.strip() for line in lines if line.strip() and not line.strip().startswith("#")]
        blocks.append(Block(m["step"], tuple(m["machines"].split()), m["note"].strip(" ,"), commands))
    assert text.count("```bash") == len(blocks), "a ```bash block of docs/team.md has no `<!-- walk STEP: MACHINES -->` label"
    return blocks


class Machine:
    """One clone of the lab's repository with its own home; runs the doc's commands through bash, its environment
    carried from one command to the next (what `export` sets stays set, as in one shell)."""

    def __init__(self, name: str, home: Path, env: dict[str, str]):
        self.name, self.home, self.env, self.work = name, home, env, home / "gcpc"

    def script(self, command: str) -> str:
        return f'set -e\n{command}\nrc=$?\nenv -0 > "{self.home}/.walk-env"\nexit $rc\n'

    def absorb(self) -> None:
        dump = (self.home / ".walk-env").read_bytes().decode()
        env = dict(item.split("=", 1) for item in dump.split("\0") if "=" in item)
        self.env = {k: v for k, v in env.items() if k not in ("_", "SHLVL", "PWD", "OLDPWD")}

    def run(self, command: str) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(["bash", "-c", self.script(command)], cwd=self.work, env=self.env, capture_output=True,
                              text=True, timeout=900)
        assert proc.returncode == 0, f"{self.name}$ {command} -> {proc.returncode}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        self.absorb()
        return proc

    def start(self, command: str, **kw: object) -> subprocess.Popen[str]:
        return subprocess.Popen(["bash", "-c", self.script(command)], cwd=self.work, env=self.env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, **kw)

    def python(self, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, *args], cwd=self.work, env=dict(self.env, **extra), capture_output=True,
                              text=True, timeout=300)


class Walk:
    """The doc's blocks, walked in order: `step(name)` runs the next block (which must be that step) on its machines;
    `done()` asserts that every command of the doc was run or skipped with its reason."""

    def __init__(self, blocks: list[Block], machines: dict[str, Machine], endpoint: str):
        self.blocks, self.machines, self.endpoint = list(blocks), machines, endpoint
        self.ran: list[tuple[str, str]] = []
        self.skipped: list[tuple[str, str, str]] = []
        self.total = sum(len(b.commands) * len(b.machines) for b in blocks)

    def commands(self, name: str) -> tuple[Block, list[tuple[Machine, str]]]:
        """The next block (it must be `name`) and its commands as each machine runs them (substituted), skips recorded."""
        block = self.blocks.pop(0)
        assert block.step == name, f"docs/team.md's next walked block is {block.step!r}, the test expected {name!r}"
        todo = []
        for m in block.machines:
            machine = self.machines[m]
            for command in block.commands:
                reason = _skipped(command, machine.env)
                if reason:
                    self.skipped.append((m, command, reason))
                    continue
                for doc, value in SUBSTITUTE(m, self.endpoint).items():
                    command = command.replace(doc, value)
                todo.append((machine, command))
        return block, todo

    def step(self, name: str) -> Block:
        block, todo = self.commands(name)
        for machine, command in todo:
            machine.run(command)
            self.ran.append((machine.name, command))
        return block

    def done(self) -> None:
        assert not self.blocks, f"blocks of docs/team.md not walked: {[b.step for b in self.blocks]}"
        assert len(self.ran) + len(self.skipped) == self.total, (len(self.ran), len(self.skipped), self.total)
        assert all(cmd.startswith(("uv sync ", "aws s3 mb ")) for _, cmd, _ in self.skipped), self.skipped


class StoreLog:
    """moto's WSGI app, wrapped: every request's (access key, method, path), so the test sees which machine asked the
    store what (each machine has its own access key)."""

    def __init__(self, app):
        self.app, self.lock, self.seen = app, threading.Lock(), []

    def __call__(self, environ, start_response):
        who = re.search(r"Credential=([^/]+)/", environ.get("HTTP_AUTHORIZATION", ""))
        with self.lock:
            self.seen.append((who[1] if who else "", environ["REQUEST_METHOD"], environ.get("PATH_INFO", "")))
        return self.app(environ, start_response)

    def claimed(self, machine: str, start: int) -> bool:
        """Has `machine` tried to claim a request (a conditional PUT of a `.claim`) since `start`?"""
        with self.lock:
            return any(w == f"lab-access-{machine}" and meth == "PUT" and path.endswith(".claim")
                       for w, meth, path in self.seen[start:])


@pytest.fixture(scope="module")
def store():
    if shutil.which("git") is None:
        pytest.skip("git is not installed (the test clones a repository three times)")
    server, url = start_moto("dvc_s3")
    import boto3

    log = StoreLog(server._server.app)  # noqa: SLF001 - moto's ThreadedMotoServer keeps its werkzeug server there
    server._server.app = log  # noqa: SLF001
    s3 = boto3.client("s3", endpoint_url=url, aws_access_key_id="lab-test", aws_secret_access_key=SECRET,
                      region_name="us-east-1")
    yield url, s3, log
    server.stop()


def _base_env(home: Path) -> dict[str, str]:
    """A machine before the doc: no credentials, no cache setting, no git identity (the doc sets them), its own home."""
    env = {k: v for k, v in os.environ.items()
           if not k.endswith("_API_KEY") and not k.startswith(("AWS_", "GCPC_", "ANTHROPIC_", "GIT_"))}
    env.update(HOME=str(home), XDG_CACHE_HOME=str(home / "user-cache"), DVC_NO_ANALYTICS="1",
               PATH=str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""))
    return env


PROJECT = ("dvc.yaml", "pipelines", "src", "prompts", "conf", "data/demo", "hydra_plugins", ".dvc/config",
           ".dvc/.gitignore", ".dvc/plots")
"""What a clone of the project holds (as git tracks it, without the locks): the real pipeline, its stage deps
(sources, prompts, the llm configs the estimate reads), the Hydra plugin `dvc exp run -S` composes with, the DVC
config (Hydra on, no remote) and the demo corpus, of which data=smoke is the subset."""
LAB_DEFAULTS = {"  - data: demo\n": "  - data: smoke\n", "  - arm: all\n": "  - arm: [gcpc, tick]\n"}
"""The lab's corpus and arms in conf/config.yaml's defaults (the doc: a clone with `conf/` set to the lab's)."""


@pytest.fixture(scope="module")
def origin(tmp_path_factory) -> Path:
    """The lab's git remote: a bare repository of the project, its conf set to the lab's corpus and arms, params.yaml
    composed from it (the conf default judge: heuristic). No output, no remote: the doc's commands add them."""
    from gcpc.experiment import compose

    tmp = tmp_path_factory.mktemp("origin")
    work = tmp / "work"
    listed = subprocess.run(["git", "ls-files", *PROJECT], cwd=ROOT, capture_output=True, text=True)
    files = listed.stdout.split()
    if listed.returncode or "dvc.yaml" not in files:
        pytest.skip(f"{ROOT} is not a git checkout of the project (git ls-files lists no dvc.yaml): nothing to clone")
    for name in files:
        if Path(name).name == "dvc.lock":
            continue
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ROOT / name, work / name)
    config = (work / "conf" / "config.yaml").read_text(encoding="utf-8")
    for old, new in LAB_DEFAULTS.items():
        assert config.count(old) == 1, f"conf/config.yaml: no default line {old.strip()!r} to set the lab's"
        config = config.replace(old, new)
    (work / "conf" / "config.yaml").write_text(config, encoding="utf-8")
    compose(work / "params.yaml", [], work / "conf")
    params = yaml.safe_load((work / "params.yaml").read_text())
    assert sorted(params["arm"]) == ["gcpc", "tick"] and params["analysis"]["rejudge"]["arm"] == "gcpc"
    env = dict(_base_env(tmp), GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t")
    for args in (["git", "init", "-q", "-b", "main"], ["git", "add", "-A"], ["git", "commit", "-qm", "the lab's project"],
                 ["git", "clone", "-q", "--bare", str(work), str(tmp / "origin.git")]):
        subprocess.run(args, cwd=work, env=env, check=True, capture_output=True, timeout=120)
    return tmp / "origin.git"


def _digest(body: dict) -> str:
    """The request as the server saw it: the fake server's message id (`msg_<this>`), which the call store records."""
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:24]


def _asked(server: FakeAnthropic, start: int = 0, machine: str | None = None) -> list[str]:
    with server.lock:
        return [_digest(r["body"]) for r in server.requests[start:]
                if r["route"] == "POST /v1/messages" and (machine is None or r["auth"] in (KEYS[machine], f"Bearer {KEYS[machine]}"))]


def _records(work: Path, store: str) -> list[dict]:
    from gcpc.llm.store import iter_call_records

    path = work / store
    return list(iter_call_records(path, resolve=False)) if path.exists() else []


def _rid(record: dict) -> str:
    """The server's digest of the request a record answers (the fake's `request-id` header, `req_<digest>`)."""
    return record["request_id"].removeprefix("req_").removeprefix("msg_")


def _stored_ok(work: Path, arm: str) -> set[str]:
    """The request ids of the settled answers in a judge arm's call store."""
    return {_rid(r) for r in _records(work, f"data/processed/judge/{arm}/llm_calls.jsonl") if r["ok"]}


def _tries(work: Path, store: str) -> dict[tuple[str, int], str]:
    """{(request key, attempt): the server's request id} of every try in one call store, settled or not."""
    return {(r["key"], r["attempt"]): _rid(r) for r in _records(work, store)}


def _entries(s3) -> int:
    """Settled entries in the bucket's call cache (not claims, not tries)."""
    pages = s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix="calls/")
    return sum(1 for page in pages for o in page.get("Contents", [])
               if o["Key"].endswith(".jsonl") and not o["Key"].endswith(".tries.jsonl"))


CALL_STORES = {"rejudge pass 2": "data/processed/rejudge/llm_calls_pass2.jsonl",
               "rejudge pass 3": "data/processed/rejudge/llm_calls_pass3.jsonl",
               "controls": "data/processed/controls/llm_calls.jsonl"}
"""The stages after the judge that call a model (rejudge passes 2-3; controls; the swap judge is the conf's heuristic)."""
MODEL_STAGES = ("pipelines/judge/dvc.yaml:judge@gcpc", "pipelines/judge/dvc.yaml:judge@tick",
                "pipelines/analysis/dvc.yaml:rejudge", "pipelines/analysis/dvc.yaml:controls")
OUTPUTS = ("data/processed", "figures", "metrics", "reports")


def _outputs(work: Path) -> dict[str, bytes]:
    """Every output of the pipeline, the report (figures/report.md) among them, and every dvc.lock."""
    out = {}
    for sub in OUTPUTS:
        for p in sorted((work / sub).rglob("*")):
            if p.is_file():
                out[p.relative_to(work).as_posix()] = p.read_bytes()
    for lock in [work / "dvc.lock", *sorted((work / "pipelines").glob("*/dvc.lock"))]:
        out[lock.relative_to(work).as_posix()] = lock.read_bytes()
    return out


def _differ(c: Path, a: Path) -> list[str]:
    """The outputs (and locks) in which clone c differs from a: none when c reproduced a byte for byte."""
    oc, oa = _outputs(c), _outputs(a)
    return sorted(k for k in oc.keys() | oa.keys() if oc.get(k) != oa.get(k))


def _runs(text: str, n: int = 12) -> set[str]:
    return {text[i:i + n] for i in range(len(text) - n + 1)}


def _troubleshooting(doc: str, fragment: str) -> list[str]:
    """The doc's Troubleshooting line for an error (the row's first cell holding `fragment`), as the fragments
    between its `…` elisions: a stage's real line must hold each, in order."""
    row = next(line for line in doc.split("## Troubleshooting", 1)[1].splitlines() if line.startswith("| `") and fragment in line)
    return [part for part in row.split("`")[1].split("…") if part.strip()]


def _holds(line: str, parts: list[str]) -> bool:
    at = 0
    for part in parts:
        at = line.find(part, at)
        if at < 0:
            return False
        at += len(part)
    return True


def test_docs_team_md_walked_on_three_clones(origin, store, tmp_path):
    endpoint, s3, log = store
    doc = DOC.read_text(encoding="utf-8")
    blocks = doc_blocks(doc)
    assert [b.step for b in blocks] == list(STORY), [b.step for b in blocks]
    for m in "ABC":
        for text in SUBSTITUTE(m, endpoint):
            assert text in doc, f"SUBSTITUTE replaces {text!r}, which docs/team.md no longer shows"
    counts: dict[str, object] = {}

    with FakeAnthropic() as server:
        machines = {}
        for m in "ABC":
            home = tmp_path / m
            home.mkdir()
            # the test's additions to each environment: the judge's server (the doc's config leaves base_url unset)
            # and a claim stale after 3 s (60 s by default: B takes over A's dead claims sooner)
            env = dict(_base_env(home), ANTHROPIC_BASE_URL=server.url, GCPC_CACHE_CLAIM_STALE_S="3")
            subprocess.run(["git", "clone", "-q", str(origin), str(home / "gcpc")], cwd=home, env=env, check=True,
                           capture_output=True, timeout=120)
            machines[m] = Machine(m, home, env)
        A, B, C = machines["A"], machines["B"], machines["C"]  # noqa: N806 - the doc's machine names
        walk = Walk(blocks, machines, endpoint)

        walk.step("install")
        walk.step("environment")
        assert A.env["GCPC_CACHE_DIR"] == f"s3://{BUCKET}/calls" and A.env["ANTHROPIC_API_KEY"] == KEYS["A"]
        assert B.env["AWS_ENDPOINT_URL"] == endpoint and C.env["AWS_SECRET_ACCESS_KEY"] == SECRET
        walk.step("lab")
        assert s3.head_bucket(Bucket=BUCKET)
        walk.step("judge")
        walk.step("pull")
        for machine in machines.values():
            params = yaml.safe_load((machine.work / "params.yaml").read_text())
            assert params["judge"]["model"] == "claude-sonnet-4-6" and params["judge"].get("base_url") is None
            assert "lab" in (machine.work / ".dvc" / "config").read_text()
        concurrency = params["judge"]["concurrency"]
        assert not _asked(server)

        # 1. A judges gcpc: the server answers half its requests, holds the rest in flight; A is killed once the
        #    answered half is stored (its call store and the bucket)
        block, [(_, command)] = walk.commands("interrupted")
        assert "killed" in block.note and block.machines == ("A",)
        n = len(params["data"]["population"]["trajectories"])  # data=smoke: the logs the arm judges, one request each
        seen = {"n": 0}

        def answer_half(body: str) -> Fault | None:
            with server.lock:
                seen["n"] += 1
                hold = seen["n"] > n // 2
            return Fault(kind="delay", seconds=120.0) if hold else None  # never answered: A is killed first

        server.fault_rules.append(answer_half)
        proc = A.start(command, start_new_session=True)
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and proc.poll() is None:
            if len(_asked(server)) == n and len(_stored_ok(A.work, "gcpc")) == n // 2 and _entries(s3) == n // 2:
                break
            time.sleep(0.1)
        alive = proc.poll() is None
        os.killpg(proc.pid, signal.SIGKILL)
        out = proc.communicate(timeout=60)[0]
        assert alive, f"A's stage ended before it was killed:\n{out[-3000:]}"
        walk.ran.append(("A", command))
        server.fault_rules.clear()
        assert sum(1 for _ in iter_jsonl(A.work / "data" / "processed" / "ingest" / "trajectories.jsonl")) == n
        a_asked, a_stored = _asked(server), _stored_ok(A.work, "gcpc")
        in_flight = len(a_asked) - len(a_stored)
        counts["1. A: dvc repro judge@gcpc, killed"] = {"requests": len(a_asked), "answers A stored": len(a_stored),
                                                       "in flight when killed": in_flight, "concurrency": concurrency}
        assert len(a_stored) == n // 2 and a_stored <= set(a_asked) and 1 <= in_flight <= concurrency

        # 0. (on A, its ingest and synthesis done) a typo in the bucket, a mistyped URL: the doc's Troubleshooting
        #    line, exit status 2, no request (issue 44)
        for url, fragment in ((f"s3://{BUCKET[:-2]}ba/calls", "does not exist"), (f"s3:/{BUCKET}/calls", "neither an s3:// URL")):
            wrong = A.python("-m", "gcpc.judging", "gcpc", GCPC_CACHE_DIR=url)
            last = wrong.stderr.strip().splitlines()[-1]
            parts = _troubleshooting(doc, fragment)
            assert wrong.returncode == 2 and _holds(last, parts), f"{last!r} is not the doc's {parts}:\n{wrong.stderr[-2000:]}"
            assert "Traceback" not in wrong.stderr and not (A.work / "s3:").exists()
        assert len(_asked(server)) == len(a_asked)

        # 2. B runs the same stage: only the keys A never stored reach the server; the first reply carries B's API key
        #    (an invalid answer, asked again within the key's tries): the canary of the end
        server.faults.append(Fault(kind="content", text=json.dumps({"verdicts": f"leaked {KEYS['B']}"})))
        start, t0 = len(server.requests), time.monotonic()
        walk.step("resume")
        b_asked = _asked(server, start)
        counts["2. B: dvc repro judge@gcpc"] = {"requests": len(b_asked), "distinct keys": len(set(b_asked)),
                                               "keys A had stored among them": len(set(b_asked) & a_stored),
                                               "seconds": round(time.monotonic() - t0, 1)}
        assert not set(b_asked) & a_stored, "B asked a key whose answer A had stored"
        assert len(set(b_asked)) == n - len(a_stored)
        assert len(b_asked) == len(set(b_asked)) + 1  # the canary's invalid reply, asked again once
        assert _stored_ok(B.work, "gcpc") == set(a_asked) | set(b_asked)

        # 3. A and B run the tick stage at once: the server holds every request until both machines have tried a
        #    claim, so each run found the store busy with the other's; no key twice, the same bytes
        block, todo = walk.commands("together")
        assert "at once" in block.note and [m.name for m, _ in todo] == ["A", "B"]
        start, at = len(server.requests), len(log.seen)
        gate = {"opened": False}

        def until_both_claim(body: str) -> None:
            deadline = time.monotonic() + 120
            while not (log.claimed("A", at) and log.claimed("B", at)) and time.monotonic() < deadline:
                time.sleep(0.05)
            gate["opened"] = gate["opened"] or (log.claimed("A", at) and log.claimed("B", at))
            return None

        server.fault_rules.append(until_both_claim)
        procs = [machine.start(command) for machine, command in todo]
        outs = [p.communicate(timeout=900)[0] for p in procs]
        server.fault_rules.clear()
        assert all(p.returncode == 0 for p in procs), "\n".join(o[-3000:] for o in outs)
        for (machine, command), p in zip(todo, procs):
            machine.absorb()
            walk.ran.append((machine.name, command))
        tick_asked, tick_keys = _asked(server, start), _stored_ok(A.work, "tick")
        counts["3. A and B: dvc repro judge@tick at once"] = {
            "requests": len(tick_asked), "distinct keys": len(set(tick_asked)), "keys in the arm": len(tick_keys),
            "asked by A": len(_asked(server, start, "A")), "asked by B": len(_asked(server, start, "B"))}
        assert gate["opened"], "the two runs did not overlap (one never tried a claim while the other's requests were held)"
        assert len(tick_asked) == len(set(tick_asked)), "a tick key reached the server twice"
        assert set(tick_asked) == tick_keys == _stored_ok(B.work, "tick")
        tick_dir = Path("data/processed/judge/tick")
        tick_files = sorted(f.relative_to(A.work) for f in (A.work / tick_dir).rglob("*") if f.is_file())
        assert tick_files and sorted(f.relative_to(B.work) for f in (B.work / tick_dir).rglob("*") if f.is_file()) == tick_files
        assert [f for f in tick_files if (A.work / f).read_bytes() != (B.work / f).read_bytes()] == []
        assert not (A.work / tick_dir / "llm_calls.shared.jsonl").exists()  # the other machine's answers are this stage's own
        locks = [yaml.safe_load((w / "pipelines" / "judge" / "dvc.lock").read_text())["stages"]["judge@tick"] for w in (A.work, B.work)]
        assert locks[0] == locks[1]

        # 4a. B runs the rest to the report: the judge arms from its call stores and the call cache, the stages after
        #     the judge that call it pay each of their keys once per try; commits and pushes. A repeat pass sends the
        #     very body of pass 1 (that is what measures the judge's noise) under a key of its own, so the server's body
        #     digests repeat across passes by design
        start, t0 = len(server.requests), time.monotonic()
        judge_keys = {k for arm in ("gcpc", "tick") for k, _ in _tries(B.work, f"data/processed/judge/{arm}/llm_calls.jsonl")}
        walk.step("assemble")
        rest = _asked(server, start)
        tries = {name: _tries(B.work, path) for name, path in CALL_STORES.items()}
        paid = {t: rid for found in tries.values() for t, rid in found.items() if t[0] not in judge_keys}
        counts["4a. B: dvc repro (the rest), dvc push --run-cache, git add/commit/push"] = {
            "requests": len(rest), "keys paid": len({k for k, _ in paid}),
            **{f"keys of {name}": len({k for k, _ in found}) for name, found in tries.items()},
            "keys the judge stage had paid, from the cache": len({t[0] for f in tries.values() for t in f if t[0] in judge_keys}),
            "seconds": round(time.monotonic() - t0, 1)}
        assert all(tries.values()), f"a stage after the judge called nothing: { {k: len(t) for k, t in tries.items()} }"
        assert all(k not in judge_keys for found in list(tries.values())[:2] for k, _ in found)  # passes 2-3: new keys
        assert sorted(rest) == sorted(paid.values()), "a key of the stages after the judge reached the server twice"
        assert (B.work / "figures" / "report.md").is_file() and (B.work / "metrics" / "headline.json").is_file()

        # 4b. C pulls: every output with 0 requests, dvc repro runs nothing, every byte B's
        start = len(server.requests)
        block, todo = walk.commands("reproduce")
        for machine, command in todo:
            proc = machine.run(command)
            walk.ran.append((machine.name, command))
            if command.split("#")[0].strip() == "dvc repro":
                assert "Running stage" not in proc.stdout + proc.stderr, proc.stdout[-3000:]
        assert json.loads(C.run("dvc status --json").stdout or "{}") == {}
        assert not _differ(C.work, B.work), _differ(C.work, B.work)
        # ... and its pulled call stores alone answer every request of the stages that call a model (cache off)
        C.run(f"GCPC_CACHE_DIR=off dvc repro -f -s {' '.join(MODEL_STAGES)}")
        counts["4b. C: git pull, dvc pull --run-cache, dvc repro; the model stages again, call cache off"] = {
            "requests": len(_asked(server, start))}
        assert not _asked(server, start)
        assert not _differ(C.work, B.work), _differ(C.work, B.work)

        # 4c. an experiment: B runs one (a scoring variant: no new request) and pushes it; C pulls and applies it
        start = len(server.requests)
        walk.step("experiment")
        walk.step("apply")
        assert json.loads(C.run("dvc status --json").stdout or "{}") == {}
        counts["4c. B: dvc exp run + dvc exp push; C: dvc exp pull + dvc exp apply"] = {"requests": len(_asked(server, start))}
        assert not _asked(server, start)
        assert not _differ(C.work, B.work) and (C.work / "params.yaml").read_bytes() == (B.work / "params.yaml").read_bytes()
        assert yaml.safe_load((C.work / "params.yaml").read_text())["scoring"]["endpoint"] is False
        counts["total requests"] = len(_asked(server))
        counts["distinct request bodies"] = len(set(_asked(server)))
        walk.done()
        counts["commands walked"] = {"run": len(walk.ran), "skipped": [f"{m}: {c} ({why})" for m, c, why in walk.skipped]}

    # 5. canary over every object in the bucket
    objects, masked, sizes = 0, 0, {}
    needles = set().union(*(_runs(k) for k in KEYS.values())) | _runs(SECRET)
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET):
        for obj in page.get("Contents", []):
            data = s3.get_object(Bucket=BUCKET, Key=obj["Key"])["Body"].read()
            if data[:2] == b"\x1f\x8b":
                data = gzip.decompress(data)
            text = data.decode("utf-8", errors="replace")
            objects += 1
            part = sizes.setdefault(obj["Key"].split("/")[0], [0, 0])
            part[0] += 1
            part[1] += obj["Size"]
            masked += "[REDACTED]" in text
            leaked = [n for n in needles if n in text]
            assert not leaked, f"{obj['Key']} holds {leaked[0]!r}, a run of an API key or the store's secret"
    counts["objects in the bucket"] = {prefix: {"objects": o, "bytes": b} for prefix, (o, b) in sorted(sizes.items())}
    assert masked >= 1, "the reply that carried the key reached no object (the canary proves nothing)"
    assert sizes.get("calls", [0])[0] and sizes.get("dvc", [0])[0]
    print(json.dumps(counts, indent=1))
    if os.environ.get("GCPC_TEAM_COUNTS"):
        Path(os.environ["GCPC_TEAM_COUNTS"]).write_text(json.dumps(counts, indent=1) + "\n")
