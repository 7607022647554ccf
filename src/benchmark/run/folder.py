"""A run's folder: its name, its lock (one run at a time), its manifest (what made its samples: a run with other
settings stops rather than mix its samples in), and samples.jsonl, appended and fsynced a chunk at a time and read
back without ever writing unless the run itself asks for the torn last line of a crash to be cut."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

from omegaconf import OmegaConf

from .. import BenchmarkError
from ..files import unportable, write_json
from ..identity import sha256_json

MIN_FREE_BYTES = 50 * 2**20


NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}\Z")  # a model's or task's name: it names a folder


def check_name(what: str, name) -> None:
    if not isinstance(name, str) or not NAME.match(name):
        raise BenchmarkError(f"{what}={name!r} cannot name a folder: use letters, digits, . _ - (at most 100, "
                             "starting with a letter or digit)")
    if why := unportable(name):
        raise BenchmarkError(f"{what}={name!r} cannot name a folder on every file system: {why}")


def run_dir_for(cfg, manifest: dict) -> Path:
    if cfg.output_dir:
        return Path(cfg.output_dir).expanduser()
    # the same command on the same data always lands in the same folder, which is what lets a rerun resume
    key = [manifest, cfg.limit, cfg.seed, cfg.bootstrap] + ([sorted(cfg.ids)] if cfg.ids else [])
    run_id = sha256_json(key)[:12]
    return Path(cfg.results_dir) / cfg.model.name / cfg.task.name / run_id


def prepare_dir(path: Path, what: str = "output folder") -> None:
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


def append(out, data: bytes, path: Path) -> None:
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


def read_json(path: Path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise BenchmarkError(f"{path} is unreadable ({e}); remove it and rerun the same command to resume") from None


def lock_folder(run_dir: Path):
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
    card = read_json(path) if path.exists() else {}
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


def check_manifest(run_dir: Path, manifest: dict) -> None:
    """A folder holds the samples of one model, task, data, suite version and set of sample settings: a run with
    other ones stops, naming each, before it could mix its samples in or cut the folder's to its own records."""
    path = run_dir / "run.json"
    if not path.exists():
        write_json(path, manifest)
        return
    old = read_json(path)
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


def write_in_order(path: Path, samples: list[dict]) -> None:
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
