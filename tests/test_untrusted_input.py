"""Bad or hostile input to a run is one clear line naming the file, key or value; nothing is lost or read outside its
place; a bug in a backend stops the run instead of passing as failed requests."""

from __future__ import annotations

import json
import re

import pytest
from conftest import run_cli

from benchmark import BenchmarkError
from benchmark.run.runner import run


@pytest.mark.parametrize("override, what", [
    ("model.name=../../../../tmp/escaped", "model.name"),
    ("task.name=../../escaped-task", "task.name"),
    ("model.name='a\x00b'", "model.name"),
])
def test_names_that_would_leave_the_results_folder_are_refused(compose, data_root, tmp_path, override, what):
    with pytest.raises(BenchmarkError, match=f"^{what}=.* cannot name a folder"):
        run(compose(override, "limit=2"))
    assert not (tmp_path / "escaped").exists() and not list(tmp_path.glob("**/escaped*"))


@pytest.mark.parametrize("override, message", [
    ("chunk_size=0", "chunk_size=0: use 1 or more"),
    ("chunk_size=-5", "chunk_size=-5: use 1 or more"),
    ("bootstrap=-1", "bootstrap=-1: use 0"),
])
def test_run_settings_out_of_range(compose, data_root, override, message):
    with pytest.raises(BenchmarkError, match=message):
        run(compose(override, "limit=2"))


def test_a_corrupt_line_in_the_middle_stops_the_rerun_and_nothing_is_cut(compose, data_root):
    card, path = run(compose("limit=20", "chunk_size=5"))
    samples = path.parent / "samples.jsonl"
    lines = samples.read_bytes().splitlines(keepends=True)
    damaged = b"".join(lines[:7]) + b'{"id": "7", "broken\n' + b"".join(lines[8:])
    samples.write_bytes(damaged)
    with pytest.raises(BenchmarkError, match=r"samples.jsonl: line 8 is not a sample .* nothing is cut"):
        run(compose("limit=20", "chunk_size=5"))
    assert samples.read_bytes() == damaged  # all 19 finished samples kept
    # a torn last line is what a crash leaves: that one alone is cut, and the run resumes
    samples.write_bytes(b"".join(lines[:12]) + lines[12][:20])
    again, _ = run(compose("limit=20", "chunk_size=5"))
    assert again["run"]["resumed"] == 12 and again["metrics"] == card["metrics"]


def test_a_bug_in_a_backend_stops_the_run(compose, data_root, monkeypatch, tmp_path):
    from benchmark.models.profanity import ProfanityCheck

    real = ProfanityCheck.classify
    calls = []

    def buggy(self, inputs):
        calls.append(len(inputs))
        if len(calls) == 2:
            return real(self, inputs)[0] + 1  # a TypeError inside the backend (a dict plus an int)
        return real(self, inputs)

    monkeypatch.setattr(ProfanityCheck, "classify", buggy)
    with pytest.raises(TypeError):
        run(compose("limit=20", "chunk_size=10"))
    # the first chunk's samples are kept; the failed one is not recorded as failed requests
    written = list((tmp_path / "results").glob("*/*/*/samples.jsonl"))
    assert len(written) == 1 and len(written[0].read_text().splitlines()) == 10
    assert all(json.loads(line)["error"] is None for line in written[0].read_text().splitlines())


def test_a_backend_that_answers_too_few_requests_stops_the_run(compose, data_root, monkeypatch):
    from benchmark.models.profanity import ProfanityCheck

    real = ProfanityCheck.classify
    monkeypatch.setattr(ProfanityCheck, "classify", lambda self, inputs: real(self, inputs)[:-1])
    with pytest.raises(BenchmarkError, match="answered 9 of 10 classify requests"):
        run(compose("limit=10"))


def _model_file(folder, name: str, content: bytes):
    (folder / "model").mkdir(parents=True, exist_ok=True)
    (folder / "model" / f"{name}.yaml").write_bytes(content)


BOMB = "\n".join(["name: bomb", "backend: profanity-check", "args:", "  a0: &a0 [x, x, x, x, x, x, x, x, x]"] + [
    f"  a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 10)]).encode()


@pytest.mark.parametrize("content, message", [
    (b"name: tagged\nbackend: !!python/object/apply:os.system [id]\n", "line 2: tag tag:yaml.org,2002:python/"),
    (b"name: caf\xe9\nbackend: profanity-check\n", "not UTF-8 text (byte 0xe9 at offset 9)"),
    (BOMB, "expands to more than 100,000 YAML nodes"),
    (b"name: twice\nbackend: profanity-check\nbackend: hf\n", "line 3: key 'backend' appears twice"),
])
def test_a_bad_model_file_on_the_search_path_is_one_line(tmp_path, data_root, content, message):
    conf = tmp_path / "my_conf"
    _model_file(conf, "mine", content)
    proc = run_cli(f"hydra.searchpath=[file://{conf}]", "model=mine", "limit=2", cwd=tmp_path, timeout=60)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {conf / 'model' / 'mine.yaml'}: ") and message in lines[0]


def _data(root, content: bytes):
    (root / "diasafety").mkdir(parents=True, exist_ok=True)
    (root / "diasafety" / "test.json").write_bytes(content)


@pytest.mark.parametrize("content, message", [
    (b"", "the file is empty"),
    (b'[{"context": "hi", "response": "x", "category": "Offending User", "label": "Safe"}, {"context": "h',
     "not valid JSON: "),  # the parser's own words follow
    ('[{"context": "café", "response": "x", "category": "Offending User", "label": "Safe"}]'.encode("latin-1"),
     "not UTF-8 text (byte 0xe9 at offset 17)"),
])
def test_a_bad_data_file_names_the_file_and_the_cause(compose, tmp_path, content, message):
    _data(tmp_path / "bad", content)
    with pytest.raises(BenchmarkError, match=re.escape(f"bad/diasafety/test.json as json: {message}")):
        run(compose(f"data_root={tmp_path / 'bad'}", "limit=2"))


@pytest.mark.parametrize("path", ["../../../../etc/os-release", "/etc/os-release", "diasafety/../../x.json"])
def test_a_replay_reads_nothing_outside_data_root(compose, data_root, path):
    with pytest.raises(BenchmarkError, match="must be a relative path inside data_root"):
        run(compose("model=ricota-solar", "task=ricota", f"model.replay.path='{path}'", "limit=2"))
