"""Check results kept between processes, keyed on what was checked, so that a board with thousands of cards checks
each card in full once and afterwards only the cards that changed.

A result is found again only for the same bytes: every key holds the sha256 of each file the check read (the card,
its samples, its folder's model config) and the suite's fingerprint (its code, task and config files, the verifier
keys), so a card changed on disk, a new rule or a re-pinned task is checked again. Nothing a submitter wrote is taken
on trust: a file's sha256 is remembered against the file's identity and change time as the operating system reports
them (device, inode, size, modification and status-change times; the status-change time cannot be set by a writer),
never against a name or a date in a file.

What is kept: a card's problems (empty: accepted) and, for an accepted card, its summary (summary.py: what the
board's overview shows); what a samples file gives under its task (the expensive part of a check: reading the
samples, re-deriving every verdict and re-scoring with the bootstrap), which copies of one samples file share; what
loading a whole model folder gave, under the identities of all its entries (so a folder unchanged since is looked at
once, no file of it read); and which cards a board could show (under the board's own code).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from pydantic import BaseModel

from .. import __version__, BenchmarkError
from ..identity import file_sha256, sha256_json
from ..paths import CONF_DIR, PACKAGE_DIR, TASKS_DIR, cache_root
from .base import VERIFIER_KEYS, Problem, TaskEntry, task_registry
from .card import Card, Loaded
from .summary import Summary

STORE_FILE = "checks.sqlite"
TABLES = ("hashes", "cards", "given", "models", "registry", "shown", "folders")


def default_path() -> Path:
    """$BENCHMARK_CHECKS, or checks.sqlite in the suite's cache folder ($BENCHMARK_CACHE/board/)."""
    return Path(os.environ.get("BENCHMARK_CHECKS") or cache_root() / "board" / STORE_FILE).expanduser()


@functools.lru_cache(maxsize=1)
def suite_fingerprint() -> str:
    """The suite as it checks: its version, every file of its code, configs and tasks, and the verifier keys."""
    h = hashlib.sha256(__version__.encode())
    roots = dict.fromkeys(p.resolve() for p in (PACKAGE_DIR, CONF_DIR, TASKS_DIR))
    for root in roots:
        for path in sorted(root.rglob("*")):
            if path.is_file() and path.suffix in (".py", ".json", ".yaml") and "__pycache__" not in path.parts:
                h.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    keys = Path(os.environ.get("BENCHMARK_VERIFIER_KEYS") or VERIFIER_KEYS)
    h.update(keys.read_bytes() if keys.is_file() else b"no verifier keys")
    return h.hexdigest()


def identity(info: os.stat_result) -> str:
    """A file's identity and change times: what no writer can keep the same while changing the file."""
    return f"{info.st_dev}:{info.st_ino}:{info.st_size}:{info.st_mtime_ns}:{info.st_ctime_ns}"


@dataclass
class Given:
    """What one samples file gives under its task: the problems found in the samples alone (`early`: their form,
    `late`: their reference and derivations, looked at only when the early ones are none), the number of samples,
    and the metrics and breakdown the task's scoring computes from them. Problems carry "samples" or "card" in
    place of a path: a copy of the file in another folder gives the same. `n` is -1 for a file that cannot be
    read."""

    n: int
    early: list[tuple[str, str, str]] = field(default_factory=list)
    late: list[tuple[str, str, str]] = field(default_factory=list)
    metrics: dict | None = None
    breakdown: dict | None = None


@dataclass
class KeptCard:
    """A card's problems (none: accepted); for an accepted card, why its judges are not its task's panel (or None)
    and its summary."""

    problems: list[Problem]
    panel: str | None
    summary: Summary | None


class FolderCard(BaseModel):
    """An accepted card of a loaded folder, as kept: enough to show it without reading it again."""

    path: str
    config: dict  # its model folder's config
    sha256: str  # of the bytes checked
    check_key: str
    panel: Optional[str]
    summary: dict  # Summary.to_json()


class KeptFolder(BaseModel):
    """What loading a folder gave: its accepted cards and its rejected files' problems (path, field, message)."""

    cards: list[FolderCard]
    rejected: list[tuple[str, str, str]]


