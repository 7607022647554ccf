"""The shipped record of the shipped judges' validity (judges/validity.json): each shipped judge's verdicts on each
pinned labelled set, and each task's judging procedure on its validation set, as the maintainers measured them
(`python -m benchmark.judge measure`). A verdict depends only on the judge's bytes and the set's, so a run whose keys
match reads it instead of asking the judge thousands of times; the figures on a card are computed from it by the same
code that computes them from a live measurement (judging/validity.py).

Keys: a judge's validity.record_key (its config hash, which holds its artifact's sha256 and every setting that
decides its answers; for a packaged classifier, with its installed model files' hash) with the set's declaration (its
pinned rows, labels, input templates); a procedure's hash (its steps, voters' keys, tie rule and variables) with the
set's. A set that pins nothing, or a judge that has no record_key, is never looked up here: it is measured."""

from __future__ import annotations

import functools
import hashlib
import json
import re
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path

from .. import BenchmarkError
from ..config import plain
from ..files import write_json
from ..identity import sha256_json
from ..paths import JUDGES_DIR

RECORD_FILE = JUDGES_DIR / "validity.json"
FORMAT = 1
_BITS = re.compile(r"[01]*")


def set_sha256(vs) -> str | None:
    """What decides a labelled set's inputs and labels: its pinned rows and labels, and the templates that read them;
    None for a set that pins no rows or labels (it is always measured)."""
    if not vs.data.sha256 or not vs.labels_sha256:
        return None
    return sha256_json({"rows": vs.data.sha256, "labels": vs.labels_sha256, "input": dict(vs.input),
                        "unsafe": vs.unsafe, "where": vs.where})


def procedure_sha256(spec, steps, voters: dict, tie: str, vs) -> str | None:
    """What decides a task's judging procedure on its set: every step's full spec in order, the config hash of each of
    its voters ({step: [config sha256, ...]}), the tie rule, the variables rendered from the set's rows; None where the
    set pins nothing."""
    key = set_sha256(vs)
    if key is None:
        return None
    return sha256_json({"set": key, "steps": [plain(s.spec) for s in steps], "voters": voters, "tie": tie,
                        "variables": dict(spec.variables)})


def labels_sha256(gold: str) -> str:
    """The hash a labelled set pins its labels by: of the "0"/"1" string, in row order."""
    return hashlib.sha256(gold.encode()).hexdigest()


@dataclass(frozen=True)
class Outcome:
    """One measured outcome on one labelled set: the human labels and the flags, a "0"/"1" character per row in the
    set's order, and where a flag came within judging.NEAR_BOUNDARY of its judge's decision boundary (another
    machine's rounding may flip it). `key`: the judge's config hash (kind "judge") or the procedure's hash
    (kind "procedure")."""

    kind: str
    key: str
    name: str  # the judge's name, or the task's: for a reader of the file
    set: str
    set_sha256: str
    data_sha256: str
    n: int
    gold: str
    flagged: str
    near: str

    def problem(self) -> str | None:
        if self.kind not in ("judge", "procedure"):
            return f"kind {self.kind!r} is not judge or procedure"
        for name in ("gold", "flagged", "near"):
            value = getattr(self, name)
            if not isinstance(value, str) or len(value) != self.n or not _BITS.fullmatch(value):
                return f"{name} is not {self.n} characters of 0 and 1"
        return None


@dataclass
class Record:
    outcomes: dict  # (kind, key, set_sha256) -> Outcome

    def find(self, kind: str, key: str | None, vs) -> Outcome | None:
        """The outcome of a judge (its config hash) or a procedure (its hash) on this set, where the record holds one
        made on the rows and labels the set pins now."""
        set_key = set_sha256(vs) if key is not None and vs is not None else None
        if set_key is None:
            return None
        found = self.outcomes.get((kind, key, set_key))
        if found is None or found.data_sha256 != vs.data.sha256 or labels_sha256(found.gold) != vs.labels_sha256:
            return None
        return found


def _parse(data, where: str) -> Record:
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("outcomes"), list):
        raise BenchmarkError(f"{where}: not a judge validity record of format {FORMAT} (an object with outcomes)")
    names = {f.name for f in fields(Outcome)}
    out = {}
    for i, item in enumerate(data["outcomes"]):
        if not isinstance(item, dict) or set(item) != names:
            raise BenchmarkError(f"{where}: outcomes[{i}] must have exactly the fields {sorted(names)}")
        outcome = Outcome(**item)
        if (why := outcome.problem()) is not None:
            raise BenchmarkError(f"{where}: outcomes[{i}] ({outcome.name} on {outcome.set}): {why}")
        out[(outcome.kind, outcome.key, outcome.set_sha256)] = outcome
    return Record(out)


@functools.lru_cache(maxsize=1)
def shipped() -> Record:
    """The record that ships with the suite (an empty one where the file is absent)."""
    if not RECORD_FILE.is_file():
        return Record({})
    try:
        data = json.loads(RECORD_FILE.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise BenchmarkError(f"{RECORD_FILE}: could not read it: {e}") from None
    return _parse(data, str(RECORD_FILE))


def write(outcomes: list[Outcome], whole: bool = False) -> Path:
    """The shipped record with these outcomes added (each replacing one of the same key), in a stable order; where
    it is. `whole`: these outcomes are the whole record (every shipped panel was measured), and nothing else is kept,
    so no judge or procedure that no task uses any more stays in it."""
    merged = {} if whole else dict(shipped().outcomes)
    for o in outcomes:  # a procedure several tasks share (a variant of a task) is named by all of them
        old = merged.get((o.kind, o.key, o.set_sha256))
        names = sorted({*(old.name.split(", ") if old is not None else []), *o.name.split(", ")})
        merged[(o.kind, o.key, o.set_sha256)] = replace(o, name=", ".join(names))
    ordered = sorted(merged.values(), key=lambda o: (o.kind, o.name, o.set, o.key))
    write_json(RECORD_FILE, {"format": FORMAT, "outcomes": [asdict(o) for o in ordered]})
    shipped.cache_clear()
    return RECORD_FILE
