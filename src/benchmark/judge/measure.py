"""`python -m benchmark.judge measure [TASK ...] [key=value ...]`: the maintainers' measurement of the shipped judges,
written into the record that ships beside them (judges/validity.json, judging/validity_record.py);
`python -m benchmark.judge measure --table`: that record's figures as docs/judges.md shows them.

For each task's declared judge panel (default: every task whose panel holds a judge the record can know:
validity.record_key), each such judge's verdicts on the labelled sets the task's language is measured on, and the
task's whole judging procedure on its validation set where the record can know every voter; each asked of the judges
themselves, through the response cache (cache_dir), never read from the record."""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from omegaconf import OmegaConf

from .. import BenchmarkError
from ..cache import ResponseCache
from ..composition import compose
from ..identity import model_sha256
from ..judging.engine import Panel
from ..judging.panels import judge_panel
from ..kinds import make_kind
from ..metrics import PUBLISHED_RESAMPLES, PUBLISHED_SEED, youden
from ..models import load_backend, pin_content
from ..models.cached import CachedModel
from ..paths import TASKS_DIR
from ..judging.validity import (figures, judge_key, judge_outcome, procedure_outcome, record_key, sets_for,
                             sets_named)
from ..judging.validity_record import Outcome, set_sha256, shipped, write


@dataclass
class TaskPanel:
    """A task's declared judges, loaded: its composed config, its kind and the panel its steps are asked through."""

    task: str
    cfg: object
    kind: object
    panel: Panel


def recordable_tasks() -> list[str]:
    """The tasks whose declared panel holds a judge the record can know (validity.record_key)."""
    out = []
    for path in sorted(TASKS_DIR.glob("*.yaml")):
        cfg = compose([f"task={path.stem}"])
        kind = make_kind(OmegaConf.to_object(cfg.task), cfg.model)
        if kind.judge_steps and cfg.judge is not None and any(
                record_key(m, model_sha256(m)) for m in judge_panel(cfg, kind)[1].values()):
            out.append(path.stem)
    return out


def load_panel(task: str, overrides: list[str], cache: ResponseCache, loaded: dict) -> TaskPanel:
    """The task's declared judges, their content pinned and hashed as a run pins them, each backend loaded once
    (`loaded`: by config hash, shared between tasks)."""
    cfg = compose([f"task={task}", *overrides])
    kind = make_kind(OmegaConf.to_object(cfg.task), cfg.model)
    voters, configs = judge_panel(cfg, kind)
    judges = {}
    for key, config in configs.items():
        pin_content(config, cfg.data_root)
        sha = model_sha256(config)
        if sha not in loaded:
            print(f"loading judge {config.name}", file=sys.stderr, flush=True)
            loaded[sha] = load_backend(config, cfg.allow_remote_code, cfg.data_root)
        judges[key] = CachedModel(loaded[sha], sha, cache, config, cfg.seed)
    return TaskPanel(task, cfg, kind, Panel({step: [(k, judges[k]) for k in keys] for step, keys in voters.items()}))


def measured(panel: TaskPanel, done: set) -> list[Outcome]:
    """The panel's classifier judges the record can know, on their task's sets, and its procedure where the record
    can know every voter; `done`: the (judge key, set) pairs already measured for another task (left out)."""
    out: list[Outcome] = []
    data_root = panel.cfg.data_root
    for key, judge in panel.panel.judges.items():
        if judge_key(judge) is None or not judge.supports("classify"):
            continue
        for vs in sets_for(panel.cfg.task.language, type(judge.backend).measures):
            if set_sha256(vs) is None or (judge.sha, vs.name) in done or \
                    type(judge.backend).unreadable_set(judge.config, vs.input):
                continue
            got = judge_outcome(judge, vs, data_root, None, progress=True)
            _report(f"{panel.task}: judge {judge.config.name} on {vs.name}", got)
            if isinstance(got, Outcome):
                out.append(got)
                done.add((judge.sha, vs.name))
    if panel.kind.judging_validation is not None:
        spec, steps = panel.kind.judging_validation
        if any(judge_key(j) is None for j in panel.panel.judges.values()):
            _report(f"{panel.task}: its judging steps on {spec.set}", "not recorded: the record cannot know every "
                    "voter (validity.record_key), so a run measures them")
            return out
        got = procedure_outcome(spec, steps, panel.panel, panel.kind.spec.tie, data_root, None, True, panel.task)
        _report(f"{panel.task}: its judging steps on {spec.set}", got)
        if isinstance(got, Outcome):
            out.append(got)
    return out


