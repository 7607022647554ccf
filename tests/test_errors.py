"""Bad input gets one clear message that names the file, key or value, never a traceback."""

import errno
import json
import os
import re
from pathlib import Path

import pytest
from conftest import run_cli

from benchmark import BenchmarkError
from benchmark.run.runner import run


def test_unknown_model_lists_the_available_ones(tmp_path):
    proc = run_cli("model=gpt-17", cwd=tmp_path)
    assert proc.returncode != 0
    assert "gpt-17" in proc.stderr
    words = set(re.split(r"[\s,'\"]+", proc.stderr))  # whole names: "hf" is not found in "chatglm2-hf"
    for name in ("profanity-check", "hf", "openai-chat", "vllm", "chatglm2"):
        assert name in words, proc.stderr
    assert "Traceback" not in proc.stderr


def test_unknown_task_lists_the_available_ones(tmp_path):
    proc = run_cli("task=diasafty", cwd=tmp_path)
    assert proc.returncode != 0 and "diasafty" in proc.stderr
    words = set(re.split(r"[\s,'\"]+", proc.stderr))
    assert {"diasafety", "diasafety_noctx"} <= words, proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    "group, name, text, key",
    [
        ("model", "typo", "name: typo\nbackend: hf\npretrianed: gpt2\n", "pretrianed"),
        ("task", "mytask", "defaults:\n  - diasafety\n  - _self_\nname: mytask\nlables: []\n", "lables"),
    ],
)
def test_mistyped_key_in_a_config_file_names_key_and_file(tmp_path, group, name, text, key):
    folder = tmp_path / "mine" / group
    folder.mkdir(parents=True)
    (folder / f"{name}.yaml").write_text(text)
    proc = run_cli(f"hydra.searchpath=[file://{tmp_path / 'mine'}]", f"{group}={name}", cwd=tmp_path)
    assert proc.returncode != 0
    assert f"{group}/{name}" in proc.stderr and key in proc.stderr
    assert "Traceback" not in proc.stderr


