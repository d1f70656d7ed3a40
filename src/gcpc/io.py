"""Deterministic file I/O shared by all stages: same records in, same bytes out.

Every output is written whole or not at all: to a unique temporary file beside the target, then
renamed over it (`atomic_path`), so a killed stage never leaves a truncated file for the next
reader, and two processes never collide on one temporary name. Text written through here passes
through `gcpc.secrets.redact` (API keys never reach an output, even inside a model answer).
A JSONL reader refuses a file whose last line has no newline (a truncated file) instead of
returning its prefix.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import tempfile
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from gcpc.secrets import active, redact

M = TypeVar("M", bound=BaseModel)


def canonical_json(obj: Any) -> str:
    """Stable JSON: sorted keys, no whitespace variance, UTF-8 kept readable."""
    if isinstance(obj, BaseModel):
        obj = obj.model_dump(mode="json")
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def canonical_json_parts(parts: dict[str, str]) -> str:
    """canonical_json of a dict given as its keys and each value's canonical_json (same bytes)."""
    return "{" + ",".join(json.dumps(k, ensure_ascii=False) + ":" + v for k, v in sorted(parts.items())) + "}"


_SHARED_JSON: OrderedDict[int, list[Any]] = OrderedDict()
SHARED_JSON_HELD = 64


def _shared_entry(obj: Any) -> list[Any]:
    """[obj, its JSON-mode value or None, its canonical JSON or None], for one of the last SHARED_JSON_HELD
    values. Each entry holds its object, so the id it is found by is not reused while it is there."""
    entry = _SHARED_JSON.get(id(obj))
    if entry is None or entry[0] is not obj:
        entry = [obj, None, None]
        _SHARED_JSON[id(obj)] = entry
        while len(_SHARED_JSON) > SHARED_JSON_HELD:
            _SHARED_JSON.popitem(last=False)
    _SHARED_JSON.move_to_end(id(obj))
    return entry


def jsonable_shared(obj: Any) -> Any:
    """The value as model_dump(mode="json") converts an `Any` field, converted once for the consecutive
    requests that hold it as one object (a trajectory's judge-visible events, under every TICK
    question); they then hold one converted object too. Treat it as read-only."""
    entry = _shared_entry(obj)
    if entry[1] is None:
        from pydantic_core import to_jsonable_python

        entry[1] = to_jsonable_python(obj)
    return entry[1]


def canonical_json_shared(obj: Any) -> str:
    """canonical_json(jsonable_shared(obj)), encoded once for the requests that share the object."""
    entry = _shared_entry(obj)
    if entry[2] is None:
        entry[2] = canonical_json(jsonable_shared(obj))
    return entry[2]


FLOAT_DIGITS = 12
"""Significant digits of every float a stage writes to JSON, JSONL, CSV, Markdown or Parquet (`stable_float`).

A float computed by summation carries its last bits from the summation order, which a library or CPU may
change (BLAS kernels, pairwise vs sequential sums): about 1e-16 relative. Rounded to 12 significant digits
such a change moves no byte unless the value lies within 1e-16 of a rounding boundary (about one value in
10,000 that differs at all); the cause is fixed where it was found (docs/reproducibility.md)."""


def stable_float(x: float) -> float:
    """x rounded to FLOAT_DIGITS significant digits (correctly rounded, the same on any machine); NaN and
    infinities as they are. The one rounding every output writer and table formatter applies."""
    x = float(x)
    if x != x or x in (math.inf, -math.inf) or x == 0.0:
        return x
    return float(format(x, f".{FLOAT_DIGITS}g"))


def float_text(x: float, spec: str) -> str:
    """The text of a float in a table or CSV cell: `format(stable_float(x), spec)` (e.g. spec '.3f', '.6g'),
    so two runs whose x differs only in its last bits print the same characters."""
    return format(stable_float(x), spec)


