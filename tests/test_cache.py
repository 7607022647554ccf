"""The response cache shared by concurrent runs (a sweep's jobs, two commands at once): no write lost or torn."""

import multiprocessing as mp
import re
import sqlite3

import pytest

from benchmark.cache import ResponseCache
from benchmark.identity import request_key
from benchmark.models.requests import Classify

WRITERS = 4
BATCHES = 150  # transactions per writer
PER_BATCH = 8  # entries per transaction


def value_for(key: str) -> dict:
    return {"label": "Unsafe" if int(key[:2], 16) % 2 else "Safe", "key": key, "text": "ü" * (int(key[2:4], 16) % 50)}


def keys_of(writer: int) -> list[str]:
    """Each writer's own keys, plus a share written by every writer (two runs of one model asking the same thing)."""
    own = [request_key("model-sha", "generate", {"writer": writer, "i": i}) for i in range(BATCHES * PER_BATCH // 2)]
    shared = [request_key("model-sha", "generate", {"shared": i}) for i in range(BATCHES * PER_BATCH // 2)]
    mixed = [k for pair in zip(own, shared) for k in pair]
    return mixed if writer % 2 else mixed[::-1]  # the shared keys in opposite orders: real contention


def writer(path: str, number: int, start, errors) -> None:
    try:
        start.wait(timeout=60)
        cache = ResponseCache(path)  # every writer opens the fresh database at the same moment
        keys = keys_of(number)
        for b in range(BATCHES):
            batch = keys[b * PER_BATCH : (b + 1) * PER_BATCH]
            missing = [k for k in batch if k not in cache.get_many(batch)]  # what a run does: read, then write
            cache.put_many("model-sha", {k: value_for(k) for k in missing})
            if b % 10 == 0:  # a new connection now and then, as a new run would open
                cache.close()
                cache = ResponseCache(path)
        cache.close()
    except BaseException as e:  # reported to the test, which fails with it
        errors.put(f"writer {number}: {type(e).__name__}: {e}")
        raise


def test_concurrent_writers_lose_and_corrupt_nothing(tmp_path):
    path = str(tmp_path / "cache" / "responses.sqlite")
    ctx = mp.get_context("spawn")  # fresh interpreters, as separate commands would be
    start, errors = ctx.Barrier(WRITERS), ctx.Queue()
    procs = [ctx.Process(target=writer, args=(path, n, start, errors)) for n in range(WRITERS)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
    failures = []
    while not errors.empty():
        failures.append(errors.get())
    assert not failures, failures
    assert [p.exitcode for p in procs] == [0] * WRITERS

    expected = {k for n in range(WRITERS) for k in keys_of(n)}
    assert len(expected) == (WRITERS + 1) * BATCHES * PER_BATCH // 2
    cache = ResponseCache(path)
    found = {k: answer for k, (answer, _) in cache.get_many(sorted(expected)).items()}
    cache.close()
    assert set(found) == expected
    assert all(found[k] == value_for(k) for k in expected)
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert db.execute("SELECT COUNT(*) FROM responses").fetchone() == (len(expected),)


def test_a_cache_that_cannot_be_written_names_the_file(tmp_path):
    from benchmark import BenchmarkError

    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with pytest.raises(BenchmarkError, match=re.escape(f"response cache {blocker / 'responses.sqlite'}: cannot create")):
        ResponseCache(blocker / "responses.sqlite")
    broken = tmp_path / "broken.sqlite"
    broken.write_bytes(b"this is not an SQLite database, it is text" * 100)
    with pytest.raises(BenchmarkError) as err:
        ResponseCache(broken)
    assert str(err.value).startswith(f"response cache {broken}: ")
    assert "; it is only a cache: remove it" in str(err.value)


def test_a_write_outlasts_a_lock_held_past_the_busy_timeout(tmp_path, monkeypatch):
    """Another process holds the write lock longer than SQLite waits: the write is retried, not lost."""
    import threading

    from benchmark import cache as cache_module

    monkeypatch.setattr(cache_module, "BUSY_TIMEOUT_S", 0)  # SQLite itself gives up at once
    path = tmp_path / "responses.sqlite"
    cache = ResponseCache(path)
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")
    other.execute("INSERT INTO responses VALUES ('theirs', 'm', '1', 0)")
    release = threading.Timer(0.3, lambda: other.execute("COMMIT"))
    release.start()
    cache.put_many("m", {"ours": {"label": "Safe"}})
    release.join()
    other.close()
    assert cache.get_many(["ours", "theirs"]) == {"ours": ({"label": "Safe"}, None), "theirs": (1, None)}
    cache.close()


def test_answers_cached_in_another_shape_are_asked_again(tmp_path):
    """A backend that changes the shape of its answers says so (answer_shape): the old answers are not read as new."""
    from benchmark.cache import ResponseCache
    from benchmark.models.base import Backend
    from benchmark.models.cached import CachedModel

    class Judge(Backend):
        operations = frozenset({"classify"})
        answer_shape = "v1"

        def classify(self, inputs):
            return [{"unsafe": False, "shape": self.answer_shape} for _ in inputs]

    cache = ResponseCache(tmp_path / "c.sqlite")
    judge = Judge()
    first = CachedModel(judge, "sha", cache)
    assert first.classify([Classify({"response": "x"})])[0]["shape"] == "v1" and first.calls == 1
    judge.answer_shape = "v2"
    second = CachedModel(judge, "sha", cache)
    assert second.classify([Classify({"response": "x"})])[0]["shape"] == "v2" and second.calls == 1


def test_token_counts_are_kept_beside_answers_and_an_older_cache_still_answers(tmp_path):
    from benchmark.cache import ResponseCache

    path = tmp_path / "responses.sqlite"
    old = sqlite3.connect(path)  # a cache as an earlier version made it: answers only
    old.execute("CREATE TABLE responses (key TEXT PRIMARY KEY, model TEXT, value TEXT, created REAL)")
    old.execute("INSERT INTO responses VALUES ('before', 'm', '\"an answer\"', 0)")
    old.commit()
    old.close()
    cache = ResponseCache(path)
    cache.put_many("m", {"now": "another", "uncounted": "third"},
                   {"now": {"prompt": 12, "completion": 3, "counted_by": "api"}})
    assert cache.get_many(["before", "now", "uncounted", "missing"]) == {
        "before": ("an answer", None), "now": ("another", {"prompt": 12, "completion": 3, "counted_by": "api"}),
        "uncounted": ("third", None)}
    cache.close()
    again = sqlite3.connect(path)  # and that version still writes its answers as it did
    again.execute("INSERT INTO responses VALUES ('later', 'm', '1', 0)")
    again.commit()
    again.close()
