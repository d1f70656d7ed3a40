"""Every params.yaml key a stage reads is declared in that stage's `params:` in dvc.yaml.

dvc.yaml lists per stage only the params it reads, so dvc.lock stays small (DVC re-parses and
rewrites the whole lock after every stage; bench/README, repro). Declaring too little is a
correctness bug: a changed key would leave that stage's output stale. This test runs each stage's
entry point (`python -m ...` from dvc.yaml, in-process through runpy) on the demo corpus with
`gcpc.params.load_params` returning a recording mapping, then checks each recorded dotted key
against the stage's declared params (a declared section covers all its subkeys).

What counts as reading a key: `[]`, `.get`, `in` (also for a key that is absent: adding it later
must re-run the stage, so its parent must be declared); iterating, `.keys/.items/.values`, `len`,
`==`, copying, pickling or validating a section into a pydantic model reads the whole section;
a list value is read whole. A section that is fetched but never looked into counts as read whole
(it went somewhere the recorder cannot see); `section or {}` alone is not a read.

The reads are those of the demo's code paths: a branch the demo does not take may read more, so
where a stage's branches depend on a section's contents, declare the section.
Figures are drawn but not rendered and the bootstrap is shortened, to keep the test at ~20 s.
"""

from __future__ import annotations

import os
import runpy
import shlex
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]


class Recorder:
    """The dotted keys read (`reads`) and the sections handed out (`fetched`) during one stage run."""

    def __init__(self) -> None:
        self.reads: set[str] = set()
        self.fetched: set[str] = set()
        self.where: dict[str, str] = {}  # whole-section read -> the first source line that did it (for the message)

    def covered(self) -> set[str]:
        """The reads, plus every fetched section with no recorded read inside it."""
        out = set(self.reads)
        for sec in self.fetched:
            if not any(r == sec or r.startswith(sec + ".") for r in self.reads):
                out.add(sec)
        return out


class RecordingDict(dict):
    """The real params as a tree of dicts (nested sections are RecordingDicts too, so a stage that changes a
    section in place behaves as with the loaded params) that records every key read into `rec`."""

    def __init__(self, data: dict, rec: Recorder, prefix: str = "") -> None:
        self._rec, self._prefix = rec, prefix
        super().__init__({k: RecordingDict(v, rec, self._key(k)) if isinstance(v, dict) and not isinstance(v, RecordingDict)
                          else v for k, v in data.items()})

    def _key(self, k) -> str:
        return f"{self._prefix}.{k}" if self._prefix else str(k)

    def _whole(self) -> None:
        key = self._prefix or "<all>"
        self._rec.reads.add(key)
        if key not in self._rec.where:
            import traceback

            frames = [f for f in traceback.extract_stack()[:-2] if f.filename != __file__ and "/copy.py" not in f.filename]
            self._rec.where[key] = f"{frames[-1].filename}:{frames[-1].lineno}" if frames else "?"

    def _child(self, k, v):
        key = self._key(k)
        if isinstance(v, RecordingDict):
            self._rec.fetched.add(key)
        else:
            self._rec.reads.add(key)  # leaf, or a list: read whole
        return v

    def __getitem__(self, k):
        if not dict.__contains__(self, k):
            self._rec.reads.add(self._key(k))
        return self._child(k, dict.__getitem__(self, k))

    def get(self, k, default=None):
        if dict.__contains__(self, k):
            return self._child(k, dict.__getitem__(self, k))
        self._rec.reads.add(self._key(k))
        return default

    def __contains__(self, k) -> bool:
        self._rec.reads.add(self._key(k))
        return dict.__contains__(self, k)

    def __iter__(self):
        self._whole()
        return dict.__iter__(self)

    def keys(self):
        self._whole()
        return dict.keys(self)

    def items(self):
        self._whole()
        return [(k, self._child(k, v)) for k, v in dict.items(self)]

    def values(self):
        return [v for _, v in self.items()]

    def __len__(self) -> int:
        self._whole()
        return dict.__len__(self)

    def __bool__(self) -> bool:
        # `section or {}` tells only whether it is empty; a stage that then reads a declared key would
        # fail in DVC itself (missing param) if it were emptied, and one that reads nothing is a whole read
        return dict.__len__(self) > 0

    def __eq__(self, other) -> bool:
        self._whole()
        return dict.__eq__(self, other)

    __hash__ = None

    def plain(self) -> dict:
        """A deep plain copy, recording nothing (for the instrumentation itself)."""
        return {k: v.plain() if isinstance(v, RecordingDict) else v for k, v in dict.items(self)}

    def copy(self):
        self._whole()
        return self.plain()

    def __reduce_ex__(self, protocol):
        self._whole()
        return (dict, (self.plain(),))

    def __deepcopy__(self, memo):
        import copy

        self._whole()
        return copy.deepcopy(self.plain(), memo)


