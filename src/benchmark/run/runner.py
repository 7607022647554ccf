"""One run: records -> requests -> cached responses -> samples.jsonl -> metrics -> scorecard.json.

Every finished sample is appended to samples.jsonl (flushed and fsynced per chunk) before the next chunk starts,
and every answer is in the response cache, so rerunning the same command after a crash resumes where it stopped
and asks the model nothing it already answered.
"""

from __future__ import annotations

import json
import sys
import time
from datetime import datetime, timezone
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

from .. import __version__, BenchmarkError
from ..cache import ResponseCache
from ..composition import compose, task_schema
from ..data import Records
from ..files import write_json
from ..identity import model_sha256, reference_sha256, task_sha256
from ..kinds import Kind, make_kind, score
from ..kinds.base import Roles
from ..models import pin_content
from ..models.base import counts_tokens
from ..models.cached import CachedModel
from ..models.registry import backend_class
from . import scorecard
from .budget import Budget
from .collector import long_lived
from .estimate import per_record
from .folder import (append, check_manifest, check_name, lock_folder, prepare_dir, read_json, read_samples, run_dir_for,
                     sample_settings, write_in_order)
from ..progress import Progress
from ..judging.engine import Panel
from ..judging.panels import (NOT_MEASURED, BackendPool, attacker_config, facts_outdated, judge_facts, judge_panel,
                              judging_validation, open_panel)

POOL = BackendPool()  # the backends this process keeps loaded between runs


def _plain_task(task):
    """The task as plain dataclasses: what the kinds and the record loader read once per record (an OmegaConf
    lookup costs tens of microseconds; this one conversion, a millisecond)."""
    try:
        return OmegaConf.to_object(task)
    except OmegaConfBaseException as e:
        raise BenchmarkError(f"task {task.name}: {type(e).__name__}: {e}") from None


def pins(task_name: str, data_root: str | None, overrides: tuple[str, ...] = ()) -> dict:
    """The `pinned:` values of a task, derived from its data (python -m benchmark.submit pin TASK)."""

    cfg = compose([f"task={task_name}", *overrides])
    spec = _plain_task(cfg.task)
    kind = make_kind(spec, cfg.model)
    records, items, malformed = kind.usable_records(data_root)
    return {"sha256": records.sha256, "records": len(items), "malformed": [m["id"] for m in malformed],
            "reference_sha256": reference_sha256(kind.reference_fields, [{"id": r["id"], **kind.reference(r)} for r in items])}


@dataclass
class Plan:
    """Everything a run is, decided before any model loads: its configs and their hashes, its records, its folder."""

    cfg: Any  # the composed run config; each model config with its content pinned (models.pin_content)
    kind: Kind
    voters: dict  # judging step -> the panel keys that vote on it
    judge_cfgs: dict  # panel key -> judge model config
    attacker_cfg: Any
    hashes: dict  # model, task, judges {key: sha}, attacker
    records: Records  # the task's records as loaded
    items: list  # the records this run evaluates (ids=, limit= applied)
    malformed: list  # {"id", "error"} of the records the task cannot score
    manifest: dict  # what the run folder belongs to: the configs' and data's hashes, the sample settings
    run_dir: Path
    # the fingerprints of weights loaded from this machine (weights.Fingerprint, or None), as `hashes` is laid out
    weights: dict


@dataclass
class Execution:
    """What asking the models gave: one sample per planned record, in record order, and what it cost."""

    samples: list
    asked: int  # records evaluated now (the others were resumed from samples.jsonl)
    model_calls: int = 0
    cache_hits: int = 0
    attacker_calls: int = 0
    judge_calls: dict = field(default_factory=dict)
    # where the time went: loading backends, then each role's wait for its answers (a judge's includes measuring it)
    seconds: dict = field(default_factory=dict)
    judge_facts: dict = field(default_factory=dict)
    # tokens read and written per role (models.usage.Tokens): "model", "attacker", and "judge KEY" per panel key
    tokens: dict = field(default_factory=dict)
    validation: Any = None  # the judging steps on their labelled set (validity.judge_procedure), where declared
    budget: Any = None  # budget.Outcome, where the run set a budget


