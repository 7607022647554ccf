"""One run: records -> requests -> cached responses -> samples.jsonl -> metrics -> scorecard.json.

Every finished sample is appended to samples.jsonl (flushed and fsynced per chunk) before the next chunk starts,
and every answer is in the response cache, so rerunning the same command after a crash resumes where it stopped
and asks the model nothing it already answered.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import time
from datetime import datetime, timezone
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

from . import BenchmarkError, __version__, scorecard
from .budget import Budget
from .cache import ResponseCache
from .files import write_json
from .hashing import sha256_json
from .data import Records
from .kinds import Kind, make_kind
from .kinds.base import Roles
from .models import load_backend, model_sha256, pin_content
from .models.registry import backend_class, chunk_size
from .models.cached import CachedModel
from .progress import Progress

MIN_FREE_BYTES = 50 * 2**20


NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")  # a model's or task's name: it names a folder


def check_name(what: str, name) -> None:
    if not isinstance(name, str) or not NAME.match(name):
        raise BenchmarkError(f"{what}={name!r} cannot name a folder: use letters, digits, . _ - (at most 100, "
                             "starting with a letter or digit)")


def run_dir_for(cfg, manifest: dict) -> Path:
    if cfg.output_dir:
        return Path(cfg.output_dir).expanduser()
    # the same command on the same data always lands in the same folder, which is what lets a rerun resume
    key = [manifest, cfg.limit, cfg.seed, cfg.bootstrap] + ([sorted(cfg.ids)] if cfg.ids else [])
    run_id = sha256_json(key)[:12]
    return Path(cfg.results_dir) / cfg.model.name / cfg.task.name / run_id


def _prepare_dir(path: Path, what: str = "output folder") -> None:
    """Fail before any model is loaded when `path` cannot take the run's files."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / ".write-test"
        probe.write_text("ok")
        probe.unlink()
    except OSError as e:
        raise BenchmarkError(f"{what} {path} is not writable: {e.strerror or e}") from None
    free = shutil.disk_usage(path).free
    if free < MIN_FREE_BYTES:
        raise BenchmarkError(f"{what} {path}: only {free // 2**20} MiB free on its disk; need at least "
                             f"{MIN_FREE_BYTES // 2**20} MiB")


def _append(out, data: bytes, path: Path) -> None:
    """Write one chunk's samples and make them durable before the next chunk starts."""
    try:
        view = memoryview(data)
        while view:
            view = view[out.write(view) :]
        os.fsync(out.fileno())
    except OSError as e:
        raise BenchmarkError(f"could not write {path}: {e.strerror or e}; the samples written before are kept: "
                             "make room (or fix the folder) and rerun the same command to resume") from None


def read_samples(path: Path, repair: bool = False) -> dict[str, dict]:
    """Finished samples by id (the last line for an id wins). A torn last line from a crash is left out, and with
    `repair` (the run itself, under its lock, before it appends) cut off the file; a line that is not a sample
    anywhere else stops the run, naming it: the finished samples after it are never thrown away. Without `repair`
    the file is only read (export and packaging may read a run another process is writing)."""
    samples: dict[str, dict] = {}
    if not path.exists():
        return samples
    good_bytes = 0
    with open(path, "rb") as f:
        for number, raw in enumerate(f, 1):
            try:
                sample = json.loads(raw) if raw.endswith(b"\n") else None
                if sample is not None and not isinstance(sample, dict) or sample is not None and "id" not in sample:
                    raise ValueError("not an object with an id")
            except ValueError as e:  # JSON and UTF-8 errors too
                if f.read(1):
                    raise BenchmarkError(
                        f"{path}: line {number} is not a sample ({type(e).__name__}: {str(e)[:80]}); the lines after "
                        "it are finished samples, so nothing is cut: repair or delete that line, then rerun the same "
                        "command") from None
                break
            if sample is None:  # the last line, without its newline: a write a crash cut short
                break
            samples[sample["id"]] = sample
            good_bytes += len(raw)
    if repair and good_bytes != path.stat().st_size:
        with open(path, "r+b") as f:
            f.truncate(good_bytes)
    return samples


