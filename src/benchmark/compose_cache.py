"""Composed run configs kept by what composes them: the overrides, the bytes of every config file on the search path,
the run schema's fields (every registered kind's section included), the suite's and Hydra's versions. A command
composed before is read back without Hydra (about half a second of a run's start); any change to any of those
composes it afresh. Interpolations (`${oc.env:...}`, `${results_dir}`) are kept unresolved, so they resolve when
read, as in a config Hydra composed."""

from __future__ import annotations

import dataclasses
import functools
import json
import os
from pathlib import Path

from . import __version__, safe_yaml
from .files import write_json
from .identity import sha256_json
from .paths import cache_root

KEEP = 512  # composed configs kept (a few kilobytes each)


def key(overrides: list[str], files_sha256: str, schema: type) -> str:
    from importlib.metadata import version

    import omegaconf

    # a kept config is read back without its files being checked again: it names the rules they passed
    rules = Path(safe_yaml.__file__).read_text(encoding="utf-8")
    return sha256_json([__version__, version("hydra-core"), omegaconf.__version__, list(overrides), files_sha256,
                        _fields(schema), rules])


@functools.lru_cache(maxsize=8)  # a schema class is made once per set of kinds (schema._schemas)
def _fields(cls) -> list:
    """A dataclass schema's field names, types and defaults, nested schemas spelled out (their classes may be the
    test's or a plug-in's, defined anywhere)."""
    import typing

    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
        nested, todo = [], [hints[f.name]]
        for t in todo:
            if dataclasses.is_dataclass(t):
                nested.append(_fields(t))
            todo += typing.get_args(t)
        out.append([f.name, str(hints[f.name]), repr(default), f.metadata.get("added", False), nested])
    return out


def _path(digest: str) -> Path:
    return cache_root() / "composed" / f"{digest}.json"


def read(digest: str, schema: type):
    """The config composed under this key, typed by the schema as Hydra types it (struct: no key the schema lacks);
    None where none is kept."""
    path = _path(digest)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        os.utime(path)  # last used now: the folder keeps the configs used most recently
    except (OSError, ValueError):
        return None
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    try:
        # both made here and used once: merged in place, not copied first
        cfg = OmegaConf.unsafe_merge(OmegaConf.structured(schema), OmegaConf.create(data))
    except (OmegaConfBaseException, TypeError):  # not a config this schema takes: compose it afresh
        return None
    OmegaConf.set_struct(cfg, True)
    return cfg


def keep(digest: str, cfg) -> None:
    """Keep a composed config, then prune the folder."""
    from omegaconf import OmegaConf

    path = _path(digest)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_json(path, OmegaConf.to_container(cfg, resolve=False, enum_to_str=True))
        _prune(path.parent)
    except OSError:
        pass  # a read-only cache folder: the next run composes again


def _prune(folder: Path) -> None:
    """Keep the folder small: past KEEP configs, the least recently used half goes."""
    kept = list(folder.glob("*.json"))
    if len(kept) <= KEEP:
        return
    kept.sort(key=lambda f: f.stat().st_mtime_ns)
    for f in kept[: len(kept) - KEEP // 2]:
        f.unlink(missing_ok=True)
