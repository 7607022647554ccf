"""Loading published folders: `load` is what the leaderboard and `python -m benchmark.submit validate` call; a model
folder, one folder, and a run folder's cards (load_runs)."""

from __future__ import annotations

import functools
import hashlib
import itertools
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from .. import BenchmarkError
from ..files import unportable
from ..identity import sha256_json
from ..run.card_record import ScoreCard, parsed
from ..progress import Progress
from . import checked
from .base import (CARD_SUFFIX, FOLDER, MAX_CARD_BYTES, MAX_FILES, MODEL_FILE, SAMPLES_SUFFIX, SUBMISSIONS_DIR, Problem,
                   TaskEntry, capped, name_key, task_registry)
from .checked import CheckStore
from .configs import check_model_config, read_yaml
from .names import imitation_problems
from .rules import check_card

from .card import Card, Loaded, card_bytes, parse_card, read_card


def load_model_folder(folder: Path, allow_remote_code: bool = False, thorough: bool = True
                      ) -> tuple[dict | None, list[Problem]]:
    path = folder / MODEL_FILE
    if not FOLDER.fullmatch(folder.name):
        return None, [Problem(str(folder), "", "a model folder's name is printable ASCII, at most 100 characters, "
                                               "without a space at either end")]
    if why := unportable(folder.name):
        return None, [Problem(str(folder), "", f"a model folder's name must name a folder on every file system: {why}")]
    if not path.is_file() and not path.is_symlink():
        return None, [Problem(str(path), "", "missing: every model folder holds its model config")]
    try:
        data = read_yaml(path)
    except BenchmarkError as e:
        return None, [Problem(str(path), "", str(e).removeprefix(f"{path}: "))]
    problems = check_model_config(data, str(path), allow_remote_code, types=thorough)
    if not problems and data.get("name") != folder.name:
        problems.append(Problem(str(path), "name", f"{data.get('name')!r} is not the folder's name {folder.name!r}"))
    return (None if problems else data), problems


@dataclass
class RootState:
    """A submissions folder's entries as they are now: its model folders, and each one's files with their
    identities (checked.py; None for a folder too large to keep or that cannot be read)."""

    folders: list[Path]
    listings: dict[str, list | None]

    @classmethod
    def of(cls, root: Path) -> RootState:
        folders = sorted(p for p in root.iterdir() if not p.name.startswith(".")) if root.is_dir() else []
        return cls(folders, {f.name: _listing(f) for f in folders if f.is_dir() and not f.is_symlink()})

    @functools.cached_property
    def digest(self) -> str:
        """Changes whenever any entry does: what a board keys its loaded cards on, and `load` its kept result."""
        return sha256_json([[(f.name, f.is_dir(), f.is_symlink()) for f in self.folders], self.listings])


def load(root: Path = SUBMISSIONS_DIR, thorough: bool = False, allow_remote_code: bool = False,
         data_root: str | None = None, store: CheckStore | None = None, state: RootState | None = None,
         progress: bool = False) -> Loaded:
    """Every model folder under root: the cards that pass every rule, and the problems of those that do not. A folder
    that cannot be read at all is one problem; the others load as if it were not there. `store`: results of earlier
    checks of the same bytes are taken from it, and new ones kept there (checked.py); `state`: the folder's entries
    as the caller just read them (RootState.of(root)); `progress`: a bar of the folders checked."""
    out = Loaded()
    root = Path(root)
    if store is not None:
        state = state or RootState.of(root)
        folders, listings = state.folders, state.listings
    else:
        folders = sorted(p for p in root.iterdir() if not p.name.startswith(".")) if root.is_dir() else []
        listings = {}
    names = _folder_names(root)
    whole = None
    if store is not None and None not in listings.values():  # the whole folder as when last loaded: every entry of
        # every model folder the same
        whole = checked.key("root", str(root), state.digest, thorough, allow_remote_code)
        slot = f"root {thorough:d}{allow_remote_code:d} {root}"
        kept = store.loaded(slot, whole)
        if kept is not None:
            return kept
    bar = Progress(len(folders), f"checking the cards in {root}", progress, unit="folder")
    for folder in folders:
        bar.answered("model", 1)
        if folder.is_symlink() or not folder.is_dir():
            if folder.is_symlink() or folder.suffix not in (".json", ".sh"):  # the folder's own keys and scripts
                out.rejected.append(Problem(str(folder), "", "not a model folder (a symlink or a stray file)"))
            continue
        if store is None:
            one = load_folder(folder, thorough, allow_remote_code, data_root=data_root, siblings=names)
        else:
            one = _kept_folder(folder, listings[folder.name], thorough, allow_remote_code, data_root, names, store)
        out.cards += one.cards
        out.rejected += one.rejected
    bar.close()
    out.rejected = capped(out.rejected)
    if whole is not None:
        store.keep_loaded(slot, whole, out)
    if store is not None:
        store.save()
    return out


