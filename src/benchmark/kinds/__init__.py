"""Task kinds: how records become requests, and responses become samples and metrics. Each implements the
contract in kinds/base.py and is registered by its name: the suite's own here, another package's under the
entry-point group `benchmark.kinds` (a Kind subclass), or one class with `register(MyKind)`."""

import re

from .. import BenchmarkError
from .attack import Attack
from .base import Kind
from .classify import Classify
from .dialogue import DialogueAttack

KINDS: dict[str, type[Kind]] = {k.name: k for k in (Classify, Attack, DialogueAttack)}
ENTRY_POINTS = "benchmark.kinds"
_installed = False


def register(kind: type[Kind]) -> type[Kind]:
    """Make a kind known by its name: task files may name it, its section joins the task schema, and cards of it
    validate. Usable as a class decorator."""
    if not (isinstance(kind, type) and issubclass(kind, Kind)) or not isinstance(getattr(kind, "name", None), str):
        raise BenchmarkError(f"{kind!r}: a kind is a subclass of benchmark.kinds.base.Kind with a name")
    taken = {k.section: k.name for k in KINDS.values() if k.section and k.name != kind.name}
    if kind.section in taken:
        raise BenchmarkError(f"kind {kind.name}: section {kind.section!r} is kind {taken[kind.section]}'s")
    KINDS[kind.name] = kind
    return kind


def registered() -> dict[str, type[Kind]]:
    """Every kind by name, with those installed packages declare under `benchmark.kinds` (loaded once)."""
    global _installed
    if not _installed:
        _installed = True
        from importlib.metadata import entry_points

        for ep in entry_points(group=ENTRY_POINTS):
            try:
                register(ep.load())
            except Exception as e:  # a broken plug-in names itself; the suite's own kinds still work
                raise BenchmarkError(f"kind {ep.name} ({ep.value}, entry point {ENTRY_POINTS}): {e}") from None
    return KINDS


def kind_class(name: str) -> type[Kind]:
    kinds = registered()
    if name not in kinds:
        raise BenchmarkError(f"unknown task kind {name!r}; available: {', '.join(kinds)}")
    return kinds[name]


def make_kind(task, model_cfg) -> Kind:
    return kind_class(task.kind)(task, model_cfg)


def _natural(sample_id: str) -> list:
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", sample_id)]


def canonical_order(samples: list[dict]) -> list[dict]:
    """Samples in id order, numbers by value ("2" before "10"): what every score is computed over, so a bootstrap's
    resamples depend on which samples a card has, never on the order its file lists them in."""
    return sorted(samples, key=lambda s: _natural(str(s["id"])))


def score(kind, samples: list[dict], resamples: int, seed: int, validation=None) -> tuple[dict, dict]:
    """The kind's metrics and breakdown over the samples in canonical order: the run and validation both score here."""
    return kind.score(canonical_order(samples), resamples, seed, validation)