def _check_settings(cfg) -> None:
    if cfg.limit is not None and cfg.limit < 0:
        raise BenchmarkError(f"limit={cfg.limit}: use a positive number of records, or null for all")
    if cfg.chunk_size is not None and cfg.chunk_size < 1:
        raise BenchmarkError(f"chunk_size={cfg.chunk_size}: use 1 or more requests per batch")
    if cfg.bootstrap < 0:
        raise BenchmarkError(f"bootstrap={cfg.bootstrap}: use 0 (no intervals) or more resamples")
    check_name("model.name", cfg.model.name)
    check_name("task.name", cfg.task.name)
    if cfg.task.better not in ("higher", "lower"):
        raise BenchmarkError(f"task {cfg.task.name}: better={cfg.task.better!r}; use higher or lower")


def _weights(model_cfg, judge_cfgs: dict, attacker_cfg, pin: bool) -> dict:
    """Each config's local weights, fingerprinted (each file hashed once: weights.hashed), as Plan.weights; none
    for a preview (pin=False), which reads no weights."""
    def of(config):
        return backend_class(config).local_weights(config) if pin and config is not None else None

    return {"model": of(model_cfg), "judges": {key: of(j) for key, j in judge_cfgs.items()},
            "attacker": of(attacker_cfg)}


def plan(cfg, pin: bool = True) -> Plan:
    """Stage 1: check the settings, compose the kind, pin and hash every model config, load and choose the records,
    render one record's templates, and name the run folder. Loads no model and writes nothing. `pin=False` (a
    preview): the configs' content (a detector's weights, a replay's file) is neither read nor required."""
    _check_settings(cfg)
    task, model_cfg = cfg.task, cfg.model
    kind = make_kind(_plain_task(task), model_cfg)
    voters, judge_cfgs = judge_panel(cfg, kind)
    attacker_cfg = attacker_config(cfg, kind)
    for config in (model_cfg, *judge_cfgs.values(), *([attacker_cfg] if attacker_cfg is not None else [])):
        backend_class(config).own_settings(config)  # a setting it does not declare, or of another type, is refused
        stray = backend_class(config).stray_fields(config)
        if stray:  # an engine swapped by an override often leaves the other engine's settings: said, not refused
            print(f"warning: model {config.name}: backend {config.backend} does not read "
                  f"{', '.join(f'model.{k}' for k in stray)}: ignored", file=sys.stderr, flush=True)
        if pin:
            pin_content(config, cfg.data_root)  # local weights too: their fingerprint joins the config's hash
    hashes = {"model": model_sha256(model_cfg), "task": task_sha256(OmegaConf.to_container(task, resolve=True),
                                                                    task_schema()),
              "judges": {key: model_sha256(j) for key, j in judge_cfgs.items()},
              "attacker": model_sha256(attacker_cfg) if attacker_cfg is not None else None}

    records, items, malformed = kind.usable_records(cfg.data_root)
    if cfg.ids:
        wanted = {str(i) for i in cfg.ids}
        unknown = sorted(wanted - {r["id"] for r in items})
        if unknown:
            raise BenchmarkError(f"ids: task {task.name} has no usable record with id {unknown[:5]}")
        items = [r for r in items if r["id"] in wanted]
    if cfg.limit is not None:
        items = items[: cfg.limit]
    if not items:
        why = "limit=0" if cfg.limit == 0 else f"the {records.split} split has no usable record ({records.source})"
        raise BenchmarkError(f"task {task.name}: nothing to evaluate: {why}")
    if task.pinned.sha256 and records.sha256 != task.pinned.sha256:
        print(f"warning: the records of {records.source} differ from the version task {task.name} was built on "
              "(pinned.sha256); the score card says so", file=sys.stderr)
    kind.preflight(items[0])
    # a new suite version may parse answers differently: it starts a new run (the response cache still answers)
    identity = {"model_sha256": hashes["model"], "task_sha256": hashes["task"], "data_sha256": records.sha256,
                "benchmark_version": __version__}
    if hashes["judges"]:
        identity["judge_sha256"] = hashes["judges"]
    if hashes["attacker"]:
        identity["attacker_sha256"] = hashes["attacker"]
    # the default folder is named by the identity and the settings, as it always was
    return Plan(cfg, kind, voters, judge_cfgs, attacker_cfg, hashes, records, items, malformed,
                {**identity, **sample_settings(cfg)}, run_dir_for(cfg, identity),
                _weights(model_cfg, judge_cfgs, attacker_cfg, pin))