def _kept_folder(folder: Path, listing: list | None, thorough: bool, allow_remote_code: bool, data_root: str | None,
                 siblings: Siblings, store: CheckStore) -> Loaded:
    """load_folder, or what it gave before for a folder whose every entry is the one it read then (`listing`: the
    identities of all its files as the operating system reports them, checked.py: a file cannot be changed without
    changing its own), beside the same names. A board with thousands of folders then reads no file of them."""
    key = None if listing is None else checked.key("folder", str(folder), listing, siblings.like(folder.name),
                                                   [str(p) for p in imitation_problems(folder, siblings, store)],
                                                   thorough, allow_remote_code)
    slot = f"folder {thorough:d}{allow_remote_code:d} {folder}"
    kept = store.loaded(slot, key) if key is not None else None
    if kept is not None:
        return kept
    one = load_folder(folder, thorough, allow_remote_code, data_root=data_root, siblings=siblings, store=store)
    if key is not None:
        store.keep_loaded(slot, key, one)
    return one


def _listing(folder: Path) -> list | None:
    """A model folder's entries as they are now, each name with its identity; None for a folder too large to keep or
    that cannot be read (load_folder says why)."""
    try:
        with os.scandir(folder) as found:
            entries = list(itertools.islice(found, MAX_FILES + 1))
        if len(entries) > MAX_FILES:
            return None
        return sorted((e.name, checked.identity(e.stat(follow_symlinks=False))) for e in entries)
    except OSError:
        return None


def load_folder(folder: Path, thorough: bool = False, allow_remote_code: bool = False,
                only: Path | None = None, data_root: str | None = None, siblings: Siblings | None = None,
                store: CheckStore | None = None) -> Loaded:
    """One model folder (or, with `only`, one card of it): its accepted cards and the problems of the others. Whatever
    the folder holds, it gives problems, never an exception (so the other folders still load). `siblings`: the names
    of the folders beside it (by default read from its parent), which its name must not look like."""
    try:
        names = _folder_names(folder.parent) if siblings is None else siblings
        return _load_folder(folder, thorough, allow_remote_code, only, data_root, names, store)
    except Exception as e:
        return Loaded(rejected=[Problem(str(folder), "", f"could not be checked: {type(e).__name__}: {str(e)[:300]}")])


