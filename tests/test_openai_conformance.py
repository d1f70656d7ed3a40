"""Issue 38, item 4: the `openai` provider's requests against a mock generated from OpenAI's published OpenAPI description.

The description is `../shared/specs/openai-openapi/openapi.yaml` (OpenAI's openai-openapi repository, read-only); the
mock is Prism (`@stoplight/prism-cli`, pinned in `.ci/prism/package.json` + `package-lock.json`; `.ci/run` installs it
with `npm ci --prefix .ci/prism`), run with `--errors`: a request the description rejects is answered 422 and logged
as a violation. The provider's sync path (chat completions in every structured-output mode, sync and async clients)
and batch path (file upload, batch create, poll, output retrieval, and every batch entry's body as the chat
completions request it stands for) go to the mock; the test fails on any request Prism's validator rejects.

Two preparations of the description, both stated here because they change what Prism does, not what it checks:
* Only the five operations the provider calls are kept, with every component they reference (transitively): Prism
  starts in ~3 s instead of ~30 s, and an operation's validation depends only on its own schemas.
* `nullable: true` without a `type` (3 places, OpenAPI 3.0 syntax inside this 3.1 document) becomes
  `anyOf: [schema, {type: null}]`. Prism's validator (Ajv) refuses to compile a schema holding it, and Prism then
  SKIPS body validation silently (stoplightio/prism `validateAgainstSchema` wraps the compile in `O.tryCatch`):
  unprepared, Prism accepts `{}` as a chat completions request. The negative control below keeps that from
  passing unnoticed.

Known, outside the request: GET /files/{file_id}/content declares only an `application/json` response, while the
SDK asks for `Accept: application/binary` (the API returns the JSONL bytes), so Prism answers 406 after its
validator passed the request; the test checks the validator's verdict for it in Prism's log.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import socket
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SPEC = Path(os.environ.get("GCPC_OPENAPI_SPEC") or ROOT.parent / "shared" / "specs" / "openai-openapi" / "openapi.yaml")
"""../shared/specs/openai-openapi/openapi.yaml beside the repository (GCPC_OPENAPI_SPEC names another copy)."""
PRISM = ROOT / ".ci" / "prism" / "node_modules" / ".bin" / "prism"
OPERATIONS = {"/chat/completions": "post", "/files": "post", "/files/{file_id}/content": "get", "/batches": "post",
              "/batches/{batch_id}": "get"}
TEMPLATES = [(re.compile(r"^/files/[^/]+/content$"), "GET /files/{file_id}/content"),
             (re.compile(r"^/batches/[^/]+$"), "GET /batches/{batch_id}")]
MODES = [("json_schema", True), ("json_schema", False), ("json_object", True), ("prompt", True)]


def prism_binary() -> Path:
    if shutil.which("node") is None:
        pytest.skip("node is not installed: the conformance mock (Prism, npm @stoplight/prism-cli) needs it")
    found = os.environ.get("GCPC_PRISM") or (str(PRISM) if PRISM.exists() else shutil.which("prism"))
    if not found:
        pytest.skip("Prism is not installed: npm ci --prefix .ci/prism (what .ci/run does) or set GCPC_PRISM")
    return Path(found)


def prepared_description(dest: Path) -> tuple[Path, int]:
    """The provider's operations of the description, with `nullable` Ajv can compile (module docstring)."""
    import yaml

    spec = yaml.load(SPEC.read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    paths = {}
    for path, method in OPERATIONS.items():
        item = spec["paths"][path]
        paths[path] = {method: item[method], **({"parameters": item["parameters"]} if "parameters" in item else {})}
    needed: set[tuple[str, str]] = set()

    def walk(node):
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/components/"):
                _, _, kind, name = ref.split("/", 3)
                if (kind, name) not in needed:
                    needed.add((kind, name))
                    walk(spec["components"][kind][name])
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(paths)
    components: dict = {}
    for kind, name in sorted(needed):
        components.setdefault(kind, {})[name] = spec["components"][kind][name]
    components["securitySchemes"] = spec["components"]["securitySchemes"]
    fixed = 0

    def nullable(node):
        nonlocal fixed
        if isinstance(node, dict):
            node = {k: (v if k in ("example", "examples") else nullable(v)) for k, v in node.items()}
            if node.get("nullable") is True and "type" not in node:
                fixed += 1
                node.pop("nullable")
                return {"anyOf": [node, {"type": "null"}]}
            return node
        if isinstance(node, list):
            return [nullable(v) for v in node]
        return node

    doc = {k: spec[k] for k in ("openapi", "info", "servers", "security")} | {
        "paths": nullable(paths), "components": nullable(components)}
    dest.write_text(json.dumps(doc), encoding="utf-8")
    return dest, fixed


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def prism(tmp_path_factory):
    binary = prism_binary()
    if not SPEC.is_file():
        pytest.skip(f"OpenAI's OpenAPI description is not at {SPEC} (../shared/specs/openai-openapi/)")
    tmp = tmp_path_factory.mktemp("prism")
    description, fixed = prepared_description(tmp / "openai-operations.json")
    assert fixed >= 1  # the description still needs the nullable preparation (else drop it)
    port = free_port()
    log = (tmp / "prism.log").open("w", encoding="utf-8")
    proc = subprocess.Popen([str(binary), "mock", "--errors", "-h", "127.0.0.1", "-p", str(port), str(description)],
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + 120
    while "Prism is listening" not in (tmp / "prism.log").read_text(encoding="utf-8"):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail("Prism did not start:\n" + (tmp / "prism.log").read_text(encoding="utf-8")[-3000:])
        time.sleep(0.2)
    yield {"url": f"http://127.0.0.1:{port}", "log": tmp / "prism.log"}
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
    log.close()


def endpoint(method: str, path: str) -> str:
    for pattern, name in TEMPLATES:
        if pattern.match(path) and name.startswith(method):
            return name
    return f"{method} {path}"


def validator_verdicts(log: Path) -> list[tuple[str, str]]:
    """(endpoint, 'passed' | violation text) per request, in order, from Prism's log."""
    out: list[tuple[str, str]] = []
    current = None
    for line in log.read_text(encoding="utf-8").splitlines():
        m = re.search(r"\[HTTP SERVER\] (\w+) (\S+) .*Request received", line)
        if m:
            current = endpoint(m.group(1).upper(), m.group(2).split("?")[0])
            continue
        if current and "[VALIDATOR]" in line:
            if "passed the validation rules" in line:
                out.append((current, "passed"))
                current = None
            elif "✖" in line or "Violation" in line:
                out.append((current, line.split("[VALIDATOR]", 1)[1].strip()))
                current = None
    return out


def provider_for(prism_url: str, recorded: list, **over):
    """The real OpenAIProvider against the mock; every HTTP exchange of its SDK clients recorded (method, path, status)."""
    import httpx
    import openai

    from gcpc.llm.providers.openai_provider import OpenAIProvider
    from gcpc.llm.settings import LLMSettings

    def hook(response: httpx.Response) -> None:
        recorded.append((endpoint(response.request.method, response.request.url.path), response.status_code))

    async def ahook(response: httpx.Response) -> None:
        hook(response)

    cfg = {"provider": "openai", "model": "gpt-4.1-mini", "base_url": prism_url, "max_tokens": 512, "seed": 0,
           "temperature": 0.0, "timeout_s": 30, "retry": {"max_retries": 0}, "api_key_required": False} | over
    provider = OpenAIProvider(LLMSettings.model_validate(cfg))
    provider.make_sync_client = lambda: openai.OpenAI(
        api_key="sk-test", base_url=prism_url, max_retries=0, timeout=provider.timeout(),
        http_client=openai.DefaultHttpxClient(event_hooks={"response": [hook]}))
    provider.make_async_client = lambda: openai.AsyncOpenAI(
        api_key="sk-test", base_url=prism_url, max_retries=0, timeout=provider.timeout(),
        http_client=openai.DefaultAsyncHttpxClient(event_hooks={"response": [ahook]}))
    return provider


def requests_for(mode: str, n: int = 2):
    """Real gcpc requests: a judge request (ChecklistJudgment) and a synthesis request (GeneratedChecklist)."""
    from gcpc.llm import LLMRequest, Message
    from gcpc.llm.schemas import ChecklistJudgment, GeneratedChecklist

    sampling = {"max_tokens": 512, "temperature": 0.0, "seed": 0, "structured_output": mode}
    out = []
    for i in range(n):
        out.append(LLMRequest(
            purpose="judgment:conformance", provider="openai", model="gpt-4.1-mini",
            messages=[Message(role="system", content="Rules.\n## Checklist\n- [i01] wrote out.txt\n- [i02] ran tests",
                              cache_prefix=True),
                      Message(role="user", content=f"## Execution log\n[0] TOOL_OUTPUT trajectory {i}")],
            output_schema="ChecklistJudgment", json_schema=ChecklistJudgment.model_json_schema(), sampling=sampling,
            template_hash="t"))
    out.append(LLMRequest(
        purpose="synthesis:conformance", provider="openai", model="gpt-4.1-mini",
        messages=[Message(role="system", content="Write a checklist.", cache_prefix=True),
                  Message(role="user", content="## Task\nCreate out.txt.")],
        output_schema="GeneratedChecklist", json_schema=GeneratedChecklist.model_json_schema(), sampling=sampling,
        template_hash="t"))
    return out


def test_the_mock_rejects_what_the_description_rejects(prism):
    """Negative control: without it a mock that validated nothing would let every test below pass."""
    import httpx

    bad = [{}, {"model": "m", "messages": "not a list"},
           {"model": "m", "messages": [{"role": "user", "content": "x"}], "response_format": {"type": "yaml"}}]
    for body in bad:
        r = httpx.post(prism["url"] + "/chat/completions", json=body, headers={"Authorization": "Bearer sk-test"})
        assert r.status_code == 422, (body, r.status_code, r.text[:300])
    r = httpx.post(prism["url"] + "/batches", json={"input_file_id": "f", "endpoint": "/v1/chat/completions",
                                                    "completion_window": "1h"}, headers={"Authorization": "Bearer sk-test"})
    assert r.status_code == 422, r.text[:300]


def test_sync_and_batch_requests_conform(prism, capsys):
    import httpx

    from gcpc.llm.base import ProviderError

    recorded: list[tuple[str, int]] = []
    before = len(validator_verdicts(prism["log"]))
    for mode, strict in MODES:
        provider = provider_for(prism["url"], recorded, structured_output=mode, json_schema_strict=strict,
                                prompt_cache_key=True, reasoning_effort="low")
        for request in requests_for(mode):
            assert provider.complete(request).text is not None
        asyncio.run(_async_one(provider, requests_for(mode, 1)[0]))
        provider.close()
    # batch: upload + create, poll, output retrieval
    provider = provider_for(prism["url"], recorded)
    batch_requests = requests_for("json_schema", 3)
    batch_id = provider.submit_batch(batch_requests)
    ended, counts = provider.batch_status(batch_id)
    assert any(k.startswith("status:") for k in counts)
    with pytest.raises(ProviderError, match="406"):  # module docstring: Accept: application/binary (validator passed)
        provider.batch_results(batch_id)
    # each batch entry's body is a chat completions request: the description must accept it too
    for line in (provider.batch_line(r) for r in batch_requests):
        assert line["url"] == "/v1/chat/completions" and line["method"] == "POST"
        r = httpx.post(prism["url"] + "/chat/completions", json=line["body"], headers={"Authorization": "Bearer sk-test"})
        recorded.append(("POST /chat/completions (batch entry body)", r.status_code))
    provider.close()

    verdicts = validator_verdicts(prism["log"])[before:]
    rejected = [(e, v) for e, v in verdicts if v != "passed"]
    assert not rejected, rejected
    assert len(verdicts) == len(recorded), (verdicts, recorded)
    unexpected = [(e, s) for e, s in recorded if s >= 400 and not (e == "GET /files/{file_id}/content" and s == 406)]
    assert not unexpected, unexpected
    per_endpoint = Counter(e for e, _ in recorded)
    assert per_endpoint["POST /chat/completions"] == len(MODES) * 4  # 3 sync + 1 async request per mode
    assert per_endpoint["POST /files"] == per_endpoint["POST /batches"] == 1
    assert per_endpoint["GET /batches/{batch_id}"] == 2 and per_endpoint["GET /files/{file_id}/content"] >= 1
    with capsys.disabled():
        print("\nconformance: requests per endpoint, all passed Prism's validator: " +
              ", ".join(f"{e}: {n}" for e, n in sorted(per_endpoint.items())))


async def _async_one(provider, request) -> None:
    try:
        assert (await provider.acomplete(request)).text is not None
    finally:
        await provider.aclose()
