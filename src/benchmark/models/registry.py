"""Backends by name: the suite's own (BUILTIN: language models through lm-eval, classifiers, replays), those other
installed packages register under the entry-point group `benchmark.backends`, and any model registered in lm-eval
(`lm-eval:NAME`). Each backend class declares what it can be asked (models/base.py)."""

from __future__ import annotations

import importlib
from .. import BenchmarkError
from .base import Backend

BUILTIN = {
    "hf": "benchmark.models.hf:HF",
    "vllm": "benchmark.models.vllm:VLLM",
    "local-chat-completions": "benchmark.models.chat_api:ChatAPI",
    "llama-cpp": "benchmark.models.llamacpp:LlamaCpp",
    "profanity-check": "benchmark.models.profanity:ProfanityCheck",
    "detoxify": "benchmark.models.detoxify:DetoxifyBackend",
    "diasafety-detector": "benchmark.models.detector:DiaSafetyDetector",
    "trained-classifier": "benchmark.models.classifier:TrainedClassifier",
    "llm-probe": "benchmark.models.probe:LLMProbe",
    "keywords": "benchmark.models.keywords:Keywords",
    "reply-refusal": "benchmark.models.refusal:ReplyRefusal",
    "replay": "benchmark.models.replay:Replay",
}
ENTRY_POINTS = "benchmark.backends"
LMEVAL_PREFIX = "lm-eval:"  # lm-eval:NAME: the model lm-eval registered as NAME
REGISTERED_IN_LMEVAL = "benchmark.models.lmeval:RegisteredInLMEval"

def plugins() -> dict[str, str]:
    """Backends other installed packages register: name -> "module:Class"."""
    from importlib.metadata import entry_points

    return {ep.name: ep.value for ep in entry_points(group=ENTRY_POINTS)}


def known_backend(name) -> bool:
    """A backend name a config may use (lm-eval:NAME is resolved when it loads: lm-eval's registry is heavy)."""
    return isinstance(name, str) and (name in BUILTIN or name in plugins() or (
        name.startswith(LMEVAL_PREFIX) and len(name) > len(LMEVAL_PREFIX)))


def backend_names() -> list[str]:
    return [*BUILTIN, *sorted(plugins()), f"{LMEVAL_PREFIX}NAME"]


def _target(name) -> str | None:
    """The "module:Class" a backend name resolves to (lm-eval:NAME: lm-eval's, through RegisteredInLMEval)."""
    return BUILTIN.get(name) or plugins().get(name) or (REGISTERED_IN_LMEVAL if known_backend(name) else None)


def _installed(name) -> type[Backend] | None:
    """Backend NAME's class where it is installed here, else None."""
    target = _target(name)
    if target is None:
        return None
    module, _, attr = target.partition(":")
    try:
        cls = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError):
        return None
    return cls if isinstance(cls, type) and issubclass(cls, Backend) else None


def model_kind(name) -> str:
    """What kind of model a backend runs (Backend.model_kind), "other" for a backend not installed here."""
    return getattr(_installed(name), "model_kind", "other")


def declared_operations(name) -> frozenset[str]:
    """What backend NAME's class declares it can be asked (Backend.operations; none for a backend not installed here)."""
    return getattr(_installed(name), "operations", frozenset())


def own_args(name) -> frozenset[str]:
    """The `args` keys backend NAME reads as its own settings (none for a backend not installed here)."""
    return getattr(_installed(name), "own_args", frozenset())


def backend_class(cfg) -> type[Backend]:
    name = cfg.backend
    target = _target(name)
    if target is None:
        raise BenchmarkError(f"model {cfg.name}: unknown backend {name!r}; available: {', '.join(backend_names())}")
    module, _, attr = target.partition(":")
    try:
        cls = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as e:
        raise BenchmarkError(f"model {cfg.name}: backend {name!r} ({target}) cannot be loaded: {e}") from None
    if not (isinstance(cls, type) and issubclass(cls, Backend)):
        raise BenchmarkError(f"model {cfg.name}: backend {name!r} ({target}) is not a benchmark.models.base.Backend")
    return cls


def reads_gguf(name) -> bool:
    """Whether backend NAME reads GGUF weights (`gguf_file`; False for a backend not installed here)."""
    return getattr(_installed(name), "reads_gguf", False)


def gguf_backends() -> list[str]:
    return [name for name in BUILTIN if reads_gguf(name)]
