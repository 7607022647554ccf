"""A card's judge figures (`judges[].measured`) and its judging procedure's flags (`judging_validation`) against the
shipped record of the shipped judges' validity (judges/validity.json): where the record holds a judge's verdicts on a
set, by the hash of the card's own config of that judge, the card's figures for the set are the ones the record gives
at the card's resamples and seed; where it holds the task's procedure with the card's judges, the card's flags are the
record's. Where the record holds neither (a judge of one's own), the card's figures are the submitter's measurement,
which only re-running can check."""

from __future__ import annotations

import functools

from ..identity import model_sha256
from .validity import figures, record_key, sets_named
from .validity_record import Outcome, procedure_sha256, shipped
from ..run.card_record import JudgingValidation, ScoreCard
from ..submissions.base import Problem
from ..submissions.configs import model_config_node


@functools.lru_cache(maxsize=256)
def _figures(outcome: Outcome, resamples: int, seed: int) -> dict:
    vs = sets_named()[outcome.set]
    return figures(vs, outcome, resamples, seed)


def _config_key(config: dict) -> str | None:
    """The record's key of a card's judge (validity.record_key), from its config as the card holds it."""
    node = model_config_node(config)
    return record_key(node, model_sha256(node))


def record_problems(card: ScoreCard, kind, where: str) -> list[Problem]:
    """The card's figures and flags that are not what the shipped record gives for its judges (`kind`: the card's
    task, made as its scoring makes it)."""
    record, sets = shipped(), sets_named()
    judges = card.judges or []
    problems = []
    for i, judge in enumerate(judges):
        unknown = sorted(k for k in judge.measured if k not in sets) if isinstance(judge.measured, dict) else []
        if unknown:
            problems.append(Problem(where, f"judges[{i}].measured.{str(unknown[0])[:40]}",
                                    "is not a labelled set of the suite (conf/judge_validation.yaml)"))
    if not record.outcomes:
        return problems
    keys = [_config_key(j.config) for j in judges]
    for i, (judge, key) in enumerate(zip(judges, keys)):
        if key is None or not isinstance(judge.measured, dict):
            continue
        for name, got in judge.measured.items():
            outcome = record.find("judge", key, sets[name]) if name in sets else None
            stated = got if isinstance(got, str) else got.model_dump(exclude_unset=True)
            if outcome is not None and stated != _figures(outcome, card.run.bootstrap, card.run.seed):
                problems.append(Problem(where, f"judges[{i}].measured.{name}",
                                        f"is not what the shipped record of {judge.name!r:.60} on {name} gives "
                                        "(judges/validity.json): run with validity_record=true"))
    claimed = card.judging_validation
    if not isinstance(claimed, JudgingValidation) or kind.judging_validation is None or None in keys:
        return problems
    spec, steps = kind.judging_validation
    # in the order a run keys them: the task's steps, each step's voters as the card lists them
    voters = {step: [key for judge, key in zip(judges, keys) if judge.step == step] for step in kind.judge_steps}
    vs = sets.get(spec.set)
    outcome = record.find("procedure", procedure_sha256(spec, steps, voters, kind.spec.tie, vs), vs) if vs else None
    if outcome is not None and (claimed.flagged, claimed.near) != (outcome.flagged, outcome.near):
        problems.append(Problem(where, "judging_validation.flagged",
                                f"are not the flags the shipped record of these judges on {spec.set} gives "
                                "(judges/validity.json): run with validity_record=true"))
    return problems