def _report(what: str, got) -> None:
    if isinstance(got, Outcome):
        flagged, gold = got.flagged.count("1"), got.gold.count("1")
        print(f"{what}: {got.n} rows, {gold} unsafe by people, {flagged} flagged, {got.near.count('1')} near the "
              "boundary", file=sys.stderr, flush=True)
    else:
        print(f"{what}: {got}", file=sys.stderr, flush=True)


def measure(args: list[str]) -> str:
    """Measure the named tasks' panels and add them to the record, or every recordable task's (recordable_tasks())
    and remake the record from them; what it wrote, in words."""
    tasks = [a for a in args if "=" not in a]
    overrides = [a for a in args if "=" in a]
    known = {p.stem for p in TASKS_DIR.glob("*.yaml")}
    unknown = sorted(set(tasks) - known)
    if unknown:
        raise BenchmarkError(f"no task {unknown}; tasks: {', '.join(sorted(known))}")
    whole = not tasks  # every task's panel: the record is remade, keeping nothing no task uses
    tasks = tasks or recordable_tasks()
    cfg = compose([f"task={tasks[0]}", *overrides])
    if not cfg.data_root:
        raise BenchmarkError("measuring the judges reads every labelled set: set data_root=DIR (or "
                             "BENCHMARK_DATA_ROOT) to a folder holding conf/judge_validation.yaml's files")
    Path(cfg.cache_dir).mkdir(parents=True, exist_ok=True)
    cache = ResponseCache.in_folder(cfg.cache_dir)
    outcomes: list[Outcome] = []
    loaded: dict = {}
    done: set = set()
    try:
        for task in tasks:
            outcomes += measured(load_panel(task, overrides, cache, loaded), done)
    finally:
        cache.close()
    return f"{len(outcomes)} outcomes of {len(tasks)} tasks' judges written to {write(outcomes, whole)}"


def _pct(figure: dict) -> str:
    return f"{100 * figure['value']:.1f} [{100 * figure['ci_low']:.1f}–{100 * figure['ci_high']:.1f}]"


def table() -> str:
    """The shipped record as docs/judges.md shows it: each judge's figures on each set (at the published resamples
    and seed), then each task's judging procedure's sensitivity and specificity on its set."""
    sets = sets_named()
    outcomes = sorted(shipped().outcomes.values(), key=lambda o: (o.kind != "judge", o.name, o.set, o.key))
    lines = ["| judge | set | rows | unsafe (people) | flagged | precision | recall | specificity | unsafe F1 |",
             "|---|---|---|---|---|---|---|---|---|"]
    # a judge configured two ways (its settings in a panel) is two judges: each named with its key
    variants = Counter((o.name, o.set) for o in outcomes if o.kind == "judge")
    for o in outcomes:
        if o.kind != "judge" or o.set not in sets:
            continue
        f = figures(sets[o.set], o, PUBLISHED_RESAMPLES, PUBLISHED_SEED)
        name = o.name if variants[o.name, o.set] == 1 else f"{o.name} (`{o.key[:8]}`)"
        lines.append(f"| {name} | {o.set} ({sets[o.set].language}) | {o.n:,} | {o.gold.count('1'):,} | "
                     f"{o.flagged.count('1'):,} | {_pct(f['precision'])} | {_pct(f['recall'])} | "
                     f"{_pct(f['specificity'])} | {_pct(f['f1'])} |")
    lines += ["", "| task's judging steps | set | rows | sensitivity | specificity | Youden's J |",
              "|---|---|---|---|---|---|"]
    for o in outcomes:
        if o.kind == "procedure":
            sens, spec = youden(np.array(list(o.gold), dtype=int), np.array(list(o.flagged), dtype=int))
            lines.append(f"| {o.name} | {o.set} | {o.n:,} | {100 * sens:.1f} | {100 * spec:.1f} | "
                         f"{sens + spec - 1:.2f} |")
    return "\n".join(lines)
