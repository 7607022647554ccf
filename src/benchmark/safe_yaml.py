"""YAML read as data: every config file the suite composes or a submission carries is checked here first, so a bad
one is one line naming the file and the cause, never a traceback, a hang or code.

A file must be UTF-8 and small; no collection may be nested deeper than MAX_DEPTH (libyaml composes nodes recursively
in C: a document nested deep enough crashes the process); no node may carry a tag (`!function`, `!!python/object`);
no mapping may repeat a key (YAML lets the second silently win); and anchors and aliases may not expand it past
MAX_NODES (a few lines of nested aliases can stand for billions of nodes, which a loader that copies them never
finishes).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from . import BenchmarkError
from .identity import sha256_json
from .paths import CONF_DIR

MAX_BYTES = 1 << 20
MAX_NODES = 100_000
MAX_DEPTH = 32  # collections nested in one another (the suite's own configs: 6 at most)
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_PLAIN_TAGS = {f"tag:yaml.org,2002:{t}" for t in ("str", "int", "float", "bool", "null", "seq", "map", "timestamp")}


def read_text(path: Path, max_bytes: int = MAX_BYTES) -> str:
    """A regular file's text, read at most max_bytes + 1 bytes (a symlink to /dev/zero cannot grow it)."""
    path = Path(path)
    try:
        if path.is_symlink() or not path.is_file():
            raise BenchmarkError(f"{path}: not a regular file")
        with open(path, "rb") as f:
            raw = f.read(max_bytes + 1)
    except OSError as e:
        raise BenchmarkError(f"{path}: unreadable: {e.strerror or e}") from None
    if len(raw) > max_bytes:
        raise BenchmarkError(f"{path}: larger than {max_bytes // 1024} KiB; a config is a few lines")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise BenchmarkError(f"{path}: not UTF-8 text (byte {raw[e.start]:#04x} at offset {e.start})") from None


def check(text: str, where: str, aliases: bool = True):
    """The document's node graph, once it passes the rules above (aliases=False: no alias at all)."""
    try:
        _check_depth(text, where)
        root = yaml.compose(text, Loader=_LOADER)
    except yaml.YAMLError as e:  # the parser's own limits (PyYAML 6.0.4 caps flow nesting) end here too
        mark = getattr(e, "problem_mark", None)
        line = f"line {mark.line + 1}: " if mark is not None else ""
        raise BenchmarkError(f"{where}: {line}not valid YAML: {' '.join(str(e).split())}") from None
    if root is None:
        return None
    sizes: dict[int, int] = {}
    seen: set[int] = set()

    def size(node) -> int:
        """Nodes in the fully expanded document; an aliased node is counted once per use but walked once."""
        key = id(node)
        if key in sizes:
            if not aliases:
                raise BenchmarkError(f"{where}: line {node.start_mark.line + 1}: YAML aliases (*name) are not allowed "
                                     "in a submitted config")
            return sizes[key]
        if key in seen:
            raise BenchmarkError(f"{where}: line {node.start_mark.line + 1}: a YAML alias refers to itself")
        seen.add(key)
        if node.tag not in _PLAIN_TAGS:
            raise BenchmarkError(f"{where}: line {node.start_mark.line + 1}: tag {node.tag} is not allowed: a config "
                                 "is data, never code")
        total = 1
        if isinstance(node, yaml.MappingNode):
            keys = set()
            for k, v in node.value:
                if isinstance(k, yaml.ScalarNode):
                    if k.value in keys:
                        raise BenchmarkError(f"{where}: line {k.start_mark.line + 1}: key {k.value!r} appears twice "
                                             "in one mapping; YAML would silently keep the second")
                    keys.add(k.value)
                total += size(k) + size(v)
        elif isinstance(node, yaml.SequenceNode):
            total += sum(size(v) for v in node.value)
        if total > MAX_NODES:
            raise BenchmarkError(f"{where}: expands to more than {MAX_NODES:,} YAML nodes (nested aliases?)")
        sizes[key] = total
        return total

    size(root)
    return root


def _check_depth(text: str, where: str) -> None:
    """No collection nested deeper than MAX_DEPTH, found from the parser's events, before any node is composed; the
    problem names the line and the top-level key it is under."""
    depth, top, items, mapping = 0, None, 0, False
    for event in yaml.parse(text, Loader=_LOADER):
        if isinstance(event, yaml.CollectionEndEvent):
            depth -= 1
        elif isinstance(event, yaml.NodeEvent):
            if depth == 1 and mapping:  # the top level's keys and values, in turn
                top = getattr(event, "value", top) if items % 2 == 0 else top
                items += 1
            if isinstance(event, yaml.CollectionStartEvent):
                mapping = mapping or (depth == 0 and isinstance(event, yaml.MappingStartEvent))
                depth += 1
                if depth > MAX_DEPTH:
                    raise BenchmarkError(f"{where}: line {event.start_mark.line + 1}: {top or '(top level)'}: nested "
                                         f"deeper than {MAX_DEPTH} levels")


def load(path: Path, aliases: bool = True, max_bytes: int = MAX_BYTES) -> Any:
    """A checked YAML file as plain Python data."""
    text = read_text(path, max_bytes)
    check(text, str(path), aliases)
    return yaml.load(text, Loader=_LOADER)


@dataclass(frozen=True)
class ConfigFiles:
    """The *.yaml files under the config search path, read once: each file's place and text, and the sha256 of them
    all, which names what a composition read (compose_cache.py)."""

    texts: tuple[tuple[Path, str], ...]
    sha256: str

    def check(self) -> None:
        """Every file by the rules above, before Hydra reads any of them."""
        for path, text in self.texts:
            check(text, str(path))


def config_files(folders: list[Path]) -> ConfigFiles:
    texts = tuple((path, read_text(path)) for folder in folders if folder.is_dir() for path in _yaml_files(folder))
    return ConfigFiles(texts, sha256_json([[str(path), text] for path, text in texts]))


def check_config_dirs(folders: list[Path]) -> str:
    """Every *.yaml file under these folders (the config search path) checked; their sha256 (ConfigFiles)."""
    files = config_files(folders)
    files.check()
    return files.sha256


def _yaml_files(folder: Path) -> list[Path]:
    """The *.yaml files under a folder, through linked folders too (the suite's conf/task is a link to tasks/), each
    folder walked once however many links reach it."""
    import os

    seen, out = set(), []
    for root, dirs, files in os.walk(folder, followlinks=True):
        real = os.path.realpath(root)
        if real in seen:
            dirs[:] = []
            continue
        seen.add(real)
        dirs.sort()
        out += [Path(root) / f for f in sorted(files) if f.endswith(".yaml")]
    return out


def search_path_folders(overrides: list[str]) -> list[Path]:
    """The suite's config folders and the folders a `hydra.searchpath=[...]` override adds (file:// or plain)."""
    folders = [CONF_DIR]
    for item in overrides:
        key, _, value = item.partition("=")
        if key.lstrip("+~") != "hydra.searchpath":
            continue
        for entry in value.strip().strip("[]").split(","):
            entry = entry.strip().strip("'\"")
            if entry.startswith("file://"):
                folders.append(Path(entry[len("file://"):]))
            elif entry and "://" not in entry:
                folders.append(Path(entry))
    return folders