def execute(p: Plan) -> Execution:
    """Stage 2: in the run folder (locked), ask the models for every record not already done, a chunk at a time, each
    chunk's answers cached and its samples on disk before the next; measure the judges. The lock and the cache are
    released however this ends."""
    cfg = p.cfg
    prepare_dir(p.run_dir)
    prepare_dir(Path(cfg.cache_dir), "response cache folder")
    lock = lock_folder(p.run_dir)
    cache = None
    try:
        check_manifest(p.run_dir, p.manifest)
        cache = ResponseCache.in_folder(cfg.cache_dir)
        return _ask(p, cache)
    finally:
        if cache is not None:
            cache.close()
        lock.release()


def _ask(p: Plan, cache: ResponseCache) -> Execution:
    cfg = p.cfg
    samples_path = p.run_dir / "samples.jsonl"
    done = {i: s for i, s in read_samples(samples_path, repair=True).items() if s.get("error") is None}
    pending = [r for r in p.items if r["id"] not in done]
    out = Execution(samples=[], asked=len(pending), judge_calls={key: 0 for key in p.judge_cfgs})
    # what each judge is and how well it measured, kept beside the samples so a finished run needs no judge loaded
    facts_path = p.run_dir / "judges.json"
    out.judge_facts = read_json(facts_path) if facts_path.exists() else {}
    loaded: dict = {}  # one backend per distinct model: a target that is also the attacker or a judge loads once

    def backend(config):
        key = POOL.key(config, cfg.allow_remote_code, cfg.data_root)
        if key not in loaded:
            started = time.perf_counter()
            if cfg.progress and not POOL.holds(key):
                print(f"loading {config.name} ({config.backend})", file=sys.stderr, flush=True)
            with long_lived():  # a backend lives as long as the process (POOL keeps it)
                loaded[key] = POOL.get(key, config, cfg.allow_remote_code, cfg.data_root)
            out.seconds["loading"] = out.seconds.get("loading", 0.0) + time.perf_counter() - started
        return loaded[key]

    panel = _measured_panel(p, cache, backend, out, pending)
    if pending:
        _answer(p, pending, done, panel, cache, backend, out)
    if loaded:
        POOL.keep(loaded)
    judges = panel.judges
    out.judge_calls = {key: judges[key].calls if key in judges else 0 for key in p.judge_cfgs}
    out.seconds.update({f"judge {key}": judge.seconds for key, judge in judges.items()})
    out.tokens.update({f"judge {key}": judge.tokens for key, judge in judges.items() if pending})
    out.seconds = {k: round(v, 3) for k, v in out.seconds.items()}
    out.samples = [done[r["id"]] for r in p.items]
    write_in_order(samples_path, out.samples)
    return out


def _measured_panel(p: Plan, cache: ResponseCache, backend, out: Execution, pending: list) -> Panel:
    """The run's panel, opened when records are pending or their measurement is missing (judges.json,
    validation.json), and measured then; an empty one when neither."""
    cfg, kind = p.cfg, p.kind
    facts_path, validation_path = p.run_dir / "judges.json", p.run_dir / "validation.json"
    out.validation = read_json(validation_path) if validation_path.exists() else None
    # a run whose judges.json (or validation.json) is missing, unmeasured and now asked to measure, or measured on
    # other labelled sets than are declared now, measures its judges again, even when every sample is done
    unmeasured = facts_outdated(out.judge_facts, cfg) or cfg.judge_validity and (
        any(f.get("measured") == NOT_MEASURED for f in out.judge_facts.values()) or out.validation == NOT_MEASURED)
    validated = kind.judging_validation is None or validation_path.exists()
    if not (pending or (p.judge_cfgs and (not facts_path.exists() or not validated or unmeasured))):
        return Panel({})
    panel = open_panel(p, cache, backend)
    if panel.judges:
        out.judge_facts = {key: judge_facts(judge, cfg) for key, judge in panel.judges.items()}
        write_json(facts_path, out.judge_facts)
    if kind.judging_validation is not None:
        out.validation = judging_validation(kind, panel, cfg)
        write_json(validation_path, out.validation)
    return panel


