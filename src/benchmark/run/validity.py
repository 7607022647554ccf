"""How far to trust the judges: their verdicts on human-labelled sets (conf/judge_validation.yaml) against the
humans' labels, asked through the same cached models the run judges with (so each set is judged once per judge
config, ever). A score card's judge entries carry each classifier judge's figures under `measured`; a task that
declares `validation` also has its whole judging procedure (its steps in order, as it judges responses) measured on
one set, which corrects its rate for the judges' errors (metrics.corrected_rate)."""

from __future__ import annotations

import numpy as np

from .. import metrics as M
from ..identity import records_sha256
from ..kinds.judging import near_boundary, run_panel
from ..labelled import absent_file, human_labels, judge_inputs, labelled_rows, validation_sets
from ..models.requests import Classify
from ..templates import render

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


def sets_for(language: str) -> tuple:
    """The sets a judge of a task in this language is measured on."""
    return tuple(vs for vs in validation_sets() if language == MULTILINGUAL or vs.language == language)


def measure(judge, data_root: str | None, resamples: int, seed: int, sets=None) -> dict:
    """{set name: {n, unsafe (the human-labelled unsafe share), data_sha256, precision, recall, specificity, f1,
    macro_f1 (each {value, ci_low, ci_high, n})}} or {set name: "not measured: <why>"}, on `sets` (default: all)."""
    out = {}
    for vs in sets if sets is not None else validation_sets():
        where = f"judge validation set {vs.name}"
        if (absent := absent_file(vs, data_root)) is not None:
            out[vs.name] = f"not measured: {absent} is not under data_root"
            continue
        rows = labelled_rows(vs, data_root)
        inputs = judge_inputs(vs, rows, where)
        gold = np.array(human_labels(vs, rows, where), dtype=np.int64)
        answers = judge.classify([Classify(x) for x in inputs])
        failed = sum(1 for a in answers if not isinstance(a, dict))
        if failed:
            out[vs.name] = f"not measured: {failed} of {len(rows)} requests failed"
            continue
        pred = np.array([bool(a["unsafe"]) for a in answers], dtype=np.int64)
        sha = records_sha256(rows)
        out[vs.name] = {"n": len(rows), "unsafe": round(float(gold.mean()), 4), "data_sha256": sha,
                        "sha256_matches": None if not vs.data.sha256 else sha == vs.data.sha256,
                        **{s: M.point_and_ci(_stat(s), gold, pred, 2, resamples, seed) for s in STATS}}
    return out


def judge_procedure(spec, steps, judges: dict, tie: str, data_root: str | None) -> dict | str:
    """A task's judging steps, in order (the first that flags decides), run over a labelled set whose rows give the
    steps' variables (`spec`: the task's JudgingValidation). {"set", "n", "data_sha256", "gold", "flagged"} (0/1
    strings, in the set's order), or "not measured: <why>"."""
    sets = {s.name: s for s in validation_sets()}
    if spec.set not in sets:
        return f"not measured: no judge validation set {spec.set!r} (conf/judge_validation.yaml has {sorted(sets)})"
    vs = sets[spec.set]
    where = f"judge validation set {vs.name}"
    if (absent := absent_file(vs, data_root)) is not None:
        return f"not measured: {absent} is not under data_root"
    rows = labelled_rows(vs, data_root)
    env = {(i, 0): {k: render(t, row, f"{where}: variables.{k}") for k, t in spec.variables.items()}
           for i, row in enumerate(rows)}  # keyed as judge_step keys a record's responses
    errors: dict = {}
    found = run_panel(steps, judges, env, tie, errors)
    if errors:
        return f"not measured: {len(errors)} of {len(rows)} judge requests failed"
    gold = "".join(map(str, human_labels(vs, rows, where)))
    return {"set": vs.name, "n": len(rows), "data_sha256": records_sha256(rows), "gold": gold,
            "flagged": "".join("0" if found[(i, 0)].step is None else "1" for i in range(len(rows))),
            "near": "".join("1" if near_boundary(found[(i, 0)]) else "0" for i in range(len(rows)))}