def stable_floats(obj: Any) -> Any:
    """A JSON-ready value with every float through `stable_float` (dicts, lists and tuples copied, the rest kept)."""
    kind = type(obj)
    if kind is float:
        return stable_float(obj)
    if kind is dict:
        return {k: stable_floats(v) for k, v in obj.items()}
    if kind is list or kind is tuple:
        return [stable_floats(v) for v in obj]
    if isinstance(obj, float):  # numpy float64 and other float subclasses
        return stable_float(obj)
    if isinstance(obj, dict):
        return {k: stable_floats(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [stable_floats(v) for v in obj]
    return obj


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def content_hash(obj: Any) -> str:
    return sha256_text(canonical_json(obj))


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """A unique temporary path to write; renamed onto `path` when the block ends without an error."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


LARGE_RECORD = 4_000_000
"""Characters of rendered event text above which a record is encoded in pieces (same bytes, no second copy)."""


def _size_hint(rec: Any) -> int:
    events = getattr(rec, "events", None)
    return sum(len(getattr(e, "text", "")) for e in events) if isinstance(events, list) else 0


def _write_events_streamed(fh: Any, rec: BaseModel) -> None:
    """`canonical_json(rec) + "\\n"`, written field by field and event by event (same bytes)."""
    top = stable_floats(rec.model_dump(mode="json", exclude={"events"}))
    fh.write("{")
    for i, key in enumerate(sorted([*top, "events"])):
        fh.write(("," if i else "") + json.dumps(key, ensure_ascii=False) + ":")
        if key != "events":
            fh.write(canonical_json(top[key]))
            continue
        fh.write("[")
        for j, event in enumerate(rec.events):  # type: ignore[attr-defined]
            if j:
                fh.write(",")
            _write_object_streamed(fh, stable_floats(event.model_dump(mode="json")))
        fh.write("]")
    fh.write("}\n")


STRING_PIECE = 1_000_000
"""Characters of one long string encoded at a time (JSON escapes each character alone, so pieces concatenate)."""


def _write_object_streamed(fh: Any, obj: dict[str, Any]) -> None:
    """`canonical_json(obj)` for a flat-enough dict, with long string values written in pieces (same bytes)."""
    fh.write("{")
    for i, key in enumerate(sorted(obj)):
        value = obj[key]
        fh.write(("," if i else "") + json.dumps(key, ensure_ascii=False) + ":")
        if isinstance(value, str) and len(value) > STRING_PIECE:
            fh.write('"')
            for k in range(0, len(value), STRING_PIECE):
                fh.write(json.dumps(value[k:k + STRING_PIECE], ensure_ascii=False)[1:-1])
            fh.write('"')
        else:
            fh.write(canonical_json(value))
    fh.write("}")


def write_jsonl(path: str | Path, records: Iterable[Any]) -> int:
    # a very long log is written in pieces (identical bytes to canonical_json) instead of one string as
    # large as the log; only when no secret is registered, since redaction needs the whole text
    with atomic_path(path) as tmp, tmp.open("w", encoding="utf-8", newline="\n") as fh:
        return write_jsonl_lines(fh, records)


def iter_jsonl(path: str | Path) -> Iterator[dict[str, Any]]:
    path = Path(path)
    with path.open(encoding="utf-8", newline="\n") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.endswith("\n"):
                raise ValueError(f"{path}:{lineno}: truncated file (the last line has no newline); "
                                 f"re-run the stage that writes it")
            if not line.strip():
                continue
            try:
                yield json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{lineno}: invalid JSON line ({exc.msg})") from exc
            except RecursionError:
                raise ValueError(f"{path}:{lineno}: JSON nested too deeply") from None


def iter_models(path: str | Path, model: type[M]) -> Iterator[M]:
    """The records of a JSONL file as `model`s, one at a time (a stage that streams holds one chunk, not the file)."""
    for _, rec in iter_models_sized(path, model):
        yield rec


def iter_models_sized(path: str | Path, model: type[M]) -> Iterator[tuple[int, M]]:
    """(bytes of the line, the record as `model`) for each record of a JSONL file, one at a time."""
    path = Path(path)
    with path.open("rb") as fh:
        for i, line in enumerate(fh, 1):
            if not line.endswith(b"\n"):
                raise ValueError(f"{path}:{i}: truncated file (the last line has no newline); re-run the stage that writes it")
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{i}: invalid JSON line ({exc.msg})") from exc
            except RecursionError:
                raise ValueError(f"{path}:{i}: JSON nested too deeply") from None
            try:
                yield len(line), model.model_validate(rec)
            except Exception as exc:  # pydantic.ValidationError carries the field names
                raise ValueError(f"{path}: record {i} is not a valid {model.__name__}: {exc}") from exc


def read_models(path: str | Path, model: type[M]) -> list[M]:
    return list(iter_models(path, model))


def write_jsonl_lines(fh: Any, records: Iterable[Any]) -> int:
    """Append records to an open text file exactly as `write_jsonl` writes them (for a file written in pieces):
    canonical JSON with floats through `stable_float`."""
    n = 0
    for rec in records:
        if _size_hint(rec) > LARGE_RECORD and not active():
            _write_events_streamed(fh, rec)
        else:
            fh.write(redact(canonical_json(stable_floats(rec.model_dump(mode="json") if isinstance(rec, BaseModel) else rec))) + "\n")
        n += 1
    return n


def write_json(path: str | Path, obj: Any) -> None:
    """Indented JSON, sorted keys, floats through `stable_float`."""
    if isinstance(obj, BaseModel):
        obj = obj.model_dump(mode="json")
    write_text(path, json.dumps(stable_floats(obj), sort_keys=True, indent=2, ensure_ascii=False) + "\n")


def write_text(path: str | Path, text: str) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(redact(text), encoding="utf-8", newline="\n")


def write_bytes(path: str | Path, data: bytes) -> None:
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)


def stable_float_array(values: Any) -> Any:
    """A float array with every value through `stable_float` (NaN kept), as float64."""
    import numpy as np

    return np.array([stable_float(v) for v in np.asarray(values, dtype=float).tolist()], dtype=float)


def _stable_float_columns(frame: Any) -> Any:
    """The frame with its float columns through `stable_float` (a copy when there are any)."""
    import pandas as pd

    positions = [i for i, dtype in enumerate(frame.dtypes) if pd.api.types.is_float_dtype(dtype)]
    if not positions:
        return frame
    frame = frame.copy()
    for i in positions:
        col = frame.iloc[:, i]
        frame.isetitem(i, pd.Series(stable_float_array(col.to_numpy(dtype=float, na_value=float("nan"))),
                                    index=frame.index, dtype=col.dtype))
    return frame


def _csv_cells(col: Any, float_format: str) -> list[str] | None:
    """One column as the strings `DataFrame.to_csv(float_format=..., na_rep='')` writes, or None
    for a column this fast path does not handle (the caller then uses pandas)."""
    import numpy as np
    import pandas as pd

    dtype = col.dtype
    if pd.api.types.is_bool_dtype(dtype) and not col.isna().any():
        return ["True" if v else "False" for v in col.to_numpy(dtype=bool).tolist()]
    if pd.api.types.is_float_dtype(dtype):
        return ["" if v != v else float_format % v for v in col.to_numpy(dtype=float, na_value=float("nan")).tolist()]
    if pd.api.types.is_integer_dtype(dtype) and not col.isna().any():
        return [str(v) for v in col.to_numpy(dtype=np.int64).tolist()]
    if pd.api.types.is_string_dtype(dtype) or dtype == object:
        na = col.isna().to_numpy()
        vals = col.astype(object).to_numpy().tolist()
        if not all(isinstance(v, str) for v, missing in zip(vals, na.tolist(), strict=True) if not missing):
            return None
        return ["" if missing else v for v, missing in zip(vals, na.tolist(), strict=True)]
    return None


def write_csv(frame: Any, path: str | Path, float_format: str = "%.6g") -> None:
    """`frame.to_csv(path, index=False, float_format=..., lineterminator="\\n")` of the frame with its floats
    through `stable_float`, byte for byte (tests compare), from whole columns: pandas' writer converts Arrow
    string columns cell by cell, about 1 s for RQ3's 56,000 pair deltas at 20,000 trajectories."""
    import csv
    import io

    frame = _stable_float_columns(frame)
    cols = [_csv_cells(frame[c], float_format) for c in frame.columns] if frame.columns.is_unique else [None]
    with atomic_path(path) as tmp:
        if any(c is None for c in cols):
            frame.to_csv(tmp, index=False, float_format=float_format, lineterminator="\n")
            return
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n", quoting=csv.QUOTE_MINIMAL)
        writer.writerow([str(c) for c in frame.columns])
        writer.writerows(zip(*cols, strict=True) if cols else [])
        tmp.write_text(buf.getvalue(), encoding="utf-8", newline="")


_VERSION_KEYS = ("creator", "pandas_version")  # library versions pandas records in a Parquet file's metadata


def write_parquet(path: str | Path, data: Any, **options: Any) -> None:
    """A DataFrame (index dropped) or pyarrow Table as Parquet, the same bytes for the same rows under any
    pandas: columns and rows in the order given (callers sort), strings as Arrow `string` (pandas 3 would
    write `large_string`), and pandas' schema metadata without the library versions it records (no
    timestamps are written; the footer's `created_by` still names the pyarrow version, which uv.lock pins).
    Floats keep every bit: Parquet carries values between stages, and rounding them would move later
    computations (a difference of two rounded scores is no longer the difference of the scores).
    `options` go to pyarrow.parquet.write_table (e.g. compression)."""
    import json as _json

    import pyarrow as pa
    import pyarrow.parquet as pq

    if isinstance(data, pa.Table):
        table = data
    else:
        table = pa.Table.from_pandas(data, preserve_index=False)
    fields = []
    for f in table.schema:
        if pa.types.is_large_string(f.type):
            f = f.with_type(pa.string())
        fields.append(f)
    metadata = dict(table.schema.metadata or {})
    if b"pandas" in metadata:
        pandas_meta = _json.loads(metadata[b"pandas"])
        for key in _VERSION_KEYS:
            pandas_meta.pop(key, None)
        metadata[b"pandas"] = _json.dumps(pandas_meta, sort_keys=True).encode()
    schema = pa.schema(fields, metadata=metadata or None)
    columns = [col.cast(f.type) if col.type != f.type else col for col, f in zip(table.columns, schema, strict=True)]
    table = pa.Table.from_arrays(columns, schema=schema)
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp, **options)
