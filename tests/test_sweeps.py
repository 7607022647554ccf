"""Sweeps: `--multirun` over models and tasks on Hydra's launchers, and the one summary table at the end."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import data_path, run_cli

MODELS = ("profanity-check", "diasafety-replay")
TASKS = ("diasafety", "diasafety_noctx")


@pytest.fixture
def replay_model(tmp_path) -> Path:
    """A second cheap model: recorded answers replayed by record id, from a file under data_root."""
    folder = tmp_path / "my_configs"
    (folder / "model").mkdir(parents=True)
    (folder / "model" / "diasafety-replay.yaml").write_text(
        "name: diasafety-replay\nbackend: replay\nreplay:\n  path: diasafety/test.json\n"
        "  output: \"{{ category if label == 'Unsafe' and context|length % 3 else 'Safe' }}\"\n"
    )
    return folder


def summary_rows(stdout: str) -> dict[tuple[str, str], list[str]]:
    """The sweep summary's rows by (model, task): [job, model, task, headline, value, 95% CI, card]."""
    assert stdout.count("\nsweep ") == 1, stdout  # one summary per sweep
    summary = stdout[stdout.index("\nsweep ") :]
    rows = {}
    for line in summary.splitlines():
        if re.match(r"^\d+\s", line):
            cells = re.split(r"\s{2,}", line.strip())
            rows[(cells[1], cells[2])] = cells
    return rows


def sweep_cli(*args: str, cwd: Path):
    """`python -m benchmark ARGS`; the finished process and its pid."""
    proc = subprocess.Popen([sys.executable, "-m", "benchmark", *args], cwd=cwd, env=dict(os.environ),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stdout, stderr = proc.communicate(timeout=300)
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr), proc.pid


def check_sweep(proc, cwd: Path, main_pid: int) -> list[dict]:
    assert proc.returncode == 0, proc.stderr[-3000:]
    head = re.search(r"\nsweep (\S+): (\d+) jobs, (\d+) finished, (\d+) failed", proc.stdout)
    assert head and head.group(2, 3, 4) == ("4", "4", "0"), proc.stdout[-3000:]
    rows = summary_rows(proc.stdout)
    assert set(rows) == {(m, t) for m in MODELS for t in TASKS}
    cards = []
    for (model, task), (job, _, _, headline, value, ci, card_path) in rows.items():
        card = json.loads((cwd / card_path).read_text())
        assert (card["model"]["name"], card["task"]["name"]) == (model, task)
        assert card["task"]["headline"] == headline == "macro_f1"
        m = card["metrics"][headline]
        assert value == f"{100 * m['value']:.1f}%" and ci == f"[{100 * m['ci_low']:.1f}, {100 * m['ci_high']:.1f}]"
        assert card["dataset"]["n"] == 12 and card["run"]["model_calls"] == 12
        # the job's own record in the sweep folder says the same
        record = json.loads((cwd / head.group(1) / job / "job.json").read_text())
        assert record["card"] == card_path and record["status"] == "ok" and record["metric"] == m
        assert record["pid"] != main_pid  # the launcher ran it in another process, not the command's own
        cards.append(card)
    # the two models answered differently: each card is its own run, not a copy
    assert len({json.dumps(c["metrics"], sort_keys=True) for c in cards if c["task"]["name"] == "diasafety"}) == 2
    return cards


def test_sweep_with_joblib_launcher(tmp_path, data_root, replay_model):
    proc, pid = sweep_cli("--multirun", "hydra/launcher=parallel", "hydra.launcher.n_jobs=2",
                          f"hydra.searchpath=[file://{replay_model}]", f"model={','.join(MODELS)}",
                          f"task={','.join(TASKS)}", "limit=12", "progress=false", cwd=tmp_path)
    check_sweep(proc, tmp_path, pid)


