"""Real Inspect AI logs, made offline: tiktoken's o200k file from a wheel, a scripted mockllm agent, a bash sandbox.

Inspect counts tokens with tiktoken's `o200k_base` encoding, which tiktoken downloads on first use.
`bpe-openai` 0.1.4 (in the `inspect` extra) ships the identical file (`bpe_openai/data/o200k_base.tiktoken.gz`;
unpacked, its sha256 is the hash tiktoken expects); `offline_tiktoken` places it in a TIKTOKEN_CACHE_DIR under the
name tiktoken looks for (the sha1 of the encoding's URL), so nothing is downloaded.

`make_logs` runs a small real eval: four samples, Inspect's `basic_agent` with the `bash` tool in the `local`
sandbox, `mockllm/model` scripted per sample with `ModelOutput.for_tool_call`, and a scorer that checks the
sample's file in the sandbox (two pass, two fail) and reports per-test results in its metadata.
"""

from __future__ import annotations

import gzip
import hashlib
import os
from pathlib import Path
from typing import Any

import pytest

O200K_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"


def need_inspect() -> None:
    """Skip (with the reason) when the optional extra is not installed."""
    pytest.importorskip("inspect_ai", reason="inspect-ai is not installed (pip install -e \".[inspect]\")")
    pytest.importorskip("bpe_openai", reason="bpe-openai is not installed (pip install -e \".[inspect]\"): "
                                             "it ships tiktoken's o200k_base file for offline token counts")


def offline_tiktoken(cache_dir: Path) -> Path:
    """Put o200k_base where tiktoken looks for it and point TIKTOKEN_CACHE_DIR there; returns the file."""
    import bpe_openai

    cache_dir.mkdir(parents=True, exist_ok=True)
    dest = cache_dir / hashlib.sha1(O200K_URL.encode()).hexdigest()
    if not dest.is_file():
        data = gzip.decompress((Path(bpe_openai.__file__).parent / "data" / "o200k_base.tiktoken.gz").read_bytes())
        if hashlib.sha256(data).hexdigest() != O200K_SHA256:
            raise RuntimeError("bpe_openai's o200k_base.tiktoken.gz is not the file tiktoken expects (sha256 differs)")
        dest.write_bytes(data)
    os.environ["TIKTOKEN_CACHE_DIR"] = str(cache_dir)
    return dest


SAMPLE_FIELDS = ("id", "input", "command", "check", "tests")
SAMPLES: list[dict[str, Any]] = [dict(zip(SAMPLE_FIELDS, row, strict=True)) for row in (
    ("greeting", "Create the file greeting.txt containing the line hello world.",
     "printf 'hello world\\n' > greeting.txt && cat greeting.txt", "grep -qx 'hello world' greeting.txt",
     ["test_greeting_file"]),
    ("numbers", "Create the file numbers.txt containing the numbers 1 to 5, one per line.",
     "seq 1 3 > numbers.txt && cat numbers.txt", "test \"$(cat numbers.txt)\" = \"$(seq 1 5)\"", ["test_numbers_file"]),
    ("marker", "Create the directory build and an empty file build/done.marker inside it.",
     "mkdir -p build && touch build/done.marker && ls build", "test -f build/done.marker", ["test_marker_exists"]),
    ("script", "Run the script run.sh that prints OK and save its output to result.txt.",
     "bash run.sh > result.txt", "grep -qx OK result.txt", ["test_result_ok"]),
)]
"""greeting and marker pass their check, numbers and script fail (script's command fails; Inspect's bash tool shows its stderr as the output)."""


def make_task() -> Any:
    from inspect_ai import Task
    from inspect_ai.dataset import Sample
    from inspect_ai.scorer import CORRECT, INCORRECT, Score, accuracy, scorer
    from inspect_ai.solver import basic_agent
    from inspect_ai.tool import bash
    from inspect_ai.util import sandbox

    @scorer(metrics=[accuracy()])
    def file_check():  # noqa: ANN202 - Inspect scorer factory
        async def score(state, target):  # noqa: ANN001, ANN202
            result = await sandbox().exec(["bash", "-c", state.metadata["check"]])
            status = "passed" if result.success else "failed"
            return Score(value=CORRECT if result.success else INCORRECT, explanation=f"check {status}",
                         metadata={"tests": {t: status for t in state.metadata["tests"]}})
        return score

    dataset = [Sample(id=s["id"], input=s["input"], target=s["check"],
                      metadata={"check": s["check"], "tests": s["tests"]}) for s in SAMPLES]
    return Task(dataset=dataset, solver=basic_agent(tools=[bash(timeout=60)]), scorer=file_check(), sandbox="local",
                name="file_tasks")


def scripted_agent() -> Any:
    """mockllm/model answering each sample from its script: first its bash command, then `submit`."""
    from inspect_ai.model import ModelOutput, get_model

    by_input = {s["input"]: s for s in SAMPLES}

    def answer(messages, tools, tool_choice, config):  # noqa: ANN001, ANN202
        user = next(m.text for m in messages if m.role == "user")
        script = by_input[user]
        done = sum(m.role == "assistant" for m in messages)
        if done == 0:
            return ModelOutput.for_tool_call("mockllm/model", "bash", {"command": script["command"]})
        return ModelOutput.for_tool_call("mockllm/model", "submit", {"answer": "done"})

    return get_model("mockllm/model", custom_outputs=answer)


def make_logs(log_dir: Path, cache_dir: Path) -> Path:
    """Run the eval once; returns the written `.eval` log."""
    offline_tiktoken(cache_dir)
    from inspect_ai import eval as inspect_eval

    logs = inspect_eval(make_task(), model=scripted_agent(), log_dir=str(log_dir), display="none", max_samples=1,
                        log_format="eval")
    assert logs[0].status == "success", logs[0].error
    return Path(logs[0].location)


def main(argv: list[str] | None = None) -> int:
    """`python tests/inspect_support.py LOG_DIR`: the scripted eval (README, "Inspect AI"); prints the log written."""
    import argparse
    import tempfile

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("log_dir", type=Path)
    parser.add_argument("--tiktoken-cache", type=Path, default=Path(tempfile.gettempdir()) / "gcpc-tiktoken",
                        help="where o200k_base is placed for Inspect's offline token counts")
    args = parser.parse_args(argv)
    print(make_logs(args.log_dir, args.tiktoken_cache))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