def _load_folder(folder: Path, thorough: bool, allow_remote_code: bool, only: Path | None,
                 data_root: str | None, siblings: Siblings, store: CheckStore | None) -> Loaded:
    """A folder with any problem shows none of its cards: what it holds beside them is part of the submission."""
    out = Loaded()
    config, problems, model_sha = _model_folder(folder, allow_remote_code, thorough, store)
    problems += [Problem(str(folder), "", f"looks like the model folder {other!r} beside it (the same name once "
                                          "Unicode-normalised, case-folded and trimmed): a model's name must differ "
                                          "from every other's beyond that")
                 for other in siblings.like(folder.name)]
    problems += imitation_problems(folder, siblings, store)
    entries = _entries(folder)
    problems += _entry_problems(folder, entries)
    cards = [only] if only is not None else [e.path for e in entries[:MAX_FILES] if e.path.name.endswith(CARD_SUFFIX)
                                             and e.regular]
    if not cards:
        problems.append(Problem(str(folder), "", "holds no score card"))
    for path in cards:
        if config is None:
            out.rejected.append(Problem(str(path), "", f"its folder's {MODEL_FILE} was rejected"))
            continue
        try:
            card, card_problems = _checked_card(path, config, model_sha, thorough, allow_remote_code, data_root,
                                                store)
        except BenchmarkError as e:
            out.rejected.append(Problem(str(path), "", str(e).removeprefix(f"{path}: ")))
            continue
        if card_problems:
            out.rejected += card_problems
        else:
            out.cards.append(card)
    if (out.rejected or problems) and out.cards:
        problems.append(Problem(str(folder), "", f"{len(out.cards)} valid card(s) not shown while the folder has "
                                                 "problems"))
        out.cards = []
    out.rejected = capped(out.rejected + problems)
    return out


def _model_folder(folder: Path, allow_remote_code: bool, thorough: bool, store: CheckStore | None
                  ) -> tuple[dict | None, list[Problem], str | None]:
    """The folder's model config (None if rejected), its problems, and with a store the config file's sha256."""
    path = folder / MODEL_FILE
    if store is None or path.is_symlink() or not path.is_file() or not FOLDER.fullmatch(folder.name):
        return *load_model_folder(folder, allow_remote_code, thorough), None
    sha = store.sha256(path)
    key = checked.key("model", str(folder), sha, allow_remote_code, thorough)
    kept = store.model(key)
    if kept is None:
        kept = load_model_folder(folder, allow_remote_code, thorough)
        store.keep_model(key, *kept)
    return *kept, sha


def _checked_card(path: Path, config: dict, model_sha: str | None, thorough: bool, allow_remote_code: bool,
                  data_root: str | None, store: CheckStore | None) -> tuple[Card | None, list[Problem]]:
    """The card and its problems; with a store, what an earlier check of the same bytes found."""
    if store is None:
        card = parse_card(path, card_bytes(path))
        problems = check_card(path, card, config, thorough, allow_remote_code, data_root)
        return Card(path, card, config, record=_accepted(card, problems)), problems
    info = os.lstat(path)
    if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_CARD_BYTES:
        card_bytes(path)  # raises what is wrong with it
    sha = store.sha256(path)
    samples = path.parent / (path.name.removesuffix(CARD_SUFFIX) + SAMPLES_SUFFIX)
    samples_sha = store.sha256(samples) if samples.is_file() and not samples.is_symlink() else None
    key = checked.key("card", str(path), sha, samples_sha, model_sha, thorough,
                      allow_remote_code)  # data_root only names the records of a rejected card: it decides nothing
    kept = store.card(key)
    if kept is not None and kept.problems:
        return None, kept.problems
    if kept is not None:  # these bytes passed every check, parse_card's bounds included
        return Card(path, None, config, known_panel=(kept.panel,), summary=kept.summary, sha256=sha,
                    check_key=key), []
    raw = card_bytes(path)
    card = parse_card(path, raw)
    problems = check_card(path, card, config, thorough, allow_remote_code, data_root, store)
    entry = Card(path, card, config, check_key=key, sha256=sha, record=_accepted(card, problems))
    if hashlib.sha256(raw).hexdigest() == sha:  # the bytes checked are those hashed: kept under that hash
        store.keep_card(key, problems, None if problems else entry.panel, None if problems else entry.summary)
    return entry, problems


def _accepted(card: dict, problems: list[Problem]) -> ScoreCard | None:
    """The typed record of a card the checks accepted (one they refused is never read further)."""
    return None if problems else ScoreCard.model_validate(card)


