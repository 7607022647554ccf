"""A model's name and its results are its own: a folder's name is one every common file system can hold, does not
imitate a published model's name, and its cards are not a published model's results copied under that name.

- Portable names (`unportable`): no device name Windows reserves (CON, PRN, AUX, NUL, COM0-9, LPT0-9, CONIN$,
  CONOUT$, CLOCK$, in any case, with any extension), none of < > : " / \\ | ? *, no control character, no dot or
  space at the end, at most 100 characters. `run/folder.py` `check_name` and packaging refuse such a name too.
- Look-alike names (`skeleton`): two names that read the same once look-alike characters are read as one (a
  TR39-style skeleton: compatibility forms and accents apart and dropped, invisible characters dropped, Cyrillic,
  Greek and other Latin look-alikes read as the Latin letter, case folded, then 0 as o, 1, I, i and | as l, 5 as s,
  rn as m, vv as w, cl as d). No library on PyPI gives such a skeleton (confusable_homoglyphs detects mixed scripts,
  confusables is unmaintained), and a folder's name is printable ASCII anyway, so the table is kept here.
- Copied results: a card whose samples record the same outputs (each record's id and what the model said, as its
  kind reads them: `Kind.outputs`) as a card of the same task in another folder. Hashed over those outputs, not the
  file's bytes, so re-compressing, reordering or re-judging a copy changes nothing.

What "published" means here: a folder that holds a card verified by a listed verifier key (`verification` signed
over the whole card, the model's name included, and `verified`). No submitter can make that for a new name, and every
card of the published tree is verified. So a folder is refused when its name looks like a published folder's name, or
when one of its cards records the outputs of a published card of another folder; the published folder itself is not
refused for that, unless what it imitates is published too (two published look-alikes or copies are both refused).
Folders whose names are the same once normalised, case-folded and trimmed are refused on both sides by
`submissions.load_folder` itself (base.name_key); this module only adds what that rule does not see.

Everything compared is read once per load (one `Siblings`), every read is bounded, and a samples file's outputs are
kept by its identity and content (in the check store too), so a board that loads again reads no samples file again.
"""

from __future__ import annotations

import os
import stat
import threading
import unicodedata
import weakref
from collections import OrderedDict
from pathlib import Path

from .. import BenchmarkError
from ..identity import file_sha256, sha256_json
from ..kinds import kind_class
from ..run.card_record import Verification
from . import checked
from .base import CARD_SUFFIX, MAX_FILES, SAMPLES_SUFFIX, Problem, name_key, task_registry
from .card import card_bytes, parse_card
from .samples import DATA_KEYS, read_samples
from .signing import verification_problems

# ---------------------------------------------------------------------------------------------------- look-alikes

# letters of other scripts, and Latin letters NFKD does not take apart, that look like a Latin letter
_HOMOGLYPHS = str.maketrans({
    # Cyrillic
    "а": "a", "А": "A", "В": "B", "Ь": "b", "с": "c", "С": "C", "ԁ": "d", "е": "e", "Е": "E", "һ": "h",
    "Һ": "h", "Н": "H", "і": "i", "І": "I", "ј": "j", "Ј": "J", "к": "k", "К": "K", "ӏ": "l", "Ӏ": "I", "М": "M",
    "о": "o", "О": "O", "р": "p", "Р": "P", "ԛ": "q", "Ԛ": "Q", "ѕ": "s", "Ѕ": "S", "Т": "T", "ѵ": "v", "Ѵ": "V",
    "ԝ": "w", "Ԝ": "W", "х": "x", "Х": "X", "у": "y", "У": "Y", "ү": "y", "Ү": "Y",
    # Greek
    "α": "a", "Α": "A", "Β": "B", "ϲ": "c", "Ϲ": "C", "Ε": "E", "Η": "H", "ι": "i", "Ι": "I", "ϳ": "j", "κ": "k",
    "Κ": "K", "Μ": "M", "ν": "v", "Ν": "N", "ο": "o", "Ο": "O", "ρ": "p", "Ρ": "P", "Τ": "T", "υ": "u", "Υ": "Y",
    "γ": "y", "χ": "x", "Χ": "X", "Ζ": "Z",
    # Armenian
    "օ": "o", "Օ": "O", "ս": "u", "Ս": "U", "հ": "h", "ո": "n", "Տ": "S",
    # Latin letters of their own
    "ı": "i", "ȷ": "j", "ɑ": "a", "ɡ": "g", "ǀ": "l", "ł": "l", "ø": "o", "Ø": "O", "đ": "d", "ħ": "h",
})
# then, case folded: digits and signs that look like a letter, and letters that look like another
_LOOKALIKES = str.maketrans({"0": "o", "1": "l", "i": "l", "|": "l", "5": "s"})
_SEQUENCES = (("rn", "m"), ("vv", "w"), ("cl", "d"))


