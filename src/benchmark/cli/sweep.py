"""Sweeps (`python -m benchmark --multirun model=a,b task=x,y`): one summary table when the last job is done.

Hydra runs the jobs through the chosen launcher (`hydra/launcher=parallel|slurm_local|slurm`: the presets in
conf/hydra/launcher/, which extend the plugins' `joblib`, `submitit_local` and `submitit_slurm`). Each job writes
`job.json` into its own folder of the sweep directory (on the machine that ran it), and at the end of the sweep
`SweepSummary.on_multirun_end` reads them back and prints one table: model x task, the headline metric with its
95% CI and the score card's path, then each failed job with its error.
"""

from __future__ import annotations

import atexit
import os
import socket
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from hydra.core.utils import JobStatus
from hydra.experimental.callback import Callback
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf
from pydantic import BaseModel, ConfigDict, ValidationError

from ..files import write_json
from ..run.card_record import Metric, ScoreCard

JOB_FILE = "job.json"


@dataclass
class SweepOutcome:
    """What the last sweep this process summarised found (Hydra builds the callback that fills it, so the command
    reads it here): `python -m benchmark` exits 1 when a job failed."""

    failed_jobs: int = 0


LAST_SWEEP = SweepOutcome()


class JobReport(BaseModel):
    """What a job reports to its sweep (its job.json): model, task and either its headline metric and card, or its
    error; the sweep adds the job's number, overrides and where it ran."""

    model_config = ConfigDict(extra="ignore")

    status: str = "failed"  # ok | failed
    model: Optional[str] = None
    task: Optional[str] = None
    error: Optional[str] = None
    headline: Optional[str] = None
    metric: Optional[Metric] = None
    card: Optional[str] = None
    failed_requests: int = 0
    num: Optional[int] = None
    overrides: list[str] = []
    host: Optional[str] = None
    pid: Optional[int] = None

    def value(self) -> tuple[str, str]:
        """The headline and its CI as the summary shows them: a share in %, another unit as it is."""
        m = self.metric
        if m is None:
            return "-", "-"
        if m.unit:
            return f"{m.value:.2f} {m.unit}", f"[{m.ci_low:.2f}, {m.ci_high:.2f}]"
        return f"{100 * m.value:.1f}%", f"[{100 * m.ci_low:.1f}, {100 * m.ci_high:.1f}]"


def job_result(cfg, card: dict | None = None, card_path: Path | None = None,
               error: str | None = None) -> JobReport:
    """What a job returns to the sweep."""
    if error is not None:
        return JobReport(model=OmegaConf.select(cfg, "model.name", default=None),
                         task=OmegaConf.select(cfg, "task.name", default=None), error=error)
    record = ScoreCard.model_validate(card)
    return JobReport(status="ok", model=record.model.name, task=record.task.name, headline=record.task.headline,
                     metric=record.metrics.get(record.task.headline), card=str(card_path),
                     failed_requests=record.run.failed)


def _job_files(sweep_dir: Path) -> list[Path]:
    if not sweep_dir.is_dir():
        return []
    return [p for p in sweep_dir.rglob(JOB_FILE) if ".submitit" not in p.relative_to(sweep_dir).parts]


def read_jobs(sweep_dir: Path) -> list[JobReport]:
    """The job reports of a sweep folder, in job order."""
    jobs = []
    for path in _job_files(sweep_dir):
        try:
            jobs.append(JobReport.model_validate_json(path.read_text(encoding="utf-8")))
        except (OSError, ValidationError) as e:
            jobs.append(JobReport(error=f"unreadable {path}: {e}"))
    return sorted(jobs, key=lambda j: (j.num is None, j.num or 0))


def summary_table(jobs: list[JobReport], sweep_dir: Path | str) -> str:
    ok = [j for j in jobs if j.status == "ok"]
    failed = [j for j in jobs if j.status != "ok"]
    lines = [f"sweep {sweep_dir}: {len(jobs)} jobs, {len(ok)} finished, {len(failed)} failed"]
    # overrides every job shares are said once; those that vary (besides model= and task=) get a column
    shared = set.intersection(*(set(j.overrides) for j in jobs)) if jobs else set()
    if shared:
        lines.append("overrides of every job: " + " ".join(o for o in jobs[0].overrides if o in shared))

    def other(job: JobReport) -> str:
        return " ".join(o for o in job.overrides if o not in shared and not o.startswith(("model=", "task=")))

    if ok:
        show_other = any(other(j) for j in ok)
        header = ("job", "model", "task", *(("overrides",) if show_other else ()), "headline", "value", "95% CI",
                  "score card")
        rows = []
        for j in ok:
            value, ci = j.value()
            if j.failed_requests:
                value += f" ({j.failed_requests} failed requests)"
            rows.append((str(j.num), str(j.model), str(j.task), *((other(j),) if show_other else ()),
                         str(j.headline), value, ci, str(j.card)))
        widths = [max(len(r[i]) for r in (header, *rows)) for i in range(len(header))]
        rule = tuple("-" * w for w in widths)
        lines += ["", *("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in (header, rule, *rows))]
    if failed:
        lines += ["", "failed jobs:"]
        for j in failed:
            what = f"{j.model} on {j.task}" + (f", {other(j)}" if other(j) else "")
            lines.append(f"  job {j.num} ({what}): {j.error}")
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
        if job_return.status == JobStatus.COMPLETED and isinstance(value, (JobReport, dict)):
            result = value if isinstance(value, JobReport) else JobReport.model_validate(value)
        elif job_return.status == JobStatus.COMPLETED:
            result = job_result(config, error="the job returned no result")
        else:  # an exception the job itself did not catch
            result = job_result(config, error=f"{type(value).__name__}: {value}")
        result = result.model_copy(update={"num": int(config.hydra.job.num),
                                           "overrides": list(job_return.overrides or []),
                                           "host": socket.gethostname(), "pid": os.getpid()})
        out = Path(str(config.hydra.runtime.output_dir))
        out.mkdir(parents=True, exist_ok=True)
        write_json(out / JOB_FILE, result.model_dump(exclude_none=True))

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        self._summarised = True
        sweep_dir = Path(str(config.hydra.sweep.dir))
        jobs = read_jobs(sweep_dir)
        LAST_SWEEP.failed_jobs = sum(1 for j in jobs if j.status != "ok")
        sys.stdout.flush()
        print("\n" + summary_table(jobs, sweep_dir), flush=True)
