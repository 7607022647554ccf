"""Who voted and what a verdict says, checked against the card's own judges and each backend's rule: every
judgement's voters are exactly the card's judges of that step, each once; a vote holds only what the judging engine
records; a classifier's verdict (the model's, or a judge's vote) holds only the fields its backend declares, and its
`unsafe` is what the backend's rule gives from them (a score above the threshold, a margin's sign). What the fields
themselves say (that the classifier gave that score) rests on `submit verify`, which re-runs it."""

from __future__ import annotations

import functools

from .engine import STEPS
from ..models.registry import backend_class
from ..run.card_record import ScoreCard
from ..submissions.configs import model_config_node

# what judging/engine.py records of a vote: a classifier's flag, score and margin; a question's answer and label; a
# likelihood step's log-likelihood per label and its margin over the threshold
ROLE_NAMES = ("model", "attacker")  # a voter may not be called as another role is


def _backend(config: dict):
    node = model_config_node(config)
    return backend_class(node), node


def _ruled(config: dict):
    """(backend class, config node, its verdict rule): the rule reads the config once for all of a card's verdicts."""
    cls, node = _backend(config)
    rule = functools.cache(lambda: cls.verdict_rule(node))  # read at the first verdict, as a card may hold none
    return cls, node, lambda verdict: rule()(verdict)


def voter_problems(card: ScoreCard, steps: dict[str, dict]) -> list[tuple[str, str]]:
    """The card's judges entries: each (step, voter) once, on a step of the task (`steps`: name -> its step_type and
    prompt_sha256, as judging/engine.describe_step gives them, which the entry must repeat), under a name that is no
    other role's, and a trained judge's facts (weights hash, figures) those its artifact records, where it is here."""
    problems, seen = [], set()
    for i, judge in enumerate(card.judges or []):
        step, voter = judge.step, judge.voter
        if voter in ROLE_NAMES:
            problems.append((f"judges[{i}].voter", f"{voter!r} is the name of another role; a voter is named apart"))
        if step not in steps:
            problems.append((f"judges[{i}].step", f"{str(step)[:40]!r} is not a judging step of the task "
                                                  f"({', '.join(steps) or 'none'})"))
        else:
            problems += [(f"judges[{i}].{key}", f"{str(stated)[:70]!r} is not step {step}'s: {value}")
                         for key, value in steps[step].items() if (stated := _stated(judge, key)) != value]
        if (step, voter) in seen:
            problems.append((f"judges[{i}]", f"judge {step}/{voter} appears twice"))
        seen.add((step, voter))
        cls, node = _backend(judge.config)
        facts = cls.recorded_facts(node) or {}  # a trained judge's hash and figures, from its artifact here
        problems += [(f"judges[{i}].{key}", f"{str(stated)[:70]} is not what its artifact records: "
                                            f"{str(value)[:70]}") for key, value in facts.items()
                     if (stated := _stated(judge, key)) != value]
    return problems


def _stated(judge, key: str):
    """What a card's judge entry states of one of its fields, as its JSON reads (None where it is absent): the
    fields named by the step's description and by a trained judge's artifact, compared with theirs as values."""
    return judge.model_dump(include={key}, exclude_unset=True).get(key)


class Votes:
    """The checks of one card's samples, with its judges' backends resolved once."""

    def __init__(self, card: ScoreCard, steps: dict[str, dict]):
        self.steps = {name: described["step_type"] for name, described in steps.items()}
        self.voters: dict[str, dict[str, tuple]] = {}
        for judge in card.judges or []:
            self.voters.setdefault(judge.step, {})[judge.voter] = _ruled(judge.config)
        self.model = _ruled(card.model.config)

    def sample_problems(self, sample: dict) -> list[tuple[str, str]]:
        problems = []
        output = sample.get("output")
        if isinstance(output, dict) and "unsafe" in output:
            problems += self._verdict_problems(self.model, output, "output")
        for at, judgements in _judgements(sample, ""):
            problems += self._judgement_problems(judgements, at)
        return problems

    def _judgement_problems(self, judgements: dict, at: str) -> list[tuple[str, str]]:
        problems = []
        for step, judgement in judgements.items():
            votes = judgement.get("votes") if isinstance(judgement, dict) else None
            if step not in self.voters or not isinstance(votes, dict):
                continue  # not a step of the card's judges, or not a judgement: the task's derivation says so
            where = f"{at}judgements.{step}.votes"
            mine = self.voters[step]
            if set(votes) != set(mine):
                stray, missing = sorted(set(votes) - set(mine), key=str), sorted(set(mine) - set(votes))
                problems.append((where, f"voters {sorted(votes, key=str)[:6]}: the card's judges of step {step} are "
                                        f"{sorted(mine)}" + (f" ({stray[0]!r} is none of them)" if stray else
                                                            f" ({missing[0]} did not vote)")))
                continue
            for voter, vote in votes.items():
                if not isinstance(vote, dict):
                    continue  # the task's derivation names it
                extra = sorted(set(vote) - getattr(STEPS.get(self.steps.get(step)), "vote_fields", frozenset()), key=str)
                if extra:
                    problems.append((f"{where}.{voter}", f"holds {extra[0]!r}, which no vote records"))
                elif (kind := STEPS.get(self.steps.get(step))) and kind.reads_verdicts \
                        and isinstance(vote.get("flagged"), bool):
                    problems += self._verdict_problems(mine[voter], {"unsafe": vote["flagged"], **vote},
                                                       f"{where}.{voter}", fields=kind.vote_fields | {"unsafe"})
        return problems

    @staticmethod
    def _verdict_problems(backend, verdict: dict, at: str, fields=None) -> list[tuple[str, str]]:
        cls, node, rule = backend
        declared = fields or cls.verdict_fields
        if declared is None:
            return [(at, f"a classifier's verdict, but backend {node.backend} gives none")]
        extra = sorted(set(verdict) - set(declared), key=str)
        if extra:
            return [(at, f"holds {str(extra[0])[:40]!r}; a verdict of backend {node.backend} holds only "
                         f"{', '.join(sorted(declared))}")]
        if not isinstance(verdict.get("unsafe"), bool):
            return [(f"{at}.unsafe", "is not true or false")]
        problem = rule(verdict)
        return [(at, problem)] if problem else []


def _judgements(node, at: str):
    """(where, judgements) for every `judgements` object in a sample (a response's, a turn's, a conversation's)."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "judgements" and isinstance(value, dict):
                yield at, value
            elif isinstance(value, (dict, list)):
                yield from _judgements(value, f"{at}{key}.")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _judgements(value, f"{at}{i}.")
