"""What a board's overview shows of an accepted score card, as one small typed record.

A summary is made from a card that passed every check, and kept with the check's results (checked.py): a board
with thousands of cards builds its overview from the summaries and reads a card whole only when a page shows more
of it (its breakdowns, its samples).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from ..kinds import kind_class
from ..models import registry
from ..run import card_record as record


class Metric(NamedTuple):  # a tuple: a board builds hundreds of thousands of them at start
    """One metric of a card: a share (no unit) or a value in its unit, with its 95% interval."""

    value: float
    ci_low: float
    ci_high: float
    unit: str | None = None

    @property
    def is_share(self) -> bool:
        return self.unit is None

    @classmethod
    def of(cls, metric: record.Metric) -> Metric:
        return cls(metric.value, metric.ci_low, metric.ci_high, metric.unit)


class JudgeQuality(NamedTuple):
    """The card's judging procedure against human labels, from the card's own outcome on its labelled set
    (validation checks that those labels are the set's); percentages, and Youden's J as a fraction."""

    set: str
    n: int
    precision: float
    recall: float
    f1: float
    youden: float

    @classmethod
    def of(cls, outcome: record.JudgingValidation) -> JudgeQuality:
        gold, flag = outcome.gold, outcome.flagged
        g, f = int(gold or "0", 2), int(flag or "0", 2)  # one bit per labelled item: counted whole, not item by item
        tp, fp, fn = (g & f).bit_count(), (~g & f).bit_count(), (g & ~f).bit_count()
        tn = len(gold) - tp - fp - fn
        precision, recall = tp / max(tp + fp, 1), tp / max(tp + fn, 1)
        return cls(set=outcome.set, n=len(gold), precision=100 * precision, recall=100 * recall,
                   f1=100 * (2 * precision * recall / (precision + recall) if precision + recall else 0.0),
                   youden=recall + tn / max(tn + fp, 1) - 1)

    def text(self) -> str:
        return f"F1 {self.f1:.1f} (P {self.precision:.1f}, R {self.recall:.1f}) on {self.set}"


MODEL_KINDS = ["LLM", "classifier", "recorded answers", "other"]


def model_kind(backend) -> str:
    """What kind of model a card measures, as its backend declares it (models/base.py: Backend.model_kind): a
    language model run by the suite, a classifier, or recorded answers replayed (a chatbot's published generations,
    an LLM's recorded predictions)."""
    kind = registry.model_kind(backend)
    return kind if kind in MODEL_KINDS else "other"


@dataclass(frozen=True)
class Summary:
    model: str
    task: str
    n: int
    metadata: dict  # the model config's public metadata (organisation, parameters, open_weights, ...)
    kind: str  # one of MODEL_KINDS, from the model's backend
    headline: Metric  # the task's headline metric (a page that shows the others reads the card whole)
    verified: bool
    judge: JudgeQuality | None
    # the languages the headline averages in which the card's judges cannot back a rate (not measured there, or
    # Youden's J under the task's floor): the headline is no finding about them
    unbacked: tuple[str, ...]

    @classmethod
    def of(cls, card: record.ScoreCard) -> Summary:
        outcome = card.judging_validation
        return cls(model=card.model.name, task=card.task.name, n=card.dataset.n,
                   metadata=card.model.metadata.model_dump(exclude_unset=True),
                   kind=model_kind(card.model.backend),
                   headline=Metric.of(card.metrics[card.task.headline]),
                   verified=card.verification is not None and card.verification.verified,
                   judge=JudgeQuality.of(outcome) if isinstance(outcome, record.JudgingValidation) else None,
                   unbacked=unbacked_languages(card))

    def to_json(self) -> dict:
        return {**self.__dict__, "headline": self.headline._asdict(),
                "judge": self.judge._asdict() if self.judge is not None else None, "unbacked": list(self.unbacked)}

    @classmethod
    def from_json(cls, data: dict) -> Summary:
        return cls(**{**data, "headline": Metric(**data["headline"]),
                      "judge": JudgeQuality(**data["judge"]) if data["judge"] is not None else None,
                      "unbacked": tuple(data["unbacked"])})


def unbacked_languages(card: record.ScoreCard) -> tuple[str, ...]:
    """The languages of a card's breakdown whose rate its own judge entries cannot back, as its kind reads them
    (kinds/attack.py: the deciding steps' best J on the labelled sets of each language); none for other kinds."""
    parts = card.model_dump(mode="json", include={"metrics", "judges", "breakdown"})
    rows = kind_class(card.task.kind).breakdown_rows(parts, card.task.config or {})
    return tuple(row["group"] for row in rows if row["by"] == "language" and row.get("backed") is False)