def _read_json(path: Path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise BenchmarkError(f"{path} is unreadable ({e}); remove it and rerun the same command to resume") from None


def _lock(run_dir: Path):
    """One run at a time in a folder (two jobs of a sweep can resolve to the same one): a lock file that works on
    every OS, held until the run ends, however it ends."""
    from filelock import FileLock, Timeout

    lock = FileLock(str(run_dir / ".lock"))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        raise BenchmarkError(f"another run is writing {run_dir} now (the same model, task, data, limit, seed and "
                             "bootstrap); wait for it, or give this one another output_dir") from None
    return lock


# the settings beside the configs' hashes that change a run's samples (seed: of every sampled request; limit, ids:
# which records; generation: the model's): a run folder's samples were made with one of each
SAMPLE_SETTINGS = ("seed", "limit", "ids", "generation")


def sample_settings(cfg) -> dict:
    return {"seed": cfg.seed, "limit": cfg.limit, "ids": sorted(str(i) for i in cfg.ids) if cfg.ids else None,
            "generation": OmegaConf.to_container(cfg.model.generation, resolve=True)}


def _card_settings(run_dir: Path) -> dict:
    """The sample settings a folder's card shows (a folder whose run.json was written before they were recorded)."""
    path = run_dir / "scorecard.json"
    card = _read_json(path) if path.exists() else {}
    run, model = card.get("run") or {}, card.get("model") or {}
    found = {k: run[k] for k in ("seed", "limit") if k in run}
    generation = (model.get("config") or {}).get("generation")
    if generation is not None:
        found["generation"] = generation
    return found


def _shown(value) -> str:
    if isinstance(value, str) and re.fullmatch(r"[0-9a-f]{64}", value):
        return value[:12] + "…"  # a hash
    return json.dumps(value, ensure_ascii=False, default=str)


def _differences(old: dict, new: dict) -> list[str]:
    """Each setting that differs, with the folder's value and this run's (a mapping's keys one by one)."""
    out = []
    for key, value in new.items():
        before = old.get(key)
        if before == value:
            continue
        if isinstance(before, dict) and isinstance(value, dict):
            out += [f"{key}.{k} (was {_shown(before.get(k))}, this run has {_shown(value.get(k))})"
                    for k in sorted(set(before) | set(value), key=str) if before.get(k) != value.get(k)]
        else:
            out.append(f"{key} (was {_shown(before)}, this run has {_shown(value)})")
    return out


def _check_manifest(run_dir: Path, manifest: dict) -> None:
    """A folder holds the samples of one model, task, data, suite version and set of sample settings: a run with
    other ones stops, naming each, before it could mix its samples in or cut the folder's to its own records."""
    path = run_dir / "run.json"
    if not path.exists():
        write_json(path, manifest)
        return
    old = _read_json(path)
    unrecorded = [k for k in SAMPLE_SETTINGS if k in manifest and k not in old]
    if unrecorded:  # written before the settings were recorded: the folder's card says what it ran with
        old = {**{k: manifest[k] for k in unrecorded}, **_card_settings(run_dir), **old}
    changed = _differences(old, manifest)
    if changed:
        raise BenchmarkError(
            f"output folder {run_dir} holds a run with a different {'; '.join(changed)}; a run into it would mix "
            "its samples with those or replace them. Give this run another output_dir (or remove that folder to "
            "start again); the folder is left as it is")
    if unrecorded:
        write_json(path, manifest)


def _plain_task(task):
    """The task as plain dataclasses: what the kinds and the record loader read once per record (an OmegaConf
    lookup costs tens of microseconds; this one conversion, a millisecond)."""
    try:
        return OmegaConf.to_object(task)
    except OmegaConfBaseException as e:
        raise BenchmarkError(f"task {task.name}: {type(e).__name__}: {e}") from None


def _judge_panel(cfg, kind) -> tuple[dict[str, list[str]], dict]:
    """The voters of each judging step the task declares, and their model configs by panel key."""
    if not kind.judge_steps:
        return {}, {}
    task = cfg.task.name
    if cfg.judge is None:
        raise BenchmarkError(f"task {task} needs judges for {kind.judge_steps}; choose a panel with judge=NAME "
                             "(conf/judge/)")
    unknown = sorted(set(cfg.judge.voters) - set(kind.judge_steps))
    if unknown:
        raise BenchmarkError(f"judge {cfg.judge.name}: voters for {unknown}, which task {task} does not judge "
                             f"(its steps: {kind.judge_steps})")
    voters = {s: list(cfg.judge.voters.get(s) or [s]) for s in kind.judge_steps}
    missing = sorted({v for vs in voters.values() for v in vs if v not in cfg.judge.models})
    if missing:
        raise BenchmarkError(f"judge {cfg.judge.name} has no model {missing} for the steps of task {task}; "
                             f"it has {sorted(cfg.judge.models)}")
    return voters, {v: cfg.judge.models[v] for vs in voters.values() for v in vs}


def _judge_facts(judge: CachedModel, cfg) -> dict:
    """What a card records about a judge: the backend's own facts and, for a classifier, its measured agreement with
    human labels (validity.py)."""
    from .validity import measure

    facts = judge.backend.describe()
    if not judge.backend.supports("classify"):
        return facts
    if not cfg.judge_validity:
        return {**facts, "measured": NOT_MEASURED}
    asked = CachedModel(judge.backend, judge.sha, judge.cache, judge.config, judge.seed)  # not the run's judge calls
    return {**facts, "measured": measure(asked, cfg.data_root, cfg.bootstrap, cfg.seed)}


NOT_MEASURED = "not measured: the run said judge_validity=false"


def _judging_validation(kind, panel: dict, p: Plan, cfg):
    """The task's judging steps on their labelled set, through the run's cached judges (not its judge calls)."""
    from .validity import judge_procedure

    if not cfg.judge_validity:
        return NOT_MEASURED
    spec, steps = kind.judging_validation
    asked = {key: CachedModel(j.backend, j.sha, j.cache, j.config, j.seed) for key, j in panel.items()}
    judges = {step: [(key, asked[key]) for key in keys] for step, keys in p.voters.items()}
    return judge_procedure(spec, steps, judges, kind.spec.tie, cfg.data_root)


def _attacker(cfg, kind):
    if not kind.needs_attacker:
        return None
    if cfg.attacker is None:
        raise BenchmarkError(f"task {cfg.task.name} needs an attacker model: attacker=NAME (conf/attacker/)")
    return cfg.attacker


# the models of the last run in this process, kept loaded: a sweep on the basic launcher, or a notebook, that runs
# the same model again (on another task, with other settings) does not load it again
_KEPT: dict = {}


def usable_records(kind, data_root: str | None):
    """The task's records as loaded, those it can score, and {"id", "error"} for each of the others."""
    records = kind.load_records(data_root)
    malformed = list(records.malformed)
    items = []
    for record in records.items:
        problem = kind.check_record(record)
        if problem:
            malformed.append({"id": record["id"], "error": problem})
        else:
            items.append(record)
    return records, items, malformed


def pins(task_name: str, data_root: str | None, overrides: tuple[str, ...] = ()) -> dict:
    """The `pinned:` values of a task, derived from its data (python -m benchmark.submit pin TASK)."""
    from .kinds import reference_sha256
    from .schema import compose

    cfg = compose([f"task={task_name}", *overrides])
    spec = _plain_task(cfg.task)
    kind = make_kind(spec, cfg.model)
    records, items, malformed = usable_records(kind, data_root)
    return {"sha256": records.sha256, "records": len(items), "malformed": [m["id"] for m in malformed],
            "reference_sha256": reference_sha256(kind, [{"id": r["id"], **kind.reference(r)} for r in items])}


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
    voters, judge_cfgs = _judge_panel(cfg, kind)
    attacker_cfg = _attacker(cfg, kind)
    for config in (model_cfg, *judge_cfgs.values(), *([attacker_cfg] if attacker_cfg is not None else [])):
        if pin:
            pin_content(config, cfg.data_root)  # local weights too: their fingerprint joins the config's hash
    from .schema import task_sha256

    hashes = {"model": model_sha256(model_cfg), "task": task_sha256(OmegaConf.to_container(task, resolve=True)),
              "judges": {key: model_sha256(j) for key, j in judge_cfgs.items()},
              "attacker": model_sha256(attacker_cfg) if attacker_cfg is not None else None}

    records, items, malformed = usable_records(kind, cfg.data_root)
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
    _prepare_dir(p.run_dir)
    _prepare_dir(Path(cfg.cache_dir), "response cache folder")
    lock = _lock(p.run_dir)
    cache = None
    try:
        _check_manifest(p.run_dir, p.manifest)
        cache = ResponseCache(Path(cfg.cache_dir) / "responses.sqlite")
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
    out.judge_facts = _read_json(facts_path) if facts_path.exists() else {}
    loaded: dict = {}  # one backend per distinct model: a target that is also the attacker or a judge loads once

    def backend(config):
        # generation settings travel with each request, so they do not make another backend
        key = sha256_json([{k: v for k, v in OmegaConf.to_container(config, resolve=True).items()
                            if k not in ("name", "metadata", "generation")}, cfg.allow_remote_code, cfg.data_root])
        if key not in loaded:
            started = time.perf_counter()
            loaded[key] = _KEPT.get(key) or load_backend(config, cfg.allow_remote_code, cfg.data_root)
            out.seconds["loading"] = out.seconds.get("loading", 0.0) + time.perf_counter() - started
        return loaded[key]

    panel = _measured_panel(p, cache, backend, out, pending)
    if pending:
        _answer(p, pending, done, panel, cache, backend, out)
    if loaded:
        _KEPT.clear()
        _KEPT.update({k: b for k, b in loaded.items() if not b.supports("replay")})  # replays reread their file
    out.judge_calls = {key: panel[key].calls if key in panel else 0 for key in p.judge_cfgs}
    out.seconds.update({f"judge {key}": judge.seconds for key, judge in panel.items()})
    out.tokens.update({f"judge {key}": judge.tokens for key, judge in panel.items() if pending})
    out.seconds = {k: round(v, 3) for k, v in out.seconds.items()}
    out.samples = [done[r["id"]] for r in p.items]
    _write_in_order(samples_path, out.samples)
    return out


def _measured_panel(p: Plan, cache: ResponseCache, backend, out: Execution, pending: list) -> dict:
    """The judges, loaded when records are pending or their measurement is missing (judges.json, validation.json),
    and measured then; {} when neither."""
    cfg, kind = p.cfg, p.kind
    facts_path, validation_path = p.run_dir / "judges.json", p.run_dir / "validation.json"
    out.validation = _read_json(validation_path) if validation_path.exists() else None
    # a run whose judges.json (or validation.json) is missing, or unmeasured and now asked to measure, measures its
    # judges again, even when every sample is done
    unmeasured = cfg.judge_validity and (any(f.get("measured") == NOT_MEASURED for f in out.judge_facts.values())
                                         or out.validation == NOT_MEASURED)
    validated = kind.judging_validation is None or validation_path.exists()
    if not (pending or (p.judge_cfgs and (not facts_path.exists() or not validated or unmeasured))):
        return {}
    panel = {key: CachedModel(backend(j), p.hashes["judges"][key], cache, j, cfg.seed)
             for key, j in p.judge_cfgs.items()}
    if panel:
        out.judge_facts = {key: _judge_facts(judge, cfg) for key, judge in panel.items()}
        write_json(facts_path, out.judge_facts)
    if kind.judging_validation is not None:
        out.validation = _judging_validation(kind, panel, p, cfg)
        write_json(validation_path, out.validation)
    return panel


def _answer(p: Plan, pending: list, done: dict, panel: dict, cache: ResponseCache, backend, out: Execution) -> None:
    """Ask the roles for the pending records a chunk at a time, each chunk's samples on disk before the next, within
    the run's budget; the model's and attacker's calls, seconds and tokens go to `out`."""
    cfg, kind = p.cfg, p.kind
    samples_path = p.run_dir / "samples.jsonl"
    progress = Progress(len(pending) * kind.requests_per_record, f"{cfg.model.name} on {cfg.task.name}", cfg.progress)
    for key, judge in panel.items():
        judge.progress, judge.role = progress, f"judge {key}"
    roles = Roles(model=CachedModel(backend(cfg.model), p.hashes["model"], cache, cfg.model, cfg.seed, progress),
                  judges={step: [(key, panel[key]) for key in keys] for step, keys in p.voters.items()})
    if p.attacker_cfg is not None:
        roles.attacker = CachedModel(backend(p.attacker_cfg), p.hashes["attacker"], cache, p.attacker_cfg,
                                     cfg.seed, progress, "attacker")
    spending = Budget(cfg, p.run_dir, {
        "model": (roles.model, cfg.model),
        **({"attacker": (roles.attacker, p.attacker_cfg)} if roles.attacker is not None else {}),
        **{f"judge {key}": (judge, p.judge_cfgs[key]) for key, judge in panel.items()}})
    try:
        with open(samples_path, "ab", buffering=0) as log:
            size = cfg.chunk_size or chunk_size(cfg.model.backend)
            for start in range(0, len(pending), size):
                chunk = pending[start : start + size]
                spending.check(len(chunk), sum(r["id"] in done for r in p.items), len(p.items), samples_path)
                lines = []
                for sample in kind.evaluate(chunk, roles):
                    lines.append(json.dumps(sample, ensure_ascii=False) + "\n")
                    done[sample["id"]] = sample
                _append(log, "".join(lines).encode("utf-8"), samples_path)
                spending.done(len(chunk))
    finally:
        progress.close()
    out.model_calls, out.cache_hits = roles.model.calls, roles.model.hits
    out.seconds["model"] = roles.model.seconds
    out.tokens["model"] = roles.model.tokens
    if roles.attacker is not None:
        out.attacker_calls = roles.attacker.calls
        out.seconds["attacker"] = roles.attacker.seconds
        out.tokens["attacker"] = roles.attacker.tokens


def _write_in_order(path: Path, samples: list[dict]) -> None:
    """One line per record, in record order: rewrite the log when retries or a wider earlier run left extra lines."""
    with open(path, "rb") as f:
        lines_on_disk = sum(1 for _ in f)
    if lines_on_disk == len(samples):
        return
    tmp = path.with_name(f".samples.{os.getpid()}.jsonl.tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.writelines(json.dumps(s, ensure_ascii=False) + "\n" for s in samples)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as e:
        raise BenchmarkError(f"could not rewrite {path}: {e.strerror or e}; make room and rerun the same command: "
                             "it makes no model call") from None


def run(cfg, overrides: list[str] | None = None) -> tuple[dict, Path]:
    """plan -> execute -> score -> card: the card (scorecard.assemble) and its path. `overrides`: the command line's
    key=value arguments, recorded on the card."""
    started, started_at = time.perf_counter(), datetime.now(timezone.utc).isoformat(timespec="seconds")
    p = plan(cfg)
    done = execute(p)
    from .kinds import score

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