class CheckStore:
    """The kept results, in one SQLite file (default_path): each value read when first asked for, what this process
    found written back by `save`."""

    def __init__(self, path: str | Path | None = None, fresh: bool = False):
        """fresh: every check is made again and every file hashed again (what `validate` does), and the results
        replace those kept."""
        self.path = Path(path) if path is not None else default_path()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, timeout=60, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            for table in TABLES:
                self._db.execute(f"CREATE TABLE IF NOT EXISTS {table} (key TEXT PRIMARY KEY, value TEXT)")
            self._kept: dict[str, dict[str, str | None]] = {t: {} for t in TABLES}  # read as asked for
            self._fresh = fresh
        except (OSError, sqlite3.Error) as e:
            raise BenchmarkError(f"check store {self.path}: {e}; choose another with $BENCHMARK_CHECKS") from None
        self._new: dict[str, dict[str, str]] = {t: {} for t in self._kept}

    def _get(self, table: str, key: str) -> str | None:
        """A kept value (None: none), read from the file once per process; fresh: none."""
        kept = self._kept[table]
        if key not in kept:
            row = None if self._fresh else self._db.execute(f"SELECT value FROM {table} WHERE key = ?",
                                                            (key,)).fetchone()
            kept[key] = row[0] if row else None
        return kept[key]

    def sha256(self, path: Path) -> str:
        """The file's sha256, read again only when the file is not the one last hashed under its path."""
        info = os.stat(path, follow_symlinks=False)
        known = self._get("hashes", str(path))
        if known is not None:
            seen, _, sha = known.rpartition(" ")
            if seen == identity(info):
                return sha
        sha = file_sha256(path)
        if identity(os.stat(path, follow_symlinks=False)) == identity(info):  # unchanged while it was read
            self._put("hashes", str(path), f"{identity(info)} {sha}")
        return sha

    def card(self, key: str) -> KeptCard | None:
        """What the check of a card found; None: never checked with this key."""
        value = self._get("cards", key)
        if value is None:
            return None
        problems, panel, summary = json.loads(value)
        return KeptCard([Problem(*p) for p in problems], panel,
                        Summary.from_json(summary) if summary is not None else None)

    def keep_card(self, key: str, problems: list[Problem], panel: str | None, summary: Summary | None) -> None:
        self._put("cards", key, json.dumps([[[p.path, p.field, p.message] for p in problems], panel,
                                            summary.to_json() if summary is not None else None]))

    # a folder's model config as checked: (the config, or None, and its problems)
    def model(self, key: str) -> tuple[dict | None, list[Problem]] | None:
        value = self._get("models", key)
        if value is None:
            return None
        config, problems = json.loads(value)
        return config, [Problem(*p) for p in problems]

    def keep_model(self, key: str, config: dict | None, problems: list[Problem]) -> None:
        self._put("models", key, json.dumps([config, [[p.path, p.field, p.message] for p in problems]]))

    def given(self, key: str) -> Given | None:
        value = self._get("given", key)
        return None if value is None else Given(**json.loads(value))

    def keep_given(self, key: str, given: Given) -> None:
        self._put("given", key, json.dumps(given.__dict__))

    def loaded(self, slot: str, key: str):
        """What loading a model folder, or a whole submissions folder, gave (submissions.Loaded), kept in its `slot`
        (one per folder: a folder's newer result replaces its older one) for the key of its entries as they were."""
        value = self._get("folders", slot)
        if value is None or value[:len(key) + 1] != key + "\n":
            return None
        kept = KeptFolder.model_validate_json(value[len(key) + 1:])
        cards = [Card(Path(c.path), None, c.config, known_panel=(c.panel,), sha256=c.sha256, check_key=c.check_key,
                      summary=Summary.from_json(c.summary)) for c in kept.cards]
        return Loaded(cards=cards, rejected=[Problem(*p) for p in kept.rejected])

    def keep_loaded(self, slot: str, key: str, loaded) -> None:
        if any(c.check_key is None or c.sha256 is None for c in loaded.cards):
            return
        kept = KeptFolder(cards=[FolderCard(path=str(c.path), config=c.model_config, sha256=c.sha256,
                                            check_key=c.check_key, panel=c.panel, summary=c.summary.to_json())
                                 for c in loaded.cards],
                          rejected=[(p.path, p.field, p.message) for p in loaded.rejected])
        self._put("folders", slot, key + "\n" + kept.model_dump_json())

    def shown(self, key: str) -> bool:
        """Whether a board showed the card of this key (a key that holds its check's and the board code's)."""
        return self._get("shown", key) is not None

    def keep_shown(self, key: str) -> None:
        self._put("shown", key, "")

    def registry(self) -> dict[str, TaskEntry]:
        """base.task_registry(), kept (each task's definition): composing every task costs about a second per
        process."""
        found = key("registry", os.environ.get("BENCHMARK_DATA_ROOT"))
        value = self._get("registry", found)
        if value is not None:
            return {name: TaskEntry.of(config) for name, config in json.loads(value).items()}
        registry = task_registry()
        self._put("registry", found, json.dumps({name: t.config for name, t in registry.items()}))
        return registry

    def _put(self, table: str, key: str, value: str) -> None:
        self._kept[table][key] = value
        self._new[table][key] = value

    def save(self) -> None:
        """Writes what this process found, in one transaction (several processes may share the file)."""
        if not any(self._new.values()):
            return
        try:
            self._db.execute("BEGIN IMMEDIATE")
            for table, rows in self._new.items():
                self._db.executemany(f"INSERT OR REPLACE INTO {table} (key, value) VALUES (?, ?)", rows.items())
            self._db.execute("COMMIT")
        except sqlite3.Error as e:
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
            raise BenchmarkError(f"check store {self.path}: cannot save: {e}") from None
        self._new = {t: {} for t in self._kept}

    def close(self) -> None:
        self._db.close()


def key(*parts) -> str:
    """A result's key: the suite's fingerprint and what the check read."""
    return sha256_json([suite_fingerprint(), *parts])
