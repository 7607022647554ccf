"""A persistent response cache shared by every backend and every run on this machine.

Keys are sha256 of (model config hash, operation, exact request); SQLite in WAL mode lets several processes read
and write the same file at once.
"""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

from .hashing import sha256_json


def request_key(model_sha: str, op: str, payload) -> str:
    return sha256_json([model_sha, op, payload])


class ResponseCache:
    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, timeout=60, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, model TEXT, value TEXT, created REAL)"
        )

    def get_many(self, keys: list[str]) -> dict[str, object]:
        found: dict[str, object] = {}
        for start in range(0, len(keys), 500):  # SQLite's bound-parameter limit
            chunk = keys[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for key, value in self._db.execute(f"SELECT key, value FROM responses WHERE key IN ({marks})", chunk):
                found[key] = json.loads(value)
        return found

    def put_many(self, model_sha: str, items: dict[str, object]) -> None:
        now = time.time()
        rows = [(k, model_sha, json.dumps(v, ensure_ascii=False), now) for k, v in items.items()]
        with self._db:
            self._db.execute("BEGIN IMMEDIATE")
            self._db.executemany("INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?)", rows)

    def close(self) -> None:
        self._db.close()
