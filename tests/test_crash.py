"""Crash-proof runs: a run killed with SIGKILL resumes to exactly the card of an uninterrupted run, asking the model
nothing it had already answered; a disk that fills up mid-run stops it with a message, and the rerun resumes."""

import errno
import json
import os
import sqlite3
from pathlib import Path

import pytest
from conftest import complete_lines, kill_mid_run, run_cli

from benchmark import BenchmarkError
from benchmark.run.runner import run

N = 300  # records
KILL_AFTER = 25  # samples on disk before the kill


def cached_answers(cache_file: Path) -> int:
    with sqlite3.connect(cache_file) as db:
        return db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]


def test_sigkill_then_rerun_equals_an_uninterrupted_run(tmp_path, data_root, compose):
    # one request per chunk: the run writes and fsyncs a sample at a time, so it is still going when we kill it
    args = ("progress=false", f"limit={N}", "chunk_size=1", f"output_dir={tmp_path / 'run'}")
    samples = tmp_path / "run" / "samples.jsonl"
    kill_mid_run(args, tmp_path, samples, KILL_AFTER)
    assert not (tmp_path / "run" / "scorecard.json").exists()  # it was killed mid-run, not after
    finished = complete_lines(samples)
    answered = cached_answers(tmp_path / "results" / ".cache" / "responses.sqlite")
    assert KILL_AFTER <= finished < N
    assert finished <= answered <= finished + 1  # answers are cached before their chunk's samples are written

    again = run_cli(*args, cwd=tmp_path)
    assert again.returncode == 0, again.stderr[-2000:]
    card = json.loads((tmp_path / "run" / "scorecard.json").read_text())
    # the samples on disk are not asked again; the one answered but unwritten comes from the cache
    assert card["run"]["resumed"] == finished
    assert card["run"]["model_calls"] == N - answered
    assert card["run"]["model_calls"] + card["run"]["cache_hits"] == N - finished
    assert cached_answers(tmp_path / "results" / ".cache" / "responses.sqlite") == N  # each request asked once

    # an uninterrupted run of the same command, elsewhere, with its own cache
    ref_card, ref_path = run(compose(f"limit={N}", f"output_dir={tmp_path / 'ref'}",
                                     f"cache_dir={tmp_path / 'ref-cache'}"))
    assert ref_card["run"]["model_calls"] == N and ref_card["run"]["resumed"] == 0
    assert card["metrics"] == ref_card["metrics"] and card["breakdown"] == ref_card["breakdown"]
    assert card["samples"] == ref_card["samples"]  # same sha256: the same samples, in the same order
    assert samples.read_bytes() == ref_path.with_name("samples.jsonl").read_bytes()


def test_disk_full_mid_run_stops_with_a_message_and_the_rerun_resumes(compose, data_root, tmp_path, monkeypatch):
    real_fsync, calls = os.fsync, []

    def fsync(fd):
        if os.readlink(f"/proc/self/fd/{fd}").endswith("samples.jsonl"):
            calls.append(fd)
            if len(calls) == 3:  # the third chunk's write: the disk is full
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    args = ("limit=40", "chunk_size=10", f"output_dir={tmp_path / 'run'}")
    with pytest.raises(BenchmarkError) as err:
        run(compose(*args))
    samples = tmp_path / "run" / "samples.jsonl"
    assert str(err.value) == (f"could not write {samples}: {os.strerror(errno.ENOSPC)}; the samples written before are "
                              "kept: make room (or fix the folder) and rerun the same command to resume")
    monkeypatch.setattr(os, "fsync", real_fsync)
    assert complete_lines(samples) == 30  # two chunks made durable, the third written but not synced
    card, _ = run(compose(*args))
    assert card["run"]["resumed"] == 30 and card["run"]["model_calls"] == 10 and card["run"]["cache_hits"] == 0
    ref, _ = run(compose("limit=40", f"output_dir={tmp_path / 'ref'}", f"cache_dir={tmp_path / 'ref-cache'}"))
    assert card["metrics"] == ref["metrics"] and card["samples"] == ref["samples"]


def test_a_second_run_into_the_same_folder_waits_for_none_and_says_why(compose, data_root, tmp_path):
    """Two jobs that resolve to one run folder never write it at once: the second stops with a clear message."""
    import fcntl

    from benchmark import BenchmarkError
    from benchmark.run.runner import run

    out = tmp_path / "shared-run"
    card, _ = run(compose("model=profanity-check", "limit=5", f"output_dir={out}"))
    with open(out / ".lock", "w") as held:  # another process holding the folder
        fcntl.flock(held, fcntl.LOCK_EX)
        with pytest.raises(BenchmarkError, match="another run is writing .*shared-run now"):
            run(compose("model=profanity-check", "limit=5", f"output_dir={out}"))
    again, _ = run(compose("model=profanity-check", "limit=5", f"output_dir={out}"))  # free again: it resumes
    assert again["metrics"] == card["metrics"] and again["run"]["model_calls"] == 0