def skeleton(name: str) -> str:
    """What a name looks like: two names with one skeleton are told apart by their look-alike characters only."""
    text = unicodedata.normalize("NFKD", name)  # compatibility forms (fullwidth, ligatures, math letters), accents
    text = "".join(c for c in text if unicodedata.category(c) not in ("Mn", "Me", "Cf"))  # accents, invisibles
    text = text.translate(_HOMOGLYPHS).casefold().translate(_LOOKALIKES)
    for seen, read in _SEQUENCES:
        text = text.replace(seen, read)
    return text.strip()


# ---------------------------------------------------------------------------------------------------- the tree


def imitation_problems(folder: Path, siblings, store=None) -> list[Problem]:
    """The problems of a model folder whose name looks like a published folder's beside it (`siblings`: the names of
    the folders beside it, submissions.Siblings), or one of whose cards records the outputs of a published card of
    another folder; never an exception (what cannot be read is not compared: the card's own checks say why)."""
    try:
        return _Tree.of(folder.parent, siblings, store).problems(folder.name)
    except Exception as e:  # whatever a folder holds, the others load
        return [Problem(str(folder), "", f"could not be compared with the folders beside it: {type(e).__name__}: "
                                         f"{str(e)[:300]}")]


class _Tree:
    """The folders of one submissions folder as one load sees them (one Siblings): their names by skeleton, each
    task's cards by the hash of their outputs, and which folders and cards are published; each read once."""

    _kept: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # Siblings -> _Tree

    def __init__(self, root: Path, names: list[str], store):
        self.root, self.names, self.store = root, sorted(names), store
        self.by_skeleton: dict[str, list[str]] = {}
        for name in self.names:
            self.by_skeleton.setdefault(skeleton(name), []).append(name)
        self.holders: dict[str, list[str]] = {}  # task -> the folders holding a card of it, and its samples
        self.by_outputs: dict[str, dict[str, list[str]]] = {}  # task -> outputs hash -> folders
        self.verified: dict[Path, bool] = {}

    @classmethod
    def of(cls, root: Path, siblings, store) -> _Tree:
        tree = cls._kept.get(siblings)
        if tree is None or tree.root != root or tree.store is not store:
            tree = cls(root, [n for names in siblings.by_key.values() for n in names], store)
            cls._kept[siblings] = tree
        return tree

    def problems(self, name: str) -> list[Problem]:
        folder = self.root / name
        problems = [Problem(str(folder), "", f"looks like the published model {other!r} beside it (the same name "
                                             "once look-alike characters are read as one: 0 as o; 1, I, i and | as "
                                             "l; 5 as s; rn as m; Cyrillic and Greek letters as the Latin ones they "
                                             "look like): a model's name must not imitate a published model's")
                    for other in self.by_skeleton.get(skeleton(name), [])
                    if name_key(other) != name_key(name) and self._published(other)]
        for task in self._tasks(folder):
            if not set(self._holders(task)) - {name}:  # no other card of the task: its samples are not read here
                continue
            mine = self._outputs(name, task)
            if mine is None:
                continue
            for other in self._by_outputs(task).get(mine, []):
                theirs = self.root / other / (task + CARD_SUFFIX)
                if other != name and self._is_verified(theirs):
                    problems.append(Problem(str(folder / (task + CARD_SUFFIX)), "samples",
                                            f"the outputs in {task}{SAMPLES_SUFFIX} are those of the published card "
                                            f"{theirs} (model {other!r}): a copy of another model's results under "
                                            "a new name is not a submission"))
        return problems

    def _published(self, name: str) -> bool:
        """Whether the folder holds a card verified by a listed key."""
        return any(self._is_verified(p) for p in _card_paths(self.root / name))

    def _is_verified(self, path: Path) -> bool:
        if path not in self.verified:
            self.verified[path] = _verified(path)
        return self.verified[path]

    def _holders(self, task: str) -> list[str]:
        if task not in self.holders:
            self.holders[task] = [name for name in self.names if _regular(self.root / name / (task + CARD_SUFFIX))
                                  and _regular(self.root / name / (task + SAMPLES_SUFFIX))]
        return self.holders[task]

    def _by_outputs(self, task: str) -> dict[str, list[str]]:
        if task not in self.by_outputs:
            found: dict[str, list[str]] = {}
            for name in self._holders(task):
                h = self._outputs(name, task)
                if h is not None:
                    found.setdefault(h, []).append(name)
            self.by_outputs[task] = found
        return self.by_outputs[task]

    def _outputs(self, name: str, task: str) -> str | None:
        """The hash of the outputs of the folder's card of `task`; None where there is none or it cannot be read."""
        if name not in self._holders(task):
            return None
        samples = self.root / name / (task + SAMPLES_SUFFIX)
        try:
            sha = self.store.sha256(samples) if self.store is not None else _file_sha256(samples)
        except OSError:  # gone since the folder was looked at
            return None
        return _outputs_sha256(samples, sha, task, self.store)

    @staticmethod
    def _tasks(folder: Path) -> list[str]:
        return sorted(p.name.removesuffix(CARD_SUFFIX) for p in _card_paths(folder))