def _answer(p: Plan, pending: list, done: dict, panel: Panel, cache: ResponseCache, backend, out: Execution) -> None:
    """Ask the roles for the pending records a chunk at a time, each chunk's samples on disk before the next, within
    the run's budget; the model's and attacker's calls, seconds and tokens go to `out`."""
    cfg, kind = p.cfg, p.kind
    samples_path = p.run_dir / "samples.jsonl"
    progress = Progress(len(pending) * kind.requests_per_record, f"{cfg.model.name} on {cfg.task.name}", cfg.progress)
    for key, judge in panel.judges.items():
        judge.progress, judge.role = progress, f"judge {key}"
    roles = Roles(model=CachedModel(backend(cfg.model), p.hashes["model"], cache, cfg.model, cfg.seed, progress),
                  judges=panel)
    if p.attacker_cfg is not None:
        roles.attacker = CachedModel(backend(p.attacker_cfg), p.hashes["attacker"], cache, p.attacker_cfg,
                                     cfg.seed, progress, "attacker")
    budgeted = cfg.budget.tokens is not None or cfg.budget.cost is not None
    spending = Budget(cfg, p.run_dir, {
        "model": (roles.model, cfg.model),
        **({"attacker": (roles.attacker, p.attacker_cfg)} if roles.attacker is not None else {}),
        **{f"judge {key}": (judge, p.judge_cfgs[key]) for key, judge in panel.judges.items()}},
        per_record(p)[0] if budgeted and counts_tokens(roles.model.backend) else None, kind.requests_per_record)
    for line in spending.cannot_stop:
        print(f"warning: {line}", file=sys.stderr, flush=True)
    try:
        with open(samples_path, "ab", buffering=0) as log:
            size, start = cfg.chunk_size or backend_class(cfg.model).chunk_size, 0
            while start < len(pending):
                # cut where the budget would be passed: what does not fit is asked by a rerun with a higher one
                chunk = spending.fit(pending[start : start + size], sum(r["id"] in done for r in p.items),
                                     len(p.items), samples_path)
                lines = []
                for sample in kind.evaluate(chunk, roles):
                    lines.append(json.dumps(sample, ensure_ascii=False) + "\n")
                    done[sample["id"]] = sample
                append(log, "".join(lines).encode("utf-8"), samples_path)
                spending.done(chunk)
                start += len(chunk)
    finally:
        progress.close()
    out.budget = spending.outcome()
    if out.budget is not None and out.budget.exceeded:
        print(f"warning: the run ended past its budget ({_over(out.budget)}): an estimate was low; the card says so",
              file=sys.stderr, flush=True)
    out.model_calls, out.cache_hits = roles.model.calls, roles.model.hits
    out.seconds["model"] = roles.model.seconds
    out.tokens["model"] = roles.model.tokens
    if roles.attacker is not None:
        out.attacker_calls = roles.attacker.calls
        out.seconds["attacker"] = roles.attacker.seconds
        out.tokens["attacker"] = roles.attacker.tokens


def _over(outcome) -> str:
    """The limits a run passed, with what it spent."""
    parts = []
    if outcome.tokens is not None and outcome.spent.tokens > outcome.tokens:
        parts.append(f"{outcome.spent.tokens:,} tokens against budget.tokens={outcome.tokens}")
    if outcome.cost is not None and outcome.spent.cost > outcome.cost:
        parts.append(f"{outcome.spent.cost:.6f} {outcome.currency} against budget.cost={outcome.cost}")
    return "; ".join(parts)


def run(cfg, overrides: list[str] | None = None) -> tuple[dict, Path]:
    """plan -> execute -> score -> card: the card (scorecard.assemble) and its path. `overrides`: the command line's
    key=value arguments, recorded on the card."""
    started, started_at = time.perf_counter(), datetime.now(timezone.utc).isoformat(timespec="seconds")
    p = plan(cfg)
    done = execute(p)

    metrics, breakdown = score(p.kind, done.samples, cfg.bootstrap, cfg.seed, done.validation)
    samples_path = p.run_dir / "samples.jsonl"
    card = scorecard.assemble(p, done, metrics, breakdown, samples_path, started_at, time.perf_counter() - started,
                              overrides)
    card_path = p.run_dir / "scorecard.json"
    try:
        scorecard.write(card, card_path)
    except OSError as e:
        raise BenchmarkError(f"could not write {card_path}: {e.strerror or e}; make room and rerun the same "
                             "command: it makes no model call") from None
    return card, card_path
