"""How far to trust the judges: their verdicts on human-labelled sets (conf/judge_validation.yaml) against the humans'
labels, read from the shipped record (judges/validity.json) where it holds them for the judge and set, else asked
through the same cached models the run judges with (so each set is judged once per judge config, ever). A score
card's judge entries carry each classifier judge's figures under `measured`; a task that declares `validation` also
has its whole judging procedure (its steps in order, as it judges responses) measured on one set, which corrects its
rate for the judges' errors (metrics.corrected_rate)."""

from __future__ import annotations

import contextlib

import numpy as np

from .. import metrics as M
from ..data import local_file
from ..identity import records_sha256, sha256_json
from ..models.registry import backend_class
from ..models.requests import Classify
from ..progress import Progress
from ..templates import render
from .engine import NEAR_BOUNDARY, Panel, near_boundary
from .labelled import absent_file, human_labels, judge_inputs, labelled_rows, set_files, validation_sets
from .validity_record import Outcome, Record, procedure_sha256, set_sha256

STATS = ("precision", "recall", "specificity", "f1", "macro_f1")


def _stat(name: str):
    """A statistic of the unsafe class (code 1) over 0/1 gold and predicted codes; `specificity` is the safe class's
    recall, `macro_f1` the mean F1 of both."""
    def stat(gold, pred, k):
        pc = M.per_class(gold, pred, 2)
        if name == "specificity":
            return pc["recall"][:, 0]
        if name == "macro_f1":
            return M.macro_f1(gold, pred, 2)
        return pc[name][:, 1]

    return stat


MULTILINGUAL = "multi"  # a task's language where its records are in several: its judges are measured on every set


def sets_named() -> dict:
    """The declared labelled sets, by name."""
    return {vs.name: vs for vs in validation_sets()}


def sets_for(language: str, measures: str | None = None) -> tuple:
    """The sets a judge of a task in this language is measured on (`measures`: those that label what its flag says,
    harm or refusal; None: every set a judge is measured on, not those learnt from only)."""
    return tuple(vs for vs in validation_sets() if (language == MULTILINGUAL or vs.language == language)
                 and vs.measures != "nothing" and measures in (None, vs.measures))


def record_key(config, config_sha256: str) -> str | None:
    """What the shipped record knows a judge by: its config hash, where the config pins the judge's content (a
    trained judge's artifact), or that hash with the hash of the model files an installed package ships (a packaged
    classifier's); None for a judge that pins neither, which is always measured."""
    if config.get("sha256"):
        return config_sha256
    installed = backend_class(config).installed_sha256(config)
    return sha256_json([config_sha256, installed]) if installed else None


def judge_key(judge) -> str | None:
    """record_key of a judge as a run holds it (a CachedModel); None for any other object that classifies."""
    config = getattr(judge, "config", None)
    return record_key(config, judge.sha) if config is not None else None


def rows_differ(vs, data_root: str | None, outcome: Outcome) -> bool:
    """Whether the set's file is here with other rows than the record was measured on (then it is measured)."""
    if absent_file(vs, data_root) is not None:
        return False
    return _rows_sha256(vs, data_root) != outcome.data_sha256


_HASHED: dict = {}  # (set, its files' paths, sizes and change times) -> the hash of its rows: read once per file state


def _rows_sha256(vs, data_root: str | None) -> str:
    """The hash of a set's rows here, read once per state of its files (every judge of a run asks it)."""
    paths = [local_file(data_root, rel, vs.name)[0] for rel in set_files(vs)]
    state = (set_sha256(vs), vs.name, tuple((str(f), f.stat().st_size, f.stat().st_mtime_ns) for f in paths))
    if state not in _HASHED:
        _HASHED[state] = records_sha256(labelled_rows(vs, data_root))
    return _HASHED[state]


def _recorded_or_rows(kind: str, key: str | None, vs, data_root: str | None, record: Record | None,
                      only: list[int] | None) -> Outcome | str | list[dict]:
    """The record's outcome of this judge or procedure (`key`) on the set, where it holds one for the rows here; else
    the set's rows to measure on (`only`: these alone, and the record is not read); else why it cannot be."""
    found = record.find(kind, key, vs) if record is not None and only is None else None
    if found is not None and not rows_differ(vs, data_root, found):
        return found
    if (absent := absent_file(vs, data_root)) is not None:
        return f"not measured: {absent} is not under data_root"
    rows = labelled_rows(vs, data_root)
    return rows if only is None else [rows[i] for i in only]


@contextlib.contextmanager
def _shown(judges: list, total: int, desc: str, progress: bool, unit: str):
    """A progress bar that the judges' answers move while they are measured."""
    bar = Progress(total, desc, progress, unit=unit)
    for j in judges:
        j.progress, j.role = bar, "model"
    try:
        yield
    finally:
        bar.close()
        for j in judges:
            j.progress = None