def _regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def _card_paths(folder: Path) -> list[Path]:
    """The folder's cards (regular files named TASK.json), at most base.MAX_FILES of its entries looked at."""
    try:
        with os.scandir(folder) as found:
            entries = [e for _, e in zip(range(MAX_FILES), found)]
    except OSError:
        return []
    return sorted(Path(e.path) for e in entries if e.name.endswith(CARD_SUFFIX) and e.is_file(follow_symlinks=False))


def _verified(path: Path) -> bool:
    """Whether the card is verified by a listed verifier key (its signature over the card as it is)."""
    try:
        card = parse_card(path, card_bytes(path))
        block = Verification.model_validate(card.get("verification"))
        return block.verified and not verification_problems(card, block, "")
    except Exception:  # unreadable, or a block that is not one: not verified
        return False


# files read once per process: bounded caches by identity (sha256) and by content and task (outputs)
_MAX_KEPT = 4096
_sha256s: OrderedDict = OrderedDict()
_outputs: OrderedDict = OrderedDict()
_lock = threading.Lock()  # a board may load from more than one thread


def _remember(cache: OrderedDict, key, value):
    with _lock:
        cache[key] = value
        cache.move_to_end(key)
        while len(cache) > _MAX_KEPT:
            cache.popitem(last=False)
    return value


def _recalled(cache: OrderedDict, key, default=None):
    with _lock:
        return cache.get(key, default)


def _file_sha256(path: Path) -> str:
    identity = checked.identity(os.lstat(path))
    kept = _recalled(_sha256s, (str(path), identity))
    if kept is not None:
        return kept
    sha = file_sha256(path)
    if checked.identity(os.lstat(path)) != identity:  # changed while it was read: not kept
        return sha
    return _remember(_sha256s, (str(path), identity), sha)


def _outputs_sha256(path: Path, sha: str, task: str, store=None) -> str | None:
    """The hash of every record's id and outputs (as the task's kind reads them) of the samples file whose sha256 is
    `sha`; None for a file that is not a readable samples file of a known task. Kept by content, in the store too."""
    kept = _recalled(_outputs, (sha, task), _outputs)  # the cache itself: never kept
    if kept is not _outputs:
        return kept
    key = checked.key("outputs", sha, task)
    if store is not None:
        kept = store._get("given", key)  # the table of what a samples file gives, under a key of its own
        if kept is not None:
            return _remember(_outputs, (sha, task), kept or None)
    found, read = _read_outputs(path, task)
    if read != sha:  # changed since it was hashed: not kept (the next load compares it again)
        return found
    if store is not None:
        store._put("given", key, found or "")
    return _remember(_outputs, (sha, task), found)


def _read_outputs(path: Path, task: str) -> tuple[str | None, str | None]:
    """The outputs' hash (None: not a readable samples file of a known task) and the sha256 of the file as it was
    before it was read and still is after (None: it changed, or cannot be read)."""
    try:
        before = file_sha256(path)
        known = task_registry().get(task)
        found = None
        if known is not None:
            try:
                kind = kind_class(known.kind)
                # bounded: a gzip bomb, a runaway line or a field the kind does not write stops the read
                samples = read_samples(path, kind.packaged_fields | set(DATA_KEYS))
                found = sha256_json(sorted(([s["id"], kind.outputs(s)] for s in samples), key=lambda pair: pair[0]))
            except (BenchmarkError, TypeError, AttributeError, KeyError, ValueError):
                found = None
        return found, (before if file_sha256(path) == before else None)
    except OSError:
        return None, None
