"""Every content hash a score card or a cache key holds, each defined once here. All are sha256, in hex.

- sha256_json: the canonical hash of plain data (sorted-key JSON, UTF-8, no spaces); the others build on it.
- file_sha256: a file's bytes (data files, weights, a card's samples file).
- essential: a config without the values its schema gives by default, what a config hash is taken of, so a field
  added later (its default keeping today's behaviour) leaves every published hash as it was.
- model_sha256: what decides a model's answers (card: model.config_sha256; the response cache's key).
- task_sha256: what decides a task's results (card: task.config_sha256).
- records_sha256: a data split's rows as loaded (card: dataset.sha256; a task's pinned.sha256).
- reference_sha256: what samples take from the data alone, ids, gold labels and groups (a task's
  pinned.reference_sha256, which a published card's samples must give).
- card_sha256: a card without its verification block (what a verifier's signature is bound to).
- request_key: one request to one model (the response cache's key).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import typing
from typing import Dict, List

from omegaconf import OmegaConf

from .config import ModelConfig

# model fields that change how a run is executed but not what the model answers
_NOT_HASHED = ("name", "metadata", "prices", "tokenizer", "batch_size", "num_concurrent", "max_retries", "retry_wait",
               "timeout", "device")


def sha256_json(obj) -> str:
    blob = json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def file_sha256(path, read=None) -> str:
    """`read`: told the size of each block as it is hashed (a progress bar)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            h.update(block)
            if read is not None:
                read(len(block))
    return h.hexdigest()


def model_sha256(cfg) -> str:
    """The model config's essential values, less _NOT_HASHED (a replay's recorded file and a detector's weights
    count through the `sha256` the run pinned in the config: models.pin_content)."""
    data = essential(OmegaConf.to_container(cfg, resolve=True), ModelConfig)
    for key in _NOT_HASHED:
        data.pop(key, None)
    return sha256_json(data)


def task_sha256(task: dict, schema: type) -> str:
    """The task config's essential values under its schema (composition.task_schema())."""
    return sha256_json(essential(task, schema))


def records_sha256(rows: list[dict]) -> str:
    """The rows in file order, one sorted-key JSON line each (not sha256_json: the form published pins were made in)."""
    h = hashlib.sha256()
    for row in rows:
        h.update(json.dumps(row, sort_keys=True, ensure_ascii=False, default=str).encode("utf-8"))
        h.update(b"\n")
    return h.hexdigest()


def reference_sha256(fields: tuple, samples: list[dict]) -> str:
    """Each sample's id with its `fields` (a kind's reference_fields), in id order."""
    return sha256_json(sorted([s["id"], {k: s.get(k) for k in fields}] for s in samples))


def card_sha256(card: dict) -> str:
    return sha256_json({k: v for k, v in card.items() if k != "verification"})


def request_key(model_sha: str, op: str, payload) -> str:
    return sha256_json([model_sha, op, payload])


def essential(data, cls):
    """A config (plain data) without the values its schema class would give by default, in nested configs and in
    lists and maps of them too: what a config's hash is taken of, so a field added to the schema later (with a
    default that keeps today's behaviour) leaves every existing config's hash, and its cached answers, as they are."""
    if not isinstance(data, dict) or not dataclasses.is_dataclass(cls):
        return data
    hints = typing.get_type_hints(cls)
    out = {}
    for f in dataclasses.fields(cls):
        if f.name not in data:
            continue
        value = data[f.name]
        default = _field_default(f)
        if dataclasses.is_dataclass(default):
            default = dataclasses.asdict(default)
        if value == default:
            continue
        out[f.name] = _essential_value(value, hints[f.name])
    out.update({k: v for k, v in data.items() if k not in {f.name for f in dataclasses.fields(cls)}})
    return out


def _field_default(f):
    return f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default


def _essential_value(value, hint):
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    inner = [a for a in (hint, *args) if dataclasses.is_dataclass(a)]
    if inner:
        return essential(value, inner[0]) if isinstance(value, dict) else _without_added(value, inner[0])
    origin, sub = typing.get_origin(hint), typing.get_args(hint)
    if origin in (list, List) and sub and dataclasses.is_dataclass(sub[0]) and isinstance(value, list):
        return [essential(v, sub[0]) for v in value]
    if origin in (dict, Dict) and len(sub) == 2 and dataclasses.is_dataclass(sub[1]) and isinstance(value, dict):
        return {k: essential(v, sub[1]) for k, v in value.items()}
    return value


def _without_added(items, cls):
    """The items of a list of configs (judging steps, seed sources) as they were always hashed, whole, less the
    fields added to their schema since (marked ADDED) where those hold their default."""
    if not isinstance(items, list):
        return items
    return [_item_without_added(item, cls) if isinstance(item, dict) else item for item in items]


def _item_without_added(item: dict, cls) -> dict:
    """One config less its ADDED fields that hold their default, in the configs it holds too (a seed's data)."""
    hints = typing.get_type_hints(cls)
    out = {}
    for f in dataclasses.fields(cls):
        if f.name not in item:
            continue
        value = item[f.name]
        if f.metadata.get("added") and value == _field_default(f):
            continue
        inner = [a for a in (hints[f.name], *typing.get_args(hints[f.name])) if dataclasses.is_dataclass(a)]
        out[f.name] = _item_without_added(value, inner[0]) if inner and isinstance(value, dict) else value
    out.update({k: v for k, v in item.items() if k not in {f.name for f in dataclasses.fields(cls)}})
    return out
