"""Loading a task's records: from `data_root` when given, else from the task's remote source through `datasets`."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from . import BenchmarkError
from .identity import file_sha256, records_sha256, sha256_json
from .paths import BUNDLED_DIR, cache_root
from .templates import render

_BUILDERS = {"json": "json", "jsonl": "json", "csv": "csv", "parquet": "parquet"}


def where_to_put(relative: str) -> str:
    """Where a data file that is not here goes, in one phrase."""
    return (f"put the file at DIR/{relative} and set data_root=DIR on the command line (or export "
            "BENCHMARK_DATA_ROOT=DIR)")


@dataclass
class Records:
    items: list[dict]  # each with an "id" and the source fields (+ derived fields)
    source: str  # where they came from, without private paths
    split: str
    sha256: str  # of the full split as loaded, before `limit`
    malformed: list[dict] = field(default_factory=list)  # {"id", "error"} for skipped records


def _builder_kwargs(data) -> dict:
    """A JSON file whose rows sit under one key of a top-level object: `data.json_field`; a CSV file with comment
    lines above its header: `data.skip_lines`."""
    key = getattr(data, "json_field", None)  # replay configs have none
    skip = getattr(data, "skip_lines", 0)
    return {**({"field": key} if key else {}), **({"skiprows": skip} if skip else {})}


def data_file(data_root: str, relative: str, where: str) -> Path:
    """`relative` under data_root; a path that would leave it (absolute, or with ..) is refused, whoever wrote it."""
    parts = Path(relative).parts
    if not parts or Path(relative).is_absolute() or ".." in parts:
        raise BenchmarkError(f"{where}: path {relative!r} must be a relative path inside data_root (no leading / "
                             "and no ..)")
    return Path(data_root).expanduser().resolve() / relative


def _unreadable(path: Path, fmt: str) -> str | None:
    """Why a local text data file cannot be read, in words (empty, not UTF-8, JSON cut short), or None."""
    if path.stat().st_size == 0:
        return "the file is empty"
    if fmt not in ("json", "jsonl", "csv") or path.stat().st_size > 64 * 2**20:  # large files: datasets says
        return None
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        return f"not UTF-8 text (byte {raw[e.start]:#04x} at offset {e.start})"
    if fmt == "json" and text.lstrip()[:1] in ("[", "{"):
        try:
            json.loads(text)
        except json.JSONDecodeError as e:
            cut = " (its last line: truncated?)" if e.lineno >= text.rstrip().count("\n") + 1 else ""
            return f"not valid JSON: {e.msg} at line {e.lineno}, column {e.colno}{cut}"
    return None


def bundled_file(relative: str) -> Path | None:
    """The copy of a data file that ships inside the package (bundled/: DiaSafety's test split, the default task's
    data, with its licence), or None."""
    parts = Path(relative).parts
    if not parts or Path(relative).is_absolute() or ".." in parts:
        return None
    path = BUNDLED_DIR / relative
    return path if path.is_file() else None


def local_file(data_root: str | None, relative: str, where: str) -> tuple[Path, str] | None:
    """Where a data file is on this machine, and the source a card names: under data_root, else the package's own
    copy; None where neither holds it."""
    if data_root and (path := data_file(data_root, relative, where)).is_file():
        return path, f"data_root:{relative}"
    if (path := bundled_file(relative)) is not None:
        return path, f"bundled:{relative}"
    return None


def load_rows(data, data_root: str | None, where: str) -> tuple[list[dict], str]:
    if data.format not in _BUILDERS:
        raise BenchmarkError(f"{where}: data.format={data.format!r} is not one of {sorted(_BUILDERS)}")
    if (found := local_file(data_root, data.path, where)) is not None:
        rows = _local_rows(found[0], data, where)
        for part in getattr(data, "parts", None) or []:
            if (more := local_file(data_root, part, where)) is None:
                raise BenchmarkError(f"{where}: data.parts: {part} is not here: {where_to_put(part)}")
            rows += _local_rows(more[0], data, where)
        return rows, found[1]
    if data_root:
        raise BenchmarkError(f"{where}: data file not found: {data_file(data_root, data.path, where)} "
                             f"(data_root={data_root}, path={data.path})")
    import datasets

    builder = _BUILDERS[data.format]
    if data.url:
        try:
            ds = datasets.load_dataset(builder, data_files=data.url, split="train", **_builder_kwargs(data))
        except Exception as e:  # offline, moved file, proxy...: one message with the way out
            raise BenchmarkError(
                f"{where}: could not fetch {data.url} ({type(e).__name__}) and no data_root is set: "
                f"{where_to_put(data.path)}"
            ) from None
        return ds.to_list(), data.url
    if data.hub:
        try:
            ds = datasets.load_dataset(data.hub, data.hub_config, split=data.hub_split or data.split)
        except Exception as e:
            raise BenchmarkError(
                f"{where}: could not load hub dataset {data.hub} ({type(e).__name__}) and no data_root "
                f"is set: {where_to_put(data.path)}"
            ) from None
        return ds.to_list(), f"hub:{data.hub}"
    raise BenchmarkError(f"{where}: {data.path} is not here and the task names no remote source: "
                         f"{where_to_put(data.path)}")


def _local_rows(path: Path, data, where: str) -> list[dict]:
    """A local file's rows as `datasets` reads them, kept by the file's content (and the reader's version) in the
    suite's cache folder: the same bytes give the same rows without loading `datasets` again. Rows that JSON cannot
    hold exactly (dates, bytes) are not kept. A kept file that was changed changes the rows, so the records' hash no
    longer matches the task's pin and the run stops."""
    from importlib.metadata import version

    name = sha256_json([file_sha256(path), data.format, _builder_kwargs(data), version("datasets")])
    kept = cache_root() / "records" / f"{name}.json"
    try:
        return json.loads(kept.read_bytes())
    except (OSError, ValueError):
        pass
    why = _unreadable(path, data.format)  # said in words before `datasets` says it its own way
    if why:
        raise BenchmarkError(f"{where}: could not read {path} as {data.format}: {why}")
    import datasets

    try:
        ds = datasets.load_dataset(_BUILDERS[data.format], data_files=str(path), split="train",
                                   **_builder_kwargs(data))
    except ValueError as e:
        if "corresponds to no data" in str(e):  # what `datasets` says of a file with no rows
            return []
        raise BenchmarkError(f"{where}: could not read {path} as {data.format}: {e}") from None
    except Exception as e:
        cause = e.__cause__ or e.__context__ or e
        raise BenchmarkError(f"{where}: could not read {path} as {data.format}: {type(cause).__name__}: "
                             f"{str(cause)[:300]}") from None
    rows = ds.to_list()
    text = json.dumps(rows, ensure_ascii=False, default=repr)
    if json.loads(text) == rows:
        try:
            kept.parent.mkdir(parents=True, exist_ok=True)
            partial = kept.with_suffix(f".{os.getpid()}.partial")
            partial.write_text(text, encoding="utf-8")
            os.replace(partial, kept)
        except OSError:
            pass  # a read-only cache: the rows are read again next time
    return rows


def record_id(row: dict, index: int, id_field: str | None) -> str:
    return str(row.get(id_field)) if id_field else str(index)


def with_canonical_fields(row: dict, fields) -> dict:
    """The row with each canonical field filled from the first of its other names present (ignoring case)."""
    lower = {str(k).lower(): k for k in row}
    out = dict(row)
    for name, others in fields.items():
        if out.get(name) is not None:
            continue
        for other in [name, *others]:
            key = lower.get(str(other).lower())
            if key is not None and row[key] is not None:
                out[name] = row[key]
                break
    return out


MAX_JOIN_BYTES = 256 << 20  # a joined file is read whole


def joined_entries(join, data_root: str | None, where: str) -> dict:
    """The entries of a data.join file, by key."""
    where = f"{where}: data.join"
    if data_root:
        path = data_file(data_root, join.path, where)
        if not path.is_file():
            raise BenchmarkError(f"{where}: file not found: {path} (data_root={data_root}, path={join.path})")
    elif join.url:
        from datasets.utils.file_utils import cached_path

        try:
            path = Path(cached_path(join.url))
        except Exception as e:
            raise BenchmarkError(f"{where}: could not fetch {join.url} ({type(e).__name__}) and no data_root is set: "
                                 f"{where_to_put(join.path)}") from None
    else:
        raise BenchmarkError(f"{where}: {join.path} is not here and no data.join.url is given: "
                             f"{where_to_put(join.path)}")
    if path.stat().st_size > MAX_JOIN_BYTES:
        raise BenchmarkError(f"{where}: {path} has {path.stat().st_size:,} bytes, more than {MAX_JOIN_BYTES:,}")
    if join.column is not None:
        return _csv_entries(path, join.column, where)
    try:
        entries = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise BenchmarkError(f"{where}: {path} is not UTF-8 JSON: {e}") from None
    if not isinstance(entries, dict) or not all(isinstance(v, dict) for v in entries.values()):
        raise BenchmarkError(f"{where}: {path} must hold one JSON object: key -> an object of fields")
    return entries


def _csv_entries(path: Path, column: str, where: str) -> dict:
    import csv

    try:
        with open(path, encoding="utf-8", newline="") as f:
            rows = list(csv.DictReader(f))
    except (UnicodeDecodeError, csv.Error) as e:
        raise BenchmarkError(f"{where}: {path} is not UTF-8 CSV: {e}") from None
    if rows and column not in rows[0]:
        raise BenchmarkError(f"{where}.column={column!r} is not a column of {path} ({', '.join(rows[0])})")
    return {str(row[column]): {k: v for k, v in row.items() if k != column} for row in rows}


def with_joined(rows: list[dict], join, entries: dict) -> list[dict]:
    return [{**entries.get(str(row.get(join.key)), {}), **row} for row in rows]


def melted(rows: list[dict], melt, id_field: str | None, where: str) -> list[dict]:
    """One row per row and column of data.melt, its id ROW:COLUMN (the row's id: id_field, or its position)."""
    if not melt.columns:
        raise BenchmarkError(f"{where}: data.melt.columns names no column")
    absent = [c for c in melt.columns if rows and c not in rows[0]]
    if absent:
        raise BenchmarkError(f"{where}: data.melt.columns {absent} are not columns of the data "
                             f"({', '.join(map(str, rows[0]))})")
    out = []
    for index, row in enumerate(rows):
        keep = {k: v for k, v in row.items() if k not in melt.columns}
        for column in melt.columns:
            out.append({**keep, melt.name: column, melt.value: row.get(column),
                        "id": f"{record_id(row, index, id_field)}:{column}"})
    return out


def load_records(task, data_root: str | None) -> Records:
    rows, source = load_rows(task.data, data_root, f"task {task.name}")
    if task.data.join is not None:  # before hashing: the pinned hash covers both files
        rows = with_joined(rows, task.data.join, joined_entries(task.data.join, data_root, f"task {task.name}"))
    id_field = task.data.id_field
    if task.data.melt is not None:
        rows, id_field = melted(rows, task.data.melt, id_field, f"task {task.name}"), "id"
    sha = records_sha256(rows)
    items, malformed = [], []
    seen, combos = set(), set()
    for index, row in enumerate(rows):
        if task.data.fields:
            row = with_canonical_fields(row, task.data.fields)
        if task.data.distinct:  # e.g. one record per (category, context) of a file with several responses each
            combo = tuple(str(row.get(f)) for f in task.data.distinct)
            if combo in combos:
                continue
            combos.add(combo)
        rid = record_id(row, index, id_field)
        missing = [f for f in task.data.required if row.get(f) is None]
        if rid in seen:
            malformed.append({"id": rid, "error": f"duplicate id {rid!r}"})
            continue
        seen.add(rid)
        if missing:
            malformed.append({"id": rid, "error": f"missing field(s) {missing}"})
            continue
        item = dict(row)
        for name, template in task.derived.items():
            item[name] = render(template, {**item, "options": task.options}, f"task {task.name}: derived.{name}")
        item["id"] = rid
        items.append(item)
    return Records(items=items, source=source, split=task.data.split, sha256=sha, malformed=malformed)
