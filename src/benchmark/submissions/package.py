"""Packaging a finished run into a submissions folder, and validating submissions (`python -m benchmark.submit` and
`validate`)."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import yaml

from .. import BenchmarkError
from ..files import inside, unportable, write_json
from ..identity import model_sha256
from ..run import folder as run_folder, scorecard
from ..run.card_record import ScoreCard
from .base import CARD_SUFFIX, MODEL_FILE, NAME, SAMPLES_SUFFIX, SUBMISSIONS_DIR, Problem, capped
from .card import read_card
from .checked import CheckStore
from .configs import full_config, model_config_node, read_yaml
from .loading import load, load_folder
from .privacy import scrub_card
from .rules import check_card
from .samples import strip_sample, task_strings, write_samples


def run_card(folder: Path, doing: str) -> tuple[dict, ScoreCard]:
    """A finished run's card (folder/scorecard.json) as its JSON reads and as its record; BenchmarkError for a folder
    that holds none (`doing`: what was asked of it) or a card the record refuses."""
    if not (folder / "scorecard.json").is_file():
        raise BenchmarkError(f"{folder}: no scorecard.json; {doing} a finished run's folder")
    return typed_card(folder / "scorecard.json")


def typed_card(card_path: Path) -> tuple[dict, ScoreCard]:
    """A card as its JSON reads and as its record (BenchmarkError naming the first field the record refuses)."""
    card = read_card(card_path)
    scorecard.validate(card, str(card_path))
    return card, ScoreCard.model_validate(card)


def package(run_dir: Path, to: Path = SUBMISSIONS_DIR, data_root: str | None = None,
            replace: bool = False) -> tuple[Path, Path | None]:
    """Copy a run's card, its model config and its samples (without the data's texts) into `to/<model>/`. Returns
    the card's path and the card it replaced, if any; a signed card is replaced only with `replace`."""
    card_path = run_dir / "scorecard.json"
    card, record = run_card(run_dir, "package")
    if record.run.limit is not None:
        raise BenchmarkError(f"{card_path}: run.limit={record.run.limit}: a published card covers the whole split;"
                             " run again without limit=")
    name, task = record.model.name, record.task.name
    if not NAME.match(name):
        raise BenchmarkError(f"{card_path}: model.name {name!r} cannot name a folder; use letters, digits, . _ -")
    if why := unportable(name):
        raise BenchmarkError(f"{card_path}: model.name {name!r} cannot name a folder on every file system: {why}")
    samples_path = inside(run_dir, record.samples.file, f"{card_path}: samples.file")
    samples = run_folder.read_samples(samples_path)
    if len(samples) != record.samples.n:
        raise BenchmarkError(f"{samples_path}: {len(samples)} samples; the card says {record.samples.n}")
    card = scrub_card(card, data_root)  # the card as published: its JSON is written below
    for entry in (card["model"], *card.get("judges", []), *([card["attacker"]] if "attacker" in card else [])):
        entry["config_sha256"] = model_sha256(model_config_node(entry["config"]))  # of the config as published
    config = card["model"]["config"]
    folder = Path(to) / name
    model_file = folder / MODEL_FILE
    # the same config up to defaults: a field added to the schema since the folder was made reads as its default
    if model_file.exists() and full_config(read_yaml(model_file)) != full_config(config):
        raise BenchmarkError(f"{model_file} holds another config of model {name}; a folder holds one model "
                             "config: give this one another name (model.name=...)")
    target = folder / (task + CARD_SUFFIX)
    replaced = target if target.exists() else None
    if replaced is not None and not replace and "verification" in read_card(target):
        raise BenchmarkError(f"{target} is a verified (signed) card; packaging would replace it with an unsigned one. "
                             "Pass --replace to replace it (then verify the new card)")
    # built beside the folder and moved in only once it validates: a failed packaging leaves nothing behind
    folder.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder.parent, prefix=".package-") as tmp:
        staged = Path(tmp) / name
        staged.mkdir()
        samples_file = staged / (task + SAMPLES_SUFFIX)
        own = task_strings(record.task.config)
        sha = write_samples([strip_sample(s, own) for s in samples.values()], samples_file)
        card["samples"] = {"file": samples_file.name, "sha256": sha, "n": len(samples)}
        (staged / MODEL_FILE).write_text(yaml.safe_dump(config, sort_keys=False, allow_unicode=True),
                                           encoding="utf-8")
        write_json(staged / target.name, card)
        problems = check_card(staged / target.name, card, config, data_root=data_root)
        if problems:
            raise BenchmarkError("the packaged card does not validate:\n  " + "\n  ".join(map(str, capped(problems))))
        folder.mkdir(exist_ok=True)
        for f in staged.iterdir():
            os.replace(f, folder / f.name)
    return target, replaced


def validate(paths: list[Path], allow_remote_code: bool = False,
             data_root: str | None = None) -> tuple[int, list[Problem]]:
    """Number of valid cards and the problems, over submission roots, model folders or single cards."""
    valid, problems = 0, []
    for path in paths:
        if path.is_file():
            loaded = load_folder(path.parent, True, allow_remote_code, only=path, data_root=data_root)
        elif not path.is_dir():
            problems.append(Problem(str(path), "", "no such file or folder"))
            continue
        # a model folder holds its model config (and never a folder); a submissions folder holds model folders
        elif (path / MODEL_FILE).exists() or not any(p.is_dir() for p in path.iterdir()
                                                        if not p.name.startswith(".")):
            loaded = load_folder(path, True, allow_remote_code, data_root=data_root)
        else:
            # checked afresh; the results are kept for the board, which then opens without checking again
            store = CheckStore(fresh=True)
            try:
                loaded = load(path, thorough=True, allow_remote_code=allow_remote_code, data_root=data_root,
                                store=store, progress=sys.stderr.isatty())
            finally:
                store.close()
            if not loaded.cards and not loaded.rejected:
                problems.append(Problem(str(path), "", "holds no model folder"))
        valid += len(loaded.cards)
        problems += loaded.rejected
    return valid, problems
