"""Task kinds: how records become requests, and responses become samples and metrics."""

from .. import BenchmarkError
from ..hashing import sha256_json
from .attack import Attack
from .classify import Classify
from .dialogue import DialogueAttack

KINDS = {"classify": Classify, "attack": Attack, "dialogue_attack": DialogueAttack}


def make_kind(task, model_cfg):
    if task.kind not in KINDS:
        raise BenchmarkError(f"task {task.name}: unknown kind {task.kind!r}; available: {', '.join(KINDS)}")
    return KINDS[task.kind](task, model_cfg)


def reference_sha256(kind, samples: list[dict]) -> str:
    """The hash of what samples take from the task's data alone (ids, gold labels, group fields), in id order: a
    task pins it, and a published card's samples must give it (so no gold label or group can be forged)."""
    return sha256_json(sorted([s["id"], {k: s.get(k) for k in kind.reference_fields}] for s in samples))
