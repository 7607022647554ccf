"""A submission's per-sample log: the model's outputs and the judgements, the data sets' own texts replaced by their
hashes (their licences differ), gzipped with a fixed timestamp; read back with every size bounded (a gzip bomb or a
runaway line stops with one message, not a MemoryError)."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import zlib
from pathlib import Path

from .. import BenchmarkError
from ..identity import sha256_json
from ..kinds import KINDS
from .base import MAX_SAMPLE_LINE, MAX_SAMPLES, MAX_SAMPLES_BYTES, MAX_VALUES, json_values, strict_json
from .privacy import scrub

# a sample's copies of the data set's own texts; the data sets' licences differ, so submissions keep hashes only
DATA_KEYS = ("input", "prompt")
def _strings(value) -> set[str]:
    if isinstance(value, dict):
        return set().union(*(_strings(v) for v in value.values())) if value else set()
    if isinstance(value, list):
        return set().union(*(_strings(v) for v in value)) if value else set()
    return {value} if isinstance(value, str) and len(value) >= 8 else set()


def strip_sample(sample: dict, task_texts: frozenset[str] = frozenset()) -> dict:
    """The data set's texts replaced by their hash, also where a sample repeats one (a dialogue's opening turn is
    the seed sentence); the model's outputs and the judgements kept; errors scrubbed of private values.
    `task_texts` (task_strings: the task definition's own, such as its labels) stay as they are where the data set
    holds them too: an answer "Offending User" is the model's label, not a copy of the record's category."""
    texts = set().union(*(_strings(sample.get(k)) for k in DATA_KEYS)) - task_texts
    said = {f for kind in KINDS.values() for f in kind.said_fields}

    def go(value):
        if isinstance(value, dict):
            return {k: go(v) for k, v in value.items()}
        if isinstance(value, list):
            return [go(v) for v in value]
        if isinstance(value, str) and value in texts:
            return "sha256:" + hashlib.sha256(value.encode("utf-8")).hexdigest()
        return value

    out = {}
    for k, v in sample.items():
        if k in DATA_KEYS:
            out[f"{k}_sha256"] = sha256_json(v)
        elif k == "error" and isinstance(v, str):
            out[k] = scrub(v)
        elif k in said:  # what the models said (labels elsewhere stay as they are)
            out[k] = go(v)
        else:
            out[k] = v
    return out


def task_strings(task_config) -> frozenset[str]:
    """Every string of a task's definition (its labels, aliases, templates): the suite's own text, never hashed."""
    return frozenset(_strings(task_config))


def write_samples(samples: list[dict], path: Path) -> str:
    """gzip with a fixed timestamp, so the same samples always give the same file and hash."""
    raw = "".join(json.dumps(s, ensure_ascii=False) + "\n" for s in samples).encode("utf-8")
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0) as gz:
        gz.write(raw)
    path.write_bytes(buf.getvalue())
    return hashlib.sha256(buf.getvalue()).hexdigest()


def read_samples(path: Path, fields: frozenset[str] | None = None) -> list[dict]:
    """Every sample of a samples file (a submission's gzipped one, or a run's own samples.jsonl); BenchmarkError naming
    the file and line when one is not a sample (with `fields`: holds a field its kind does not write), or when the
    file is larger, decompressed, than any task's can be (bytes, lines or JSON values, each checked before a line is
    parsed)."""
    samples = []
    read = values = 0
    opener = gzip.open if str(path).endswith(".gz") else open
    try:
        with opener(path, "rt", encoding="utf-8") as f:
            while line := f.readline(MAX_SAMPLE_LINE):
                read, values = read + len(line), values + json_values(line)
                if not line.endswith("\n") and len(line) >= MAX_SAMPLE_LINE:
                    raise BenchmarkError(f"{path}: line {len(samples) + 1} is longer than "
                                         f"{MAX_SAMPLE_LINE // 2**20} MiB")
                if read > MAX_SAMPLES_BYTES or len(samples) >= MAX_SAMPLES:
                    raise BenchmarkError(f"{path}: more than {MAX_SAMPLES_BYTES // 2**20} MiB or {MAX_SAMPLES:,} "
                                         "lines once decompressed; no task's samples are that large")
                if values > MAX_VALUES:
                    raise BenchmarkError(f"{path}: more than {MAX_VALUES:,} JSON values by line {len(samples) + 1}; "
                                         "no task's samples are that large")
                if line.strip():
                    samples.append(_sample(line, f"{path}: line {len(samples) + 1}", fields))
    except (OSError, EOFError, UnicodeDecodeError, zlib.error) as e:  # gzip and text errors
        raise BenchmarkError(f"{path}: unreadable: {e}") from None
    return samples


def _sample(line: str, where: str, fields: frozenset[str] | None) -> dict:
    """One line of a samples file as a sample: strict JSON, an object with a string id (and only `fields`)."""
    try:
        sample = strict_json(line)
    except ValueError as e:
        raise BenchmarkError(f"{where}: {e}") from None
    if not isinstance(sample, dict) or not isinstance(sample.get("id"), str):
        raise BenchmarkError(f"{where} is not a sample (an object with a string id)")
    unknown = sorted(set(sample) - fields) if fields is not None else []
    if unknown:
        raise BenchmarkError(f"{where}: {unknown[0][:40]}: not a field this task's samples hold "
                             f"({', '.join(sorted(fields))})")
    return sample
