"""Task kinds: how records become requests, and responses become samples and metrics. Each implements the
contract in kinds/base.py and is registered here by its name."""

import re

from .. import BenchmarkError
from ..hashing import sha256_json
from .attack import Attack
from .base import Kind
from .classify import Classify
from .dialogue import DialogueAttack

KINDS: dict[str, type[Kind]] = {k.name: k for k in (Classify, Attack, DialogueAttack)}


def kind_class(name: str) -> type[Kind]:
    if name not in KINDS:
        raise BenchmarkError(f"unknown task kind {name!r}; available: {', '.join(KINDS)}")
    return KINDS[name]


def make_kind(task, model_cfg) -> Kind:
    return kind_class(task.kind)(task, model_cfg)


def reference_sha256(kind, samples: list[dict]) -> str:
    """The hash of what samples take from the task's data alone (ids, gold labels, group fields), in id order: a
    task pins it, and a published card's samples must give it (so no gold label or group can be forged)."""
    return sha256_json(sorted([s["id"], {k: s.get(k) for k in kind.reference_fields}] for s in samples))


def _natural(sample_id: str) -> list:
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", sample_id)]


def canonical_order(samples: list[dict]) -> list[dict]:
    """Samples in id order, numbers by value ("2" before "10"): what every score is computed over, so a bootstrap's
    resamples depend on which samples a card has, never on the order its file lists them in."""
    return sorted(samples, key=lambda s: _natural(str(s["id"])))


def score(kind, samples: list[dict], resamples: int, seed: int, validation=None) -> tuple[dict, dict]:
    """The kind's metrics and breakdown over the samples in canonical order: the run and validation both score here."""
    return kind.score(canonical_order(samples), resamples, seed, validation)