def declared_params() -> dict[str, tuple[str, set[str]]]:
    """Stage name -> (cmd, declared params.yaml keys), as DVC resolves the dvc.yaml files (foreach, ${...}), in an
    order DVC could run them (upstream first)."""
    import networkx as nx
    from dvc.dependency.param import ParamsDependency
    from dvc.repo import Repo

    out = {}
    with Repo(str(ROOT)) as repo:
        graph = repo.index.graph  # an edge runs from a stage to a stage it depends on
        for stage in reversed(list(nx.lexicographical_topological_sort(graph, key=lambda s: s.addressing))):
            keys: set[str] = set()
            for dep in stage.deps:
                if isinstance(dep, ParamsDependency):
                    assert Path(dep.fs_path) == ROOT / "params.yaml", f"{stage.addressing}: params from {dep.fs_path}"
                    keys |= set(dep.params)
            out[stage.addressing] = (stage.cmd, keys)
    return out


def uncovered(reads: set[str], declared: set[str]) -> set[str]:
    return {r for r in reads if not any(r == d or r.startswith(d + ".") for d in declared)}


def run_stage(cmd: str, rec: Recorder, params_path: Path, monkeypatch) -> None:
    """Run `python -m MOD ARGS` in this process with load_params recording into `rec`."""
    import gcpc.params

    argv = shlex.split(cmd)
    assert argv[:2] == ["python", "-m"], f"dvc.yaml: {cmd!r} is not `python -m ...`"
    real = gcpc.params.load_params

    def recording_load(path=params_path):
        return RecordingDict(real(path), rec)

    with monkeypatch.context() as m:
        m.setattr(gcpc.params, "load_params", recording_load)
        m.setattr(sys, "argv", [argv[2], *argv[3:]])
        try:
            runpy.run_module(argv[2], run_name="__main__", alter_sys=True)
        except SystemExit as exc:
            assert exc.code in (None, 0), f"{cmd}: exited with {exc.code}"


def _patch_pydantic(monkeypatch) -> None:
    """pydantic-core reads a dict subclass through the C API, past the overrides: count it as a whole read."""
    import pydantic

    original = pydantic.BaseModel.model_validate.__func__

    def model_validate(cls, obj, *args, **kwargs):
        if isinstance(obj, RecordingDict):
            obj._whole()
        return original(cls, obj, *args, **kwargs)

    monkeypatch.setattr(pydantic.BaseModel, "model_validate", classmethod(model_validate))


def _patch_resolve_analysis(monkeypatch) -> None:
    """`resolve_analysis` merges the whole `analysis` section over its DEFAULTS (`dict(cfg)`, then `.items()`), which
    alone would count as reading all of it; what a stage depends on is what it reads from the merged result (and
    the checks the merge makes on it). So the merge's result keeps recording under the section's prefix: a key read
    from it counts whether its value came from params.yaml or from a default (an absent key needs its parent)."""
    import builtins

    import gcpc.analysis.common as common

    real_merge = common._merge

    def merge(base, over):
        if isinstance(over, RecordingDict):
            return RecordingDict(real_merge(base, over.plain()), over._rec, over._prefix)
        return real_merge(base, over)

    class _SameRecording(type):  # `dict` inside common.py only: dict(recording) is the recording itself
        def __call__(cls, *args, **kwargs):
            if len(args) == 1 and not kwargs and isinstance(args[0], RecordingDict):
                return args[0]
            return builtins.dict(*args, **kwargs)

        def __instancecheck__(cls, obj) -> bool:
            return isinstance(obj, builtins.dict)

        def __subclasscheck__(cls, sub) -> bool:
            return issubclass(sub, builtins.dict)

    class PlainOrSame(builtins.dict, metaclass=_SameRecording):
        pass

    monkeypatch.setattr(common, "_merge", merge)
    monkeypatch.setattr(common, "dict", PlainOrSame, raising=False)


def _skip_rendering(monkeypatch) -> None:
    """Figures are drawn (their code runs) but not rendered to PNG/PDF: a one-byte file stands in. Rendering reads
    no params and is most of the figure stages' time."""
    from matplotlib.figure import Figure

    def savefig(self, fname, *args, **kwargs):
        Path(fname).write_bytes(b"-")  # not empty: the report stage refuses an empty figure

    monkeypatch.setattr(Figure, "savefig", savefig)


SPEED_ONLY = {
    # read, but by design not declared (README, Pipeline): it changes speed only, never an output byte
    "ingest.workers": "the number of processes reading trials (tests/test_ingest_parallel.py: same bytes)",
}

ABSENT_TOP_LEVEL = {
    # read but not in params.yaml, so DVC cannot track them (a declared param that is missing fails `dvc repro`)
    "llm": "gcpc.analysis.figures.judge_label looks for an older `llm.judge` layout before `judge`",
}


