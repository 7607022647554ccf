"""Submitted model configs are data, never code: known keys only, literal values only, no tags, aliases, `_target_`
or interpolation, backend arguments limited to serving settings, remote code only when a maintainer allows it, and
no path that leads outside the folders a run reads (a replay's file stays inside data_root; weights are a hub id,
an installed package or a path inside the repository)."""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import threading
from pathlib import PurePosixPath
from typing import Any, get_args, get_type_hints

from .. import safe_yaml
from ..config import ModelConfig
from ..models.registry import backend_names, known_backend, own_args
from ..models.weights import valid_split_weights
from ..paths import SHIPPED, shipped_name
from .base import MAX_CONFIG_BYTES, Problem

# backend arguments a submitted config may pass through `args`: how the model is served, never what code runs
ALLOWED_ARGS = {"tensor_parallel_size", "data_parallel_size", "gpu_memory_utilization", "max_model_len",
                "max_num_seqs", "swap_space", "enforce_eager", "max_batch_size", "add_bos_token", "max_gen_toks",
                "tokenized_requests", "parallelize", "attn_implementation", "use_fast_tokenizer"}


def read_yaml(path) -> Any:
    """A submitted model config: UTF-8, small, no tags, no repeated keys, no aliases (safe_yaml)."""
    return safe_yaml.load(path, aliases=False, max_bytes=MAX_CONFIG_BYTES)


@functools.lru_cache(maxsize=None)
def _fields(cls) -> dict[str, Any]:
    """A config dataclass's fields and, for nested config dataclasses, their class (None: a free-form value)."""
    out = {}
    for name, t in get_type_hints(cls).items():
        nested = [a for a in (t, *get_args(t)) if dataclasses.is_dataclass(a)]
        out[name] = nested[0] if nested else None
    return out


def check_model_config(data: Any, where: str, allow_remote_code: bool = False, prefix: str = "",
                       types: bool = True) -> list[Problem]:
    """The rules for a submitted model config: known keys only, plain values only, no code, no remote code, and
    (types=True) every value of its field's type."""
    if not isinstance(data, dict):
        return [Problem(where, prefix.rstrip("."), "a model config must be a mapping of keys to values")]
    bad_keys = _non_string_keys(data, prefix)
    if bad_keys:
        return [Problem(where, f, "keys must be strings") for f in bad_keys]
    blob = json.dumps(data, sort_keys=True, default=str)
    return [Problem(where, f, m) for f, m in _config_problems(blob, allow_remote_code, prefix, types)]


def _non_string_keys(value: Any, path: str) -> list[str]:
    found = []
    if isinstance(value, dict):
        for k, v in value.items():
            found += [f"{path}{k!r}"] if not isinstance(k, str) else _non_string_keys(v, f"{path}{k}.")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            found += _non_string_keys(v, f"{path.rstrip('.')}[{i}].")
    return found


@functools.lru_cache(maxsize=4096)
def _config_problems(blob: str, allow_remote_code: bool, prefix: str, types: bool) -> tuple[tuple[str, str], ...]:
    """check_model_config's findings as (field, message), computed once per distinct config."""
    data = json.loads(blob)
    problems = _shape_problems(data, prefix)
    if not problems:
        problems = _value_problems(data, prefix, allow_remote_code, types)
    return tuple((p.field, p.message) for p in problems)


def _shape_problems(data: dict, prefix: str) -> list[Problem]:
    """No key that names code (_target_), no interpolation, no key the config's dataclass does not have."""
    problems = []

    def walk(value, path):
        if isinstance(value, dict):
            for k, v in value.items():
                if str(k).startswith("_"):
                    problems.append(Problem("", f"{path}{k}", "keys starting with _ (such as _target_) are not "
                                                              "allowed: a submitted config is data, never code"))
                walk(v, f"{path}{k}.")
        elif isinstance(value, list):
            for i, v in enumerate(value):
                walk(v, f"{path.rstrip('.')}[{i}].")
        elif isinstance(value, str) and "${" in value:
            problems.append(Problem("", path.rstrip("."), f"interpolation {value!r} is not allowed: values must be "
                                                          "literal (no environment variables, no resolvers)"))

    def unknown(value, cls, path):
        if not isinstance(value, dict):
            return
        known = _fields(cls)
        for k, v in value.items():
            if str(k).startswith("_"):
                continue  # reported by walk
            if k not in known:
                problems.append(Problem("", f"{path}{k}", f"unknown key; {cls.__name__} has "
                                                          f"{', '.join(sorted(known))}"))
            elif known[k] is not None and v is not None:
                unknown(v, known[k], f"{path}{k}.")

    walk(data, prefix)
    unknown(data, ModelConfig, prefix)
    return problems


