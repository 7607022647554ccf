"""Sweeps (`python -m benchmark --multirun model=a,b task=x,y`): one summary table when the last job is done.

Hydra runs the jobs through the chosen launcher (`hydra/launcher=parallel|slurm_local|slurm`: the presets in
conf/hydra/launcher/, which extend the plugins' `joblib`, `submitit_local` and `submitit_slurm`). Each job writes
`job.json` into its own folder of the sweep directory (on the machine that ran it), and at the end of the sweep
`SweepSummary.on_multirun_end` reads them back and prints one table: model x task, the headline metric with its
95% CI and the score card's path, then each failed job with its error.
"""

from __future__ import annotations

import atexit
import json
import os
import socket
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hydra.core.utils import JobStatus
from hydra.experimental.callback import Callback
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

from ..files import write_json
from ..run.card_record import ScoreCard

JOB_FILE = "job.json"


@dataclass
class SweepOutcome:
    """What the last sweep this process summarised found (Hydra builds the callback that fills it, so the command
    reads it here): `python -m benchmark` exits 1 when a job failed."""

    failed_jobs: int = 0


LAST_SWEEP = SweepOutcome()


def job_result(cfg, card: dict | None = None, card_path: Path | None = None, error: str | None = None) -> dict:
    """What a job returns to the sweep: model, task and either its headline metric and card, or its error."""
    result: dict[str, Any] = {
        "model": OmegaConf.select(cfg, "model.name", default=None),
        "task": OmegaConf.select(cfg, "task.name", default=None),
        "status": "failed" if error is not None else "ok",
    }
    if error is not None:
        result["error"] = error
        return result
    record = ScoreCard.model_validate(card)
    metric = record.metrics.get(record.task.headline)
    result.update(model=record.model.name, task=record.task.name, headline=record.task.headline,
                  metric=metric.model_dump(exclude_unset=True) if metric is not None else None, card=str(card_path),
                  failed_requests=record.run.failed)
    return result


def _job_files(sweep_dir: Path) -> list[Path]:
    if not sweep_dir.is_dir():
        return []
    return [p for p in sweep_dir.rglob(JOB_FILE) if ".submitit" not in p.relative_to(sweep_dir).parts]


def read_jobs(sweep_dir: Path) -> list[dict]:
    """The job records of a sweep folder, in job order."""
    jobs = []
    for path in _job_files(sweep_dir):
        try:
            jobs.append(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, json.JSONDecodeError) as e:
            jobs.append({"num": None, "status": "failed", "error": f"unreadable {path}: {e}", "overrides": []})
    return sorted(jobs, key=lambda j: (j.get("num") is None, j.get("num") or 0))


def _value(metric: dict | None) -> tuple[str, str]:
    if not metric:
        return "-", "-"
    if metric.get("unit"):  # not a share: as it is, in its unit
        return (f"{metric['value']:.2f} {metric['unit']}",
                f"[{metric['ci_low']:.2f}, {metric['ci_high']:.2f}]")
    return f"{100 * metric['value']:.1f}%", f"[{100 * metric['ci_low']:.1f}, {100 * metric['ci_high']:.1f}]"


def summary_table(jobs: list[dict], sweep_dir: Path | str) -> str:
    ok = [j for j in jobs if j.get("status") == "ok"]
    failed = [j for j in jobs if j.get("status") != "ok"]
    lines = [f"sweep {sweep_dir}: {len(jobs)} jobs, {len(ok)} finished, {len(failed)} failed"]
    # overrides every job shares are said once; those that vary (besides model= and task=) get a column
    shared = set.intersection(*(set(j.get("overrides", [])) for j in jobs)) if jobs else set()
    if shared:
        lines.append("overrides of every job: " + " ".join(o for o in jobs[0]["overrides"] if o in shared))

    def other(job) -> str:
        return " ".join(o for o in job.get("overrides", [])
                        if o not in shared and not o.startswith(("model=", "task=")))

    if ok:
        show_other = any(other(j) for j in ok)
        header = ["job", "model", "task", *(["overrides"] if show_other else []), "headline", "value", "95% CI",
                  "score card"]
        rows = []
        for j in ok:
            value, ci = _value(j.get("metric"))
            if j.get("failed_requests"):
                value += f" ({j['failed_requests']} failed requests)"
            rows.append([str(j.get("num")), j["model"], j["task"], *([other(j)] if show_other else []),
                         j["headline"], value, ci, j["card"]])
        widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
        lines += ["", *("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip()
                        for r in [header, ["-" * w for w in widths], *rows])]
    if failed:
        lines += ["", "failed jobs:"]
        for j in failed:
            what = f"{j.get('model')} on {j.get('task')}" + (f", {other(j)}" if other(j) else "")
            lines.append(f"  job {j.get('num')} ({what}): {j.get('error')}")
    return "\n".join(lines)


class SweepSummary(Callback):
    """`hydra.callbacks.sweep_summary` in conf/config.yaml."""

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        # a sweep folder given twice (hydra.sweep.dir=DIR) must not summarise the jobs of the earlier sweep
        sweep_dir = Path(str(config.hydra.sweep.dir))
        for path in _job_files(sweep_dir):
            path.unlink(missing_ok=True)
        # a job killed from outside (out of memory, SIGKILL, a Slurm time limit) stops the launcher with an error
        # and Hydra never calls on_multirun_end: the jobs that did finish are still summarised on the way out
        self._summarised = False
        atexit.register(self._summary_on_exit, sweep_dir)

    def _summary_on_exit(self, sweep_dir: Path) -> None:
        if self._summarised:
            return
        jobs = read_jobs(sweep_dir)
        print("\n" + summary_table(jobs, sweep_dir) + "\nthe sweep stopped before every job reported: a job was "
              "killed (out of memory, a signal, a time limit) or the launcher failed; the jobs without a line above "
              "left no result. Rerun the same command: finished runs resume without model calls.", flush=True)

    def on_job_end(self, config: DictConfig, job_return, **kwargs: Any) -> None:
        if config.hydra.mode != RunMode.MULTIRUN:
            return
        value = job_return._return_value
        if job_return.status == JobStatus.COMPLETED and isinstance(value, dict):
            result = dict(value)
        elif job_return.status == JobStatus.COMPLETED:
            result = job_result(config, error="the job returned no result")
        else:  # an exception the job itself did not catch
            result = job_result(config, error=f"{type(value).__name__}: {value}")
        result.update(num=int(config.hydra.job.num), overrides=list(job_return.overrides or []),
                      host=socket.gethostname(), pid=os.getpid())
        out = Path(str(config.hydra.runtime.output_dir))
        out.mkdir(parents=True, exist_ok=True)
        write_json(out / JOB_FILE, result)

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        self._summarised = True
        sweep_dir = Path(str(config.hydra.sweep.dir))
        jobs = read_jobs(sweep_dir)
        LAST_SWEEP.failed_jobs = sum(1 for j in jobs if j.get("status") != "ok")
        sys.stdout.flush()
        print("\n" + summary_table(jobs, sweep_dir), flush=True)