def judge_outcome(judge, vs, data_root: str | None, record: Record | None, progress: bool = False,
                  only: list[int] | None = None) -> Outcome | str:
    """A judge's verdicts on a labelled set: from the shipped record where it holds them for this judge and set (no
    model call), else asked of the judge; "not measured: <why>" where neither can be had. `only`: asked on these rows
    alone (by position), as a verifier re-asks a sample (the record is not read)."""
    rows = _recorded_or_rows("judge", judge_key(judge), vs, data_root, record, only)
    if not isinstance(rows, list):
        return rows
    where = f"judge validation set {vs.name}"
    inputs = judge_inputs(vs, rows, where)
    config = getattr(judge, "config", None)  # a CachedModel's; any object that classifies may be measured
    name = config.name if config is not None else "the judge"
    with _shown([judge], len(rows), f"measuring {name} on {vs.name}", progress, "row"):
        answers = judge.classify([Classify(x) for x in inputs])
    failed = sum(1 for a in answers if not isinstance(a, dict))
    if failed:
        return f"not measured: {failed} of {len(rows)} requests failed"
    near = "".join("1" if isinstance(a.get("margin"), (int, float)) and abs(a["margin"]) <= NEAR_BOUNDARY else "0"
                   for a in answers)
    return Outcome("judge", judge_key(judge) or "", name, vs.name, set_sha256(vs) or "", records_sha256(rows),
                   len(rows), "".join(map(str, human_labels(vs, rows, where))),
                   "".join("1" if a["unsafe"] else "0" for a in answers), near)


def figures(vs, outcome: Outcome, resamples: int, seed: int) -> dict:
    """{n, unsafe (the human-labelled unsafe share), data_sha256, sha256_matches, precision, recall, specificity,
    f1, macro_f1 (each {value, ci_low, ci_high, n})}: a judge's verdicts against the humans' labels."""
    gold = np.array([int(c) for c in outcome.gold], dtype=np.int64)
    pred = np.array([int(c) for c in outcome.flagged], dtype=np.int64)
    return {"n": outcome.n, "unsafe": round(float(gold.mean()), 4), "data_sha256": outcome.data_sha256,
            "sha256_matches": None if not vs.data.sha256 else outcome.data_sha256 == vs.data.sha256,
            **{s: M.point_and_ci(_stat(s), gold, pred, 2, resamples, seed) for s in STATS}}


def measure(judge, data_root: str | None, resamples: int, seed: int, sets=None, record: Record | None = None,
            progress: bool = False) -> dict:
    """{set name: figures} or {set name: "not measured: <why>"}, on `sets` (default: all); from `record` (the shipped
    one) where it holds the judge's verdicts on a set, else measured, with a progress bar where `progress`."""
    out = {}
    for vs in sets if sets is not None else validation_sets():
        outcome = judge_outcome(judge, vs, data_root, record, progress)
        out[vs.name] = outcome if isinstance(outcome, str) else figures(vs, outcome, resamples, seed)
    return out


def procedure_key(spec, steps, panel: Panel, tie: str, vs) -> str | None:
    """The hash the shipped record knows a procedure by (validity_record.procedure_sha256), where it can know every
    voter (record_key) and the set pins its rows and labels; else None."""
    keys = {step: [judge_key(j) for _, j in voters] for step, voters in panel.voters.items()}
    if any(k is None for ks in keys.values() for k in ks):
        return None
    return procedure_sha256(spec, steps, keys, tie, vs)


def procedure_outcome(spec, steps, panel: Panel, tie: str, data_root: str | None, record: Record | None,
                      progress: bool = False, task: str = "", only: list[int] | None = None) -> Outcome | str:
    """A task's judging steps, in order (the first that flags decides), over a labelled set whose rows give the steps'
    variables (`spec`: the task's JudgingValidation): from the shipped record where it holds this procedure (with
    these voters), else run; "not measured: <why>" where neither can be had. `only`: run on these rows
    alone (the record is not read)."""
    sets = sets_named()
    if spec.set not in sets:
        return f"not measured: no judge validation set {spec.set!r} (conf/judge_validation.yaml has {sorted(sets)})"
    vs = sets[spec.set]
    key = procedure_key(spec, steps, panel, tie, vs)
    rows = _recorded_or_rows("procedure", key, vs, data_root, record, only)
    if not isinstance(rows, list):
        return rows
    where = f"judge validation set {vs.name}"
    env = {(i, 0): {k: render(t, row, f"{where}: variables.{k}") for k, t in spec.variables.items()}
           for i, row in enumerate(rows)}  # keyed as judge_step keys a record's responses
    errors: dict = {}
    asked = [j for voters in panel.voters.values() for _, j in voters]
    with _shown(asked, len(rows) * len(asked), f"measuring {task or 'the'} judging steps on {vs.name}", progress,
                "request"):
        verdicts = panel.verdicts(steps, env, tie, errors)
    if errors:
        return f"not measured: {len(errors)} of {len(rows)} judge requests failed"
    return Outcome("procedure", key or "", task, vs.name, set_sha256(vs) or "", records_sha256(rows), len(rows),
                   "".join(map(str, human_labels(vs, rows, where))),
                   "".join("0" if verdicts[(i, 0)].step is None else "1" for i in range(len(rows))),
                   "".join("1" if near_boundary(verdicts[(i, 0)]) else "0" for i in range(len(rows))))


def judge_procedure(spec, steps, panel: Panel, tie: str, data_root: str | None, record: Record | None = None,
                    progress: bool = False, task: str = "") -> dict | str:
    """The procedure's outcome as a card holds it: {"set", "n", "data_sha256", "gold", "flagged", "near"} (0/1
    strings, in the set's order), or "not measured: <why>"."""
    outcome = procedure_outcome(spec, steps, panel, tie, data_root, record, progress, task)
    if isinstance(outcome, str):
        return outcome
    return {"set": outcome.set, "n": outcome.n, "data_sha256": outcome.data_sha256, "gold": outcome.gold,
            "flagged": outcome.flagged, "near": outcome.near}
