"""Check results kept between processes, keyed on what was checked, so that a board with thousands of cards checks
each card in full once and afterwards only the cards that changed.

A result is found again only for the same bytes: every key holds the sha256 of each file the check read (the card,
its samples, its folder's model config) and the suite's fingerprint (its code, task and config files, the verifier
keys), so a card changed on disk, a new rule or a re-pinned task is checked again. Nothing a submitter wrote is taken
on trust: a file's sha256 is remembered against the file's identity and change time as the operating system reports
them (device, inode, size, modification and status-change times; the status-change time cannot be set by a writer),
never against a name or a date in a file.

Two kinds of result are kept: a card's problems (empty: accepted), and what a samples file gives under its task
(the expensive part of a check: reading the samples, re-deriving every verdict and re-scoring with the bootstrap),
which copies of one samples file share.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from .. import BenchmarkError
from ..hashing import file_sha256, sha256_json
from .base import VERIFIER_KEYS, Problem

STORE_FILE = "checks.sqlite"
TABLES = ("hashes", "cards", "given", "models", "registry")


def default_path() -> Path:
    """$BENCHMARK_CHECKS, or checks.sqlite in the suite's cache folder ($BENCHMARK_CACHE/board/)."""
    from ..models.weights import cache_root

    return Path(os.environ.get("BENCHMARK_CHECKS") or cache_root() / "board" / STORE_FILE).expanduser()


@functools.lru_cache(maxsize=1)
def suite_fingerprint() -> str:
    """The suite as it checks: its version, every file of its code, configs and tasks, and the verifier keys."""
    from .. import __version__
    from ..paths import CONF_DIR, PACKAGE_DIR, TASKS_DIR

    h = hashlib.sha256(__version__.encode())
    roots = dict.fromkeys(p.resolve() for p in (PACKAGE_DIR, CONF_DIR, TASKS_DIR))
    for root in roots:
        for path in sorted(root.rglob("*")):
            if path.is_file() and path.suffix in (".py", ".json", ".yaml") and "__pycache__" not in path.parts:
                h.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    keys = Path(os.environ.get("BENCHMARK_VERIFIER_KEYS") or VERIFIER_KEYS)
    h.update(keys.read_bytes() if keys.is_file() else b"no verifier keys")
    return h.hexdigest()


def _identity(info: os.stat_result) -> str:
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


class CheckStore:
    """The kept results, in one SQLite file (default_path), read whole when it opens and written back by `save`."""

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
            # what every load looks at is read whole; what the samples give only when a card is checked again
            self._kept = {t: {} if fresh else dict(self._db.execute(f"SELECT key, value FROM {t}"))
                          for t in TABLES if t != "given"}
            self._kept["given"] = {}
            self._fresh = fresh
        except (OSError, sqlite3.Error) as e:
            raise BenchmarkError(f"check store {self.path}: {e}; choose another with $BENCHMARK_CHECKS") from None
        self._new: dict[str, dict[str, str]] = {t: {} for t in self._kept}

    def sha256(self, path: Path) -> str:
        """The file's sha256, read again only when the file is not the one last hashed under its path."""
        info = os.stat(path, follow_symlinks=False)
        known = self._kept["hashes"].get(str(path))
        if known is not None:
            identity, _, sha = known.rpartition(" ")
            if identity == _identity(info):
                return sha
        sha = file_sha256(path)
        if _identity(os.stat(path, follow_symlinks=False)) == _identity(info):  # unchanged while it was read
            self._put("hashes", str(path), f"{_identity(info)} {sha}")
        return sha

    def card(self, key: str) -> tuple[list[Problem], str | None] | None:
        """A card's problems and, for an accepted card, why its judges are not its task's panel (or None); None:
        never checked with this key."""
        value = self._kept["cards"].get(key)
        if value is None:
            return None
        problems, panel = json.loads(value)
        return [Problem(*p) for p in problems], panel

    def keep_card(self, key: str, problems: list[Problem], panel: str | None) -> None:
        self._put("cards", key, json.dumps([[[p.path, p.field, p.message] for p in problems], panel]))

    # a folder's model config as checked: (the config, or None, and its problems)
    def model(self, key: str) -> tuple[dict | None, list[Problem]] | None:
        value = self._kept["models"].get(key)
        if value is None:
            return None
        config, problems = json.loads(value)
        return config, [Problem(*p) for p in problems]

    def keep_model(self, key: str, config: dict | None, problems: list[Problem]) -> None:
        self._put("models", key, json.dumps([config, [[p.path, p.field, p.message] for p in problems]]))

    def given(self, key: str) -> Given | None:
        value = self._kept["given"].get(key)
        if value is None and not self._fresh:
            row = self._db.execute("SELECT value FROM given WHERE key = ?", (key,)).fetchone()
            value = row[0] if row else None
        return None if value is None else Given(**json.loads(value))

    def keep_given(self, key: str, given: Given) -> None:
        self._put("given", key, json.dumps(given.__dict__))

    def registry(self) -> dict[str, dict]:
        """base.task_registry(), kept: composing every task costs about a second per process."""
        from .base import task_registry

        found = key("registry", os.environ.get("BENCHMARK_DATA_ROOT"))
        value = self._kept["registry"].get(found)
        if value is not None:
            return json.loads(value)
        registry = task_registry()
        self._put("registry", found, json.dumps(registry))
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