def _value_problems(data: dict, prefix: str, allow_remote_code: bool, types: bool) -> list[Problem]:
    """The name and a known backend, paths inside their folders, allowed backend arguments only, no remote code
    unless allowed, and (types) every value of its field's type."""
    problems = [Problem("", f"{prefix}{key}", "missing") for key in ("name", "backend") if not data.get(key)]
    backend = data.get("backend")
    if backend and not known_backend(backend):
        problems.append(Problem("", f"{prefix}backend", f"unknown backend {backend!r}; available: "
                                                        f"{', '.join(backend_names())}"))
    problems += _path_problems(data, "", prefix)
    args = data.get("args")
    if args is not None and not isinstance(args, dict):
        problems.append(Problem("", f"{prefix}args", "must be a mapping of backend arguments"))
        args = {}
    allowed = ALLOWED_ARGS | (own_args(backend) if known_backend(backend) else frozenset())
    for key in sorted(set(args or {}) - allowed - {"trust_remote_code"}):
        problems.append(Problem("", f"{prefix}args.{key}", "not allowed in a submitted config; allowed: "
                                                           f"{', '.join(sorted(allowed))}"))
    remote = data.get("trust_remote_code") not in (None, False) or (args or {}).get("trust_remote_code") not in (
        None, False)
    if remote and not allow_remote_code:
        problems.append(Problem("", f"{prefix}trust_remote_code", "true: the model runs code from its repository; "
                                "a maintainer must review that code and validate with --allow-remote-code"))
    if not problems and types:
        from omegaconf import OmegaConf

        try:
            OmegaConf.merge(OmegaConf.structured(ModelConfig), data)
        except Exception as e:  # omegaconf's validation errors name the key and the expected type
            key = getattr(e, "full_key", "") or ""
            problems.append(Problem("", f"{prefix}{key}", str(e).splitlines()[0]))
        else:
            problems += _bound_problems(data, prefix)
    return problems


# the numbers a submitted config may hold, inclusive: past them a value only exhausts memory or time, or means nothing
BOUNDS = {"batch_size": (1, 4096), "max_length": (1, 1_000_000), "num_concurrent": (1, 256), "max_retries": (0, 20),
          "retry_wait": (0, 600), "timeout": (1, 3600), "threshold": (0, 1),
          "generation.max_new_tokens": (1, 32_768), "generation.temperature": (0, 10), "generation.top_p": (0, 1),
          "generation.top_k": (0, 1_000_000), "prices.input_per_million": (0, 1_000_000),
          "prices.output_per_million": (0, 1_000_000)}


def _bound_problems(data: dict, prefix: str) -> list[Problem]:
    problems = []
    for key, (low, high) in BOUNDS.items():
        value: Any = data
        for part in key.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        if value is None or isinstance(value, bool):
            continue
        if not isinstance(value, (int, float)) or not math.isfinite(value) or not low <= value <= high:
            problems.append(Problem("", f"{prefix}{key}", f"{str(value)[:40]}: use a number from {low} to {high}"))
    return problems


def model_config_node(data: dict, writable: bool = False):
    """A checked model config as the typed node a run uses (only after check_model_config passed). Read-only and
    shared by the calls that give the same config, as a card's checks ask for each of its configs about fifteen times
    and a merge takes about 30 ms; `writable` gives a fresh node, for a run that sets it into its own config."""
    from omegaconf import OmegaConf

    if writable:
        return OmegaConf.merge(OmegaConf.structured(ModelConfig), data)
    key = json.dumps(data, default=str)
    with _NODES_LOCK:  # the board's server checks cards on several threads
        node = _NODES.pop(key, None)
        if node is None:
            node = OmegaConf.merge(OmegaConf.structured(ModelConfig), data)
            OmegaConf.set_readonly(node, True)
        _NODES[key] = node  # the most recently asked last
        while len(_NODES) > 256:
            _NODES.pop(next(iter(_NODES)))
    return node


_NODES: dict[str, Any] = {}  # model_config_node's read-only nodes by their config's JSON, least recently asked first
_NODES_LOCK = threading.Lock()


def full_config(data: dict, cls=None) -> dict:
    """A config with every field its dataclass defaults (plain dicts: cheap enough for a thousand cards)."""
    cls = cls or ModelConfig
    nested = _fields(cls)
    out = {f.name: (f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default)
           for f in dataclasses.fields(cls)}
    out = {k: (dataclasses.asdict(v) if dataclasses.is_dataclass(v) else v) for k, v in out.items()}
    for k, v in data.items():
        out[k] = full_config(v, nested[k]) if nested.get(k) and isinstance(v, dict) else v
    return out




def _path_problems(data: dict, where: str, prefix: str) -> list[Problem]:
    """Paths a verifier's run would read: none may lead outside the folder it belongs in. Every field that may name a
    file or folder is read so (weights, tokenizer, a replay's file, a backend's own args), and `judges/NAME` names a
    shipped judge and nothing else."""
    problems = []
    replay = data.get("replay") if isinstance(data.get("replay"), dict) else {}
    args = data.get("args") if isinstance(data.get("args"), dict) else {}
    for field, value in (("pretrained", data.get("pretrained")), ("replay.path", replay.get("path")),
                         ("gguf_file", data.get("gguf_file")), ("tokenizer", data.get("tokenizer")),
                         *((f"args.{k}", v) for k, v in args.items())):
        if not isinstance(value, str):
            continue
        parts = PurePosixPath(value.replace("\\", "/")).parts
        if value.startswith(("/", "~", "\\")) or (len(value) > 1 and value[1] == ":") or ".." in parts:
            problems.append(Problem(where, f"{prefix}{field}", f"{value[:80]!r}: a submitted config names no absolute "
                                    "path and no .. (weights: a hub id, pip:PACKAGE or a path inside the repository; "
                                    "a replay: a path inside data_root)"))
        elif value.startswith(SHIPPED) and not shipped_name(value[len(SHIPPED):]):
            problems.append(Problem(where, f"{prefix}{field}", f"{value[:80]!r}: judges/NAME names a shipped judge "
                                    "(one folder name)"))
        elif field == "gguf_file" and len(parts) != 1:
            problems.append(Problem(where, f"{prefix}{field}", f"{value!r}: a file name inside pretrained"))
    if data.get("split_weights") is not None:
        problems += [Problem(where, f"{prefix}{key}", message) for key, message in
                     valid_split_weights(data.get("backend"), data.get("gguf_file"), data["split_weights"])]
    return problems
