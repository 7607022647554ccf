"""Task kinds: how records become requests, and responses become samples and metrics."""

from .. import BenchmarkError
from .attack import Attack
from .classify import Classify
from .dialogue import DialogueAttack

KINDS = {"classify": Classify, "attack": Attack, "dialogue_attack": DialogueAttack}


def make_kind(task, model_cfg):
    if task.kind not in KINDS:
        raise BenchmarkError(f"task {task.name}: unknown kind {task.kind!r}; available: {', '.join(KINDS)}")
    return KINDS[task.kind](task, model_cfg)