class Siblings:
    """The names of the model folders side by side, grouped by what they look like (name_key)."""

    def __init__(self, names: list[str]):
        self.by_key: dict[str, list[str]] = {}
        for name in names:
            self.by_key.setdefault(name_key(name), []).append(name)

    def like(self, name: str) -> list[str]:
        """The other folders whose names look like this one's."""
        return [other for other in self.by_key.get(name_key(name), []) if other != name]


def _folder_names(root: Path) -> Siblings:
    """The names of the model folders under root (those a board would show a row for)."""
    return Siblings([p.name for p in root.iterdir() if p.is_dir() and not p.is_symlink()] if root.is_dir() else [])


@dataclass
class _Entry:
    path: Path
    regular: bool  # a regular file, not a symlink (nor a folder, a device)


def _entries(folder: Path) -> list[_Entry]:
    """The folder's first MAX_FILES + 1 entries, by name; one directory read, no stat per entry where the file
    system reports the entry's type."""
    with os.scandir(folder) as found:
        entries = list(itertools.islice(found, MAX_FILES + 1))
    return [_Entry(Path(e.path), e.is_file(follow_symlinks=False)) for e in sorted(entries, key=lambda e: e.name)]


def _entry_problems(folder: Path, entries: list[_Entry]) -> list[Problem]:
    """Every entry of a model folder that is not its model config, a card or a card's samples file."""
    problems = []
    if len(entries) > MAX_FILES:
        problems.append(Problem(str(folder), "", f"holds more than {MAX_FILES} files; only the first are read"))
    names = {e.path.name for e in entries}
    for e in entries[:MAX_FILES]:
        name = e.path.name
        samples_of = name.removesuffix(SAMPLES_SUFFIX) + CARD_SUFFIX if name.endswith(SAMPLES_SUFFIX) else None
        if not e.regular:
            problems.append(Problem(str(e.path), "", "not a regular file (a symlink or a folder is never read)"))
        elif name != MODEL_FILE and not name.endswith(CARD_SUFFIX) and samples_of not in names:
            problems.append(Problem(str(e.path), "", f"not part of a submission: a model folder holds {MODEL_FILE} "
                                                     f"and, per task, TASK{CARD_SUFFIX} and TASK{SAMPLES_SUFFIX}"))
    return problems


def load_runs(root: Path) -> tuple[Loaded, dict[str, TaskEntry]]:
    """Your own run folders under root (results/<model>/<task>/<run>/, or any folder holding scorecard.json), for
    `python -m benchmark view`: cards as the runs wrote them, not checked as submissions are (they are yours), but
    never one whose samples file leads outside its folder; each labelled "<model> [<run>, limit N]" so that several
    runs of one model, limited ones too, stand apart; and without a verification block, which proves nothing in a
    card not checked as a submission is. Also the tasks the cards ran: the registry's, or the card's own copy of a
    task the registry does not know."""
    out, registry = Loaded(), dict(task_registry())
    for path in sorted(Path(root).rglob("scorecard.json")):
        try:
            card = read_card(path)
            card.pop("verification", None)
            record, problems = parsed(card)
            if problems:
                raise BenchmarkError("; ".join(f"{field}: {what}" for field, what in problems[:3]))
            limit = record.run.limit
            label = f"{record.model.name} [{path.parent.name}" + (f", limit {limit}" if limit is not None else "") + "]"
            record = record.model_copy(update={"model": record.model.model_copy(update={"name": label})})
            entry = Card(path, card, record.model.config, record=record)
            entry.samples_path  # raises for a samples file outside the run's folder: it is never read
            task = record.task
            registry.setdefault(task.name, TaskEntry.of({**(task.config or {}), "name": task.name, "kind": task.kind,
                                                         "language": task.language, "headline": task.headline}))
            out.cards.append(entry)
        except (BenchmarkError, KeyError, TypeError, AttributeError) as e:
            out.rejected.append(Problem(str(path), "", f"cannot be read as a run's score card: {e}"))
    return out, registry