def test_recorder_sees_reads():
    rec = Recorder()
    p = RecordingDict({"a": {"b": 1, "c": {"d": 2}}, "e": [1], "f": {"g": 1}, "h": {"i": 1}, "j": {"k": 1}}, rec)
    p["f"]["g"] = 2  # changes the section in place, as with a plain dict (the write is not a read)
    assert p.plain()["f"] == {"g": 2}
    assert (p["j"] or {}).get("k") == 1  # truthiness is not a read of the whole section
    assert p["a"]["b"] == 1 and p.get("e") == [1] and "zz" not in p["a"] and p["a"].get("yy", 3) == 3
    dict(p["a"]["c"])  # a copy reads the whole section
    p["h"]  # fetched, never looked into: whole
    assert rec.covered() == {"a.b", "e", "a.zz", "a.yy", "a.c", "a.c.d", "h", "f", "j.k"}
    assert uncovered(rec.covered(), {"a", "h", "f"}) == {"e", "j.k"}
    assert uncovered({"analysis.bootstrap.seed"}, {"analysis.bootstrap"}) == set()
    assert uncovered({"analysis.bootstrapx"}, {"analysis.bootstrap"}) == {"analysis.bootstrapx"}


def test_pydantic_validation_reads_the_whole_section(monkeypatch):
    rec = Recorder()
    params = RecordingDict({"judging": {"max_event_chars": 4000, "layout": "x"}}, rec)
    from gcpc.judging.view import ViewSettings

    _patch_pydantic(monkeypatch)
    judging = params["judging"]
    assert judging["layout"] == "x"
    ViewSettings.model_validate(judging)  # reads max_event_chars through the C API
    assert "judging" in uncovered(rec.covered(), {"judging.layout"})


def _demo_work(tmp_path: Path) -> tuple[Path, dict, Path]:
    """A work folder with the demo corpus, prompts and params.yaml (bootstrap shortened): (folder, params, path)."""
    work = tmp_path / "work"
    (work / "data").mkdir(parents=True)
    os.symlink(ROOT / "data" / "demo", work / "data" / "demo")
    os.symlink(ROOT / "prompts", work / "prompts")
    os.symlink(ROOT / "conf", work / "conf")  # the estimate stage prices with conf/llm/<judge>.yaml
    params = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))
    params["analysis"]["bootstrap"]["n_resamples"] = 50  # which keys a stage reads does not depend on the count
    params_path = work / "params.yaml"
    params_path.write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")
    return work, params, params_path


needs_demo = pytest.mark.skipif(not (ROOT / "data" / "demo").is_dir(), reason="the demo corpus data/demo is not in this checkout")


@needs_demo
def test_a_stage_declaring_too_little_is_caught(tmp_path, monkeypatch):
    """The ingest stage reads the whole `data` section (and the speed-only ingest.workers): declaring less is flagged."""
    work, _, params_path = _demo_work(tmp_path)
    monkeypatch.chdir(work)
    rec = Recorder()
    run_stage("python -m gcpc.corpus", rec, params_path, monkeypatch)
    assert uncovered(rec.covered(), {"data"}) == {"ingest.workers"}  # seen; exempt by SPEED_ONLY
    assert uncovered(rec.covered(), {"data.root", "ingest"}) >= {"data.benchmark", "data.tasks_dir", "data.trials_dirs"}


@needs_demo
def test_every_stage_declares_the_params_it_reads(tmp_path, monkeypatch):
    stages = declared_params()
    work, params, params_path = _demo_work(tmp_path)
    _patch_pydantic(monkeypatch)
    _patch_resolve_analysis(monkeypatch)
    _skip_rendering(monkeypatch)
    monkeypatch.chdir(work)

    problems, reads_by_stage = [], {}
    for name, (cmd, declared) in stages.items():
        rec = Recorder()
        run_stage(cmd, rec, params_path, monkeypatch)
        reads_by_stage[name] = rec.covered()
        missing = {k for k in uncovered(rec.covered(), declared)
                   if k not in SPEED_ONLY and not (k in ABSENT_TOP_LEVEL and k not in params)}
        missing = {k for k in missing if not any(k.startswith(a + ".") for a in missing)}  # the outermost only
        if missing:
            at = {k: rec.where[k] for k in sorted(missing) if k in rec.where}
            problems.append(f"{name} ({cmd}): reads {sorted(missing)} not declared in dvc.yaml params {sorted(declared)}"
                            + (f" (whole sections read at {at})" if at else ""))
    if os.environ.get("GCPC_PARAMS_READS"):  # developer aid: what each stage reads, to write its dvc.yaml params
        import json

        Path(os.environ["GCPC_PARAMS_READS"]).write_text(
            json.dumps({k: sorted(v) for k, v in reads_by_stage.items()}, indent=1) + "\n" + "\n".join(problems),
            encoding="utf-8")
    assert not problems, "\n".join(problems)
