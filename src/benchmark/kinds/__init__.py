"""Task kinds: how records become requests, and responses become samples and metrics. Each implements the
contract in kinds/base.py and is registered here by its name."""

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