@pytest.mark.slow  # 12 s; the joblib launcher's sweep covers the summary in every run
def test_sweep_with_submitit_local_launcher(tmp_path, data_root, replay_model):
    proc, pid = sweep_cli("--multirun", "hydra/launcher=slurm_local", "hydra.launcher.timeout_min=10",
                          f"hydra.searchpath=[file://{replay_model}]", f"model={','.join(MODELS)}",
                          f"task={','.join(TASKS)}", "limit=12", "progress=false", cwd=tmp_path)
    check_sweep(proc, tmp_path, pid)
    # every job ran as its own submitit job, with its log
    sweep_dir = next((tmp_path / "results" / ".sweeps").iterdir())
    logs = list((sweep_dir / ".submitit").glob("*/*_log.out"))
    assert len(logs) == 4, logs


def test_failed_job_is_listed_and_the_others_finish(tmp_path, data_root):
    """One job cannot run (a classifier on a task without classifier inputs): the sweep goes on, lists it, exits 1.
    The same sweep folder again, without that job: its summary lists only its own job, whose run resumes."""
    data_path("ricota", "chatgpt_solar_v1.json")
    args = ("--multirun", "hydra.sweep.dir=sweep", "model=profanity-check", "limit=5", "progress=false")
    proc = run_cli(*args, "task=diasafety,ricota", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert "\nsweep sweep: 2 jobs, 1 finished, 1 failed" in proc.stdout
    rows = summary_rows(proc.stdout)
    assert set(rows) == {("profanity-check", "diasafety")}
    assert (tmp_path / rows[("profanity-check", "diasafety")][-1]).is_file()
    failed = proc.stdout[proc.stdout.index("failed jobs:") :]
    assert "job 1 (profanity-check on ricota): task ricota: classify: a classifier model answers one question of a task with classify.classifier_input" in failed
    assert "Traceback" not in proc.stderr

    again = run_cli(*args, "task=diasafety", cwd=tmp_path)
    assert again.returncode == 0 and "\nsweep sweep: 1 jobs, 1 finished, 0 failed" in again.stdout
    rows = summary_rows(again.stdout)
    assert set(rows) == {("profanity-check", "diasafety")}
    card = json.loads((tmp_path / rows[("profanity-check", "diasafety")][-1]).read_text())
    assert card["run"]["model_calls"] == 0 and card["run"]["resumed"] == 5


@pytest.mark.parametrize("preset, schema, int_key, target", [
    ("parallel", "JobLibLauncherConf", "n_jobs", "hydra_plugins.hydra_joblib_launcher.joblib_launcher.JoblibLauncher"),
    ("slurm_local", "LocalQueueConf", "timeout_min",
     "hydra_plugins.hydra_submitit_launcher.submitit_launcher.LocalLauncher"),
    ("slurm", "SlurmQueueConf", "timeout_min", "hydra_plugins.hydra_submitit_launcher.submitit_launcher.SlurmLauncher"),
])
def test_launcher_presets_extend_the_plugins_configs(preset, schema, int_key, target, recwarn):
    """Each preset in conf/hydra/launcher/ composes on top of its plugin's typed config (with version_base 1.3 and
    without Hydra's deprecated automatic schema matching), builds the launcher, and rejects a value of the wrong type."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.errors import ConfigCompositionException
    from hydra.utils import instantiate
    from omegaconf import OmegaConf

    from benchmark.paths import CONF_DIR
    from benchmark.composition import register

    register()
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose("config", overrides=[f"hydra/launcher={preset}"], return_hydra_config=True)
        assert cfg.hydra.launcher._target_ == target
        assert cfg.hydra.runtime.choices["hydra/launcher"] == preset
        assert cfg.hydra.callbacks.sweep_summary._target_ == "benchmark.cli.sweep.SweepSummary"
        launcher = instantiate(cfg.hydra.launcher)
        assert type(launcher).__module__ + "." + type(launcher).__name__ == target
        assert OmegaConf.get_type(cfg.hydra.launcher).__name__ == schema
        with pytest.raises(ConfigCompositionException, match=f"hydra.launcher.{int_key}=many"):
            compose("config", overrides=[f"hydra/launcher={preset}", f"hydra.launcher.{int_key}=many"],
                    return_hydra_config=True)
    assert not [w for w in recwarn if "schema with the same name" in str(w.message)]
    if preset == "slurm":
        assert cfg.hydra.launcher.gpus_per_node == 1 and cfg.hydra.launcher.timeout_min == 240
        assert launcher.params["array_parallelism"] == 32


def test_summary_table_shows_units_failed_requests_and_varying_overrides():
    from benchmark.cli.sweep import JobReport, summary_table

    share = {"value": 0.25, "ci_low": 0.2, "ci_high": 0.3, "n": 40}
    turns = {"value": 2.5, "ci_low": 2.0, "ci_high": 3.25, "n": 12, "unit": "turns"}
    jobs = [
        {"num": 0, "status": "ok", "model": "m", "task": "t", "headline": "unsafe_rate", "metric": share,
         "card": "c0.json", "failed_requests": 3, "overrides": ["model=m", "task=t", "limit=40", "seed=1"]},
        {"num": 1, "status": "ok", "model": "m", "task": "u", "headline": "turns_to_activation", "metric": turns,
         "card": "c1.json", "failed_requests": 0, "overrides": ["model=m", "task=u", "limit=40", "seed=2"]},
        {"num": 2, "status": "failed", "model": "m", "task": "v", "error": "task v: no data",
         "overrides": ["model=m", "task=v", "limit=40", "seed=3"]},
    ]
    text = summary_table([JobReport.model_validate(j) for j in jobs], "S")
    lines = text.splitlines()
    assert lines[0] == "sweep S: 3 jobs, 2 finished, 1 failed" and lines[1] == "overrides of every job: model=m limit=40"
    rows = {line.split()[0]: re.split(r"\s{2,}", line.strip()) for line in lines if re.match(r"^\d\s", line)}
    assert rows["0"] == ["0", "m", "t", "seed=1", "unsafe_rate", "25.0% (3 failed requests)", "[20.0, 30.0]", "c0.json"]
    assert rows["1"] == ["1", "m", "u", "seed=2", "turns_to_activation", "2.50 turns", "[2.00, 3.25]", "c1.json"]
    assert lines[-2:] == ["failed jobs:", "  job 2 (m on v, seed=3): task v: no data"]


KILLED_JOB_APP = '''
import os
import time
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig

from benchmark.cli.sweep import JOB_FILE


@hydra.main(version_base="1.3", config_path=None, config_name=None)
def main(cfg):
    if cfg.x == 1:
        reported = Path(HydraConfig.get().sweep.dir) / "0" / JOB_FILE
        for _ in range(1200):  # until the other job has reported (at most two minutes)
            if reported.exists():
                break
            time.sleep(0.1)
        os._exit(137)  # killed from outside, as the out-of-memory killer or a Slurm time limit would
    return {"status": "ok", "model": "m", "task": "t", "headline": "h", "card": "c", "failed_requests": 0,
            "metric": {"value": 0.5, "ci_low": 0.4, "ci_high": 0.6, "n": 2}}


main()
'''


def test_a_killed_job_still_leaves_a_summary_of_the_others(tmp_path):
    app = tmp_path / "app.py"
    app.write_text(KILLED_JOB_APP)
    out = subprocess.run(
        [sys.executable, str(app), "--multirun", "+x=0,1", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2",
         f"hydra.sweep.dir={tmp_path / 'sweep'}", "+hydra.callbacks.summary._target_=benchmark.cli.sweep.SweepSummary"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert out.returncode != 0
    assert "the sweep stopped before every job reported" in out.stdout
    assert "1 jobs, 1 finished, 0 failed" in out.stdout and "50.0%" in out.stdout