def test_mistyped_override_names_the_key(tmp_path):
    proc = run_cli("limit=ten", cwd=tmp_path)
    assert proc.returncode != 0 and "limit=ten" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_missing_data_file_names_the_path(tmp_path):
    proc = run_cli(f"data_root={tmp_path / 'nowhere'}", "task=kosbi", cwd=tmp_path)
    assert proc.returncode == 2
    assert f"data file not found: {tmp_path / 'nowhere' / 'kosbi' / 'kosbi_test.json'}" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_the_default_runs_offline_and_a_task_without_its_data_says_where_it_goes(tmp_path):
    """No data folder and no network: the default reads DiaSafety's test split, which ships inside the package; a
    task whose file is not here says in one line which file, and where to put it."""
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "BENCHMARK_DATA_ROOT"}
    env.update({"HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1", "BENCHMARK_CACHE": str(tmp_path / "cache")})
    proc = subprocess.run([sys.executable, "-m", "benchmark", "progress=false"], cwd=tmp_path, env=env,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    card = json.loads(next((tmp_path / "results").glob("*/*/*/scorecard.json")).read_text())
    assert card["dataset"]["source"] == "bundled:diasafety/test.json" and card["dataset"]["sha256_matches_task"]
    proc = subprocess.run([sys.executable, "-m", "benchmark", "task=kosbi"], cwd=tmp_path, env=env,
                          capture_output=True, text=True)
    assert proc.returncode == 2
    assert "could not fetch https://raw.githubusercontent.com/naver-ai/korean-safety-benchmarks/" in proc.stderr
    assert "put the file at DIR/kosbi/kosbi_test.json and set data_root=DIR" in proc.stderr
    assert proc.stderr.count("\n") == 1


def test_limit_zero_and_negative(compose, data_root):
    with pytest.raises(BenchmarkError, match="nothing to evaluate: limit=0"):
        run(compose("limit=0"))
    with pytest.raises(BenchmarkError, match="limit=-3"):
        run(compose("limit=-3"))


def test_unwritable_output_folder_fails_before_any_work(compose, data_root, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with pytest.raises(BenchmarkError, match="is not writable"):
        run(compose(f"output_dir={blocker / 'run'}"))


def test_bad_template_names_the_template(compose, data_root):
    with pytest.raises(BenchmarkError, match=r"messages\[1\]: template error: .*respones"):
        run(compose("model=hf", "model.pretrained=unused", "task.messages.1.content='{{ respones }}'", "limit=2"))


def test_another_config_into_the_same_output_folder_is_refused(compose, data_root, tmp_path):
    out = tmp_path / "shared-out"
    run(compose(f"output_dir={out}", "limit=3"))
    with pytest.raises(BenchmarkError, match="holds a run with a different model_sha256"):
        run(compose(f"output_dir={out}", "limit=3", "model.input=context+response"))


def _lines(path: Path) -> int:
    return len(path.read_text().splitlines())


@pytest.mark.parametrize("other, setting", [
    ("limit=10", "limit (was null, this run has 10)"),
    ("seed=7", "seed (was 1234, this run has 7)"),
    ("ids=[0,1]", 'ids (was null, this run has ["0", "1"])'),
    ("model.generation.max_new_tokens=16", "generation.max_new_tokens (was 32, this run has 16)"),
])
def test_a_run_with_other_sample_settings_never_touches_a_folders_samples(compose, data_root, tmp_path, other,
                                                                          setting):
    out = tmp_path / "full"
    card, path = run(compose(f"output_dir={out}"))
    samples, written = (out / "samples.jsonl").read_bytes(), path.read_bytes()
    assert card["dataset"]["n"] == _lines(out / "samples.jsonl") == 1095
    with pytest.raises(BenchmarkError) as e:
        run(compose(f"output_dir={out}", other))
    message = str(e.value)
    assert f"output folder {out} holds a run with a different " in message and setting in message, message
    assert "Give this run another output_dir" in message and "\n" not in message
    assert (out / "samples.jsonl").read_bytes() == samples and path.read_bytes() == written
    again, _ = run(compose(f"output_dir={out}"))  # the same settings resume as before: nothing asked again
    assert again["run"]["resumed"] == 1095 and again["run"]["model_calls"] == 0


def test_a_folder_from_before_the_settings_were_recorded_resumes_and_is_checked(compose, data_root, tmp_path):
    out = tmp_path / "older"
    run(compose(f"output_dir={out}", "limit=30"))
    manifest = json.loads((out / "run.json").read_text())
    older = {k: v for k, v in manifest.items() if k not in ("seed", "limit", "ids", "generation")}
    (out / "run.json").write_text(json.dumps(older))
    with pytest.raises(BenchmarkError, match=r"limit \(was 30, this run has 10\)"):  # its card says limit=30
        run(compose(f"output_dir={out}", "limit=10"))
    assert _lines(out / "samples.jsonl") == 30
    card, _ = run(compose(f"output_dir={out}", "limit=30"))
    assert card["run"]["resumed"] == 30 and json.loads((out / "run.json").read_text()) == manifest


def test_malformed_records_are_counted_not_fatal(compose, tmp_path):
    root = tmp_path / "data"
    (root / "diasafety").mkdir(parents=True)
    rows = [
        {"context": "hi", "response": "hello there", "category": "Offending User", "label": "Safe"},
        {"context": "hi", "category": "Offending User", "label": "Safe"},  # no response
        {"context": "you idiot", "response": "you are a moron", "category": "Offending User", "label": "Unsafe"},
        {"context": "x", "response": "y", "category": "Sensitive Topics", "label": "Unsafe"},  # not a task label
    ]
    (root / "diasafety" / "test.json").write_text(json.dumps(rows))
    card, _ = run(compose(f"data_root={root}"))
    assert card["dataset"]["n"] == 2 and card["dataset"]["n_total"] == 4
    assert card["dataset"]["sha256_matches_task"] is False
    errors = {m["id"]: m["error"] for m in card["dataset"]["malformed"]}
    assert "response" in errors["1"] and "Sensitive Topics" in errors["3"]


def test_empty_split(compose, tmp_path):
    root = tmp_path / "data"
    (root / "diasafety").mkdir(parents=True)
    (root / "diasafety" / "test.json").write_text("[]")
    with pytest.raises(BenchmarkError, match="nothing to evaluate: the test split has no usable record"):
        run(compose(f"data_root={root}"))


def test_weights_that_cannot_be_found_name_the_path(compose, data_root, tmp_path):
    with pytest.raises(BenchmarkError, match=f"model hf: could not load {tmp_path / 'no-weights'}"):
        run(compose("model=hf", f"model.pretrained={tmp_path / 'no-weights'}", "limit=2"))


def test_unreadable_data_file_names_the_path(compose, tmp_path):
    root = tmp_path / "data"
    (root / "diasafety").mkdir(parents=True)
    (root / "diasafety" / "test.json").write_text('[{"context": "a", "response": ')
    with pytest.raises(BenchmarkError, match=f"could not read {root / 'diasafety' / 'test.json'} as json"):
        run(compose(f"data_root={root}"))


def _no_model_may_load(monkeypatch):
    from benchmark.judging import panels as roles

    monkeypatch.setattr(roles, "load_backend", lambda *a, **k: pytest.fail("a model was loaded before the check"))


def test_unwritable_output_folder_on_the_command_line(tmp_path, data_root):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    proc = run_cli(f"output_dir={blocker / 'run'}", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr == f"error: output folder {blocker / 'run'} is not writable: {os.strerror(errno.ENOTDIR)}\n"


@pytest.mark.parametrize("where", ["output", "cache"])
def test_full_disk_fails_before_any_model_is_loaded(compose, data_root, tmp_path, monkeypatch, where):
    import shutil

    from benchmark.run import folder as run_folder

    out, cache = tmp_path / "out", tmp_path / "cache"
    full = out if where == "output" else cache
    usage = shutil.disk_usage(tmp_path)
    monkeypatch.setattr(run_folder.shutil, "disk_usage",
                        lambda p: usage._replace(free=10 * 2**20) if Path(p) == full else usage)
    _no_model_may_load(monkeypatch)
    what = "output folder" if where == "output" else "response cache folder"
    with pytest.raises(BenchmarkError) as err:
        run(compose(f"output_dir={out}", f"cache_dir={cache}"))
    assert str(err.value) == f"{what} {full}: only 10 MiB free on its disk; need at least 50 MiB"
    assert not (out / "samples.jsonl").exists()


def test_unwritable_cache_folder_fails_before_any_model_is_loaded(compose, data_root, tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    _no_model_may_load(monkeypatch)
    with pytest.raises(BenchmarkError, match=f"response cache folder {blocker / 'cache'} is not writable"):
        run(compose(f"cache_dir={blocker / 'cache'}", f"output_dir={tmp_path / 'out'}"))
