"""DiaSafety rows -> labelled sentence pairs for each design."""

from __future__ import annotations

import random
from dataclasses import dataclass

from .. import BenchmarkError
from ..models.detector import CATEGORIES, FINE_LABELS

NA = 2  # index of N/A in MEMBER_LABELS


@dataclass
class Example:
    context: str | None  # None when the detector reads the response alone
    response: str
    label: int | list[int]  # multiclass and members: one index; multihead: one per category


def check_rows(rows: list[dict], where: str) -> None:
    for i, row in enumerate(rows):
        for key in ("context", "response", "category", "label"):
            if not isinstance(row.get(key), str):
                raise BenchmarkError(f"{where}: record {i} has no string field {key!r}")
        if row["category"] not in CATEGORIES:
            raise BenchmarkError(f"{where}: record {i}: category {row['category']!r} is not one of {CATEGORIES}")
        if row["label"] not in ("Safe", "Unsafe"):
            raise BenchmarkError(f"{where}: record {i}: label {row['label']!r} is not Safe or Unsafe")


def fine_label(row: dict) -> str:
    return row["category"] if row["label"] == "Unsafe" else "Safe"


def _pair(row: dict, with_context: bool) -> tuple[str | None, str]:
    return (row["context"] if with_context else None), row["response"]


def multiclass(rows: list[dict], with_context: bool) -> list[Example]:
    return [Example(*_pair(r, with_context), FINE_LABELS.index(fine_label(r))) for r in rows]


def multihead(rows: list[dict], with_context: bool) -> list[Example]:
    """Every row teaches every head: its own category's head safe/unsafe, the others N/A."""
    examples = []
    for r in rows:
        labels = [int(r["label"] == "Unsafe") if c == r["category"] else NA for c in CATEGORIES]
        examples.append(Example(*_pair(r, with_context), labels))
    return examples


def member(rows: list[dict], category: str, with_context: bool, na_ratio: float | None, seed: int) -> list[Example]:
    """One one-vs-all member: its category's rows as safe/unsafe, rows of the other categories as N/A.

    na_ratio: N/A rows per own row, drawn at random (seeded); None: every other row (used for validation)."""
    own = [Example(*_pair(r, with_context), int(r["label"] == "Unsafe")) for r in rows if r["category"] == category]
    others = [r for r in rows if r["category"] != category]
    if na_ratio is not None:
        k = min(len(others), round(na_ratio * len(own)))
        others = random.Random(f"{seed}:{category}").sample(others, k)
    return own + [Example(*_pair(r, with_context), NA) for r in others]
