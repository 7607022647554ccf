"""A persistent response cache shared by every backend and every run on this machine.

Keys are sha256 of (model config hash, operation, exact request). Several processes (a sweep's parallel jobs, two
commands at once) read and write the same file safely: SQLite in WAL mode (readers never wait for a writer), every
write one short `BEGIN IMMEDIATE` transaction (the write lock is taken up front, so two writers queue instead of
deadlocking), a busy timeout, and a few retries with backoff for the moments SQLite answers "busy" without waiting
(while another process opens a fresh file or recovers the log after a crash). Locking is per machine: over a
network file system, keep each machine's cache on a local disk.
"""

from __future__ import annotations

import json
import random
import sqlite3
import time
from pathlib import Path

from . import BenchmarkError

BUSY_TIMEOUT_S = 60  # how long one statement waits for another process's write lock
RETRIES = 8  # further attempts when SQLite still answers busy/locked


def _transient(e: sqlite3.OperationalError) -> bool:
    text = str(e).lower()
    return "locked" in text or "busy" in text


class ResponseCache:
    FILE = "responses.sqlite"  # the cache's file in a cache_dir

    @classmethod
    def in_folder(cls, folder: str | Path) -> "ResponseCache":
        """The cache of a `cache_dir` setting."""
        return cls(Path(folder) / cls.FILE)

    def __init__(self, path: str | Path):
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise BenchmarkError(f"response cache {self.path}: cannot create its folder {self.path.parent}: "
                                 f"{e.strerror or e}; choose another with cache_dir=DIR") from None
        self._db = None
        self._retrying(self._open)

    def _open(self) -> None:
        if self._db is not None:
            self._db.close()
        self._db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        self._db.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_S * 1000}")
        self._db.execute("PRAGMA journal_mode=WAL")  # a file system without WAL support keeps its rollback journal
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, model TEXT, value TEXT, created REAL)"
        )
        # the tokens of an answer, where counted (models.usage.Usage): a table of its own, so that a cache made by an
        # earlier version of the suite, and that version itself, read and write the answers as before
        self._db.execute("CREATE TABLE IF NOT EXISTS usage (key TEXT PRIMARY KEY, usage TEXT)")

    def _retrying(self, op, *args):
        for attempt in range(RETRIES + 1):
            try:
                return op(*args)
            except sqlite3.OperationalError as e:
                if not _transient(e) or attempt == RETRIES:
                    raise self._error(e) from None
                time.sleep(min(2.0, 0.05 * 2**attempt) * (0.5 + random.random()))
            except sqlite3.DatabaseError as e:
                raise self._error(e) from None

    def _error(self, e: sqlite3.Error) -> BenchmarkError:
        if "not a database" in str(e):
            hint = "it is only a cache: remove it, or choose another with cache_dir=DIR"
        elif isinstance(e, sqlite3.OperationalError) and _transient(e):
            hint = f"another process held its write lock for over {BUSY_TIMEOUT_S} s; rerun to resume"
        else:
            hint = "check that its folder is writable and its disk has space, or choose another with cache_dir=DIR"
        return BenchmarkError(f"response cache {self.path}: {e}; {hint}")

    def _select(self, keys: list[str]) -> dict[str, object]:
        found: dict[str, object] = {}
        for start in range(0, len(keys), 500):  # SQLite's bound-parameter limit
            chunk = keys[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for key, value, usage in self._db.execute(
                    f"SELECT r.key, r.value, u.usage FROM responses r LEFT JOIN usage u ON u.key = r.key "
                    f"WHERE r.key IN ({marks})", chunk):
                found[key] = (json.loads(value), json.loads(usage) if usage else None)
        return found

    def get_many(self, keys: list[str]) -> dict[str, tuple]:
        """The cached answers of these keys, each with the token counts stored beside it (None where unknown)."""
        return self._retrying(self._select, keys)

    def _insert(self, rows: list[tuple], usage: list[tuple]) -> None:
        try:
            self._db.execute("BEGIN IMMEDIATE")
            self._db.executemany("INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?)", rows)
            self._db.executemany("INSERT OR REPLACE INTO usage VALUES (?, ?)", usage)
            self._db.execute("COMMIT")
        except BaseException:
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
            raise

    def put_many(self, model_sha: str, items: dict[str, object], usage: dict[str, dict] | None = None) -> None:
        """Cache answers by key; `usage`: the token counts of some of them (Usage.as_json), kept beside them."""
        if not items:
            return
        now = time.time()
        rows = [(k, model_sha, json.dumps(v, ensure_ascii=False), now) for k, v in items.items()]
        counted = [(k, json.dumps(u)) for k, u in (usage or {}).items() if k in items and u is not None]
        self._retrying(self._insert, rows, counted)

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None
