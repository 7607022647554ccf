"""Backends by name: a Backend subclass registers itself with @register_backend("name"); the suite's own, in this
folder, are found by that decorator without importing them (their libraries load only when a config names one);
another installed package's under the entry-point group `benchmark.backends`; and any model registered in lm-eval
(`lm-eval:NAME`). Each backend class declares what it can be asked and the settings it reads (models/base.py)."""

from __future__ import annotations

import ast
import functools
import importlib
from pathlib import Path

from .. import BenchmarkError
from .base import Backend, settings_keys

REGISTERED: dict[str, type[Backend]] = {}  # registered in this process (an imported module's decorator)


def register_backend(name: str):
    """Make a Backend subclass known as `name` (a class decorator): model configs may name it in `backend:`."""
    def register(cls):
        if not (isinstance(cls, type) and issubclass(cls, Backend)):
            raise BenchmarkError(f"backend {name!r}: {cls!r} is not a subclass of benchmark.models.base.Backend")
        taken = REGISTERED.get(name)
        if taken is not None and (taken.__module__, taken.__qualname__) != (cls.__module__, cls.__qualname__):
            raise BenchmarkError(f"backend {name!r} is already {taken.__module__}.{taken.__qualname__}")
        REGISTERED[name] = cls
        return cls
    return register


@functools.cache
def builtin() -> dict[str, str]:
    """The suite's own backends, name -> "module:Class": each class in this folder decorated with
    @register_backend("name"), read from the source, by name, once per process and only when a name is looked up
    (reading the sources takes tens of milliseconds, which a command that looks up no backend should not pay)."""
    found = {}
    for path in sorted(Path(__file__).parent.glob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            for d in getattr(node, "decorator_list", ()):
                if isinstance(node, ast.ClassDef) and isinstance(d, ast.Call) and getattr(d.func, "id", None) == \
                        "register_backend" and d.args and isinstance(d.args[0], ast.Constant):
                    found[d.args[0].value] = f"{__package__}.{path.stem}:{node.name}"
    return dict(sorted(found.items()))


ENTRY_POINTS = "benchmark.backends"
LMEVAL_PREFIX = "lm-eval:"  # lm-eval:NAME: the model lm-eval registered as NAME
REGISTERED_IN_LMEVAL = "benchmark.models.lmeval:RegisteredInLMEval"

def plugins() -> dict[str, str]:
    """Backends other installed packages register: name -> "module:Class"."""
    from importlib.metadata import entry_points

    return {ep.name: ep.value for ep in entry_points(group=ENTRY_POINTS)}


def known_backend(name) -> bool:
    """A backend name a config may use (lm-eval:NAME is resolved when it loads: lm-eval's registry is heavy)."""
    return isinstance(name, str) and (name in REGISTERED or name in builtin() or name in plugins() or (
        name.startswith(LMEVAL_PREFIX) and len(name) > len(LMEVAL_PREFIX)))


def backend_names() -> list[str]:
    return [*builtin(), *sorted(set(REGISTERED) - set(builtin())), *sorted(plugins()), f"{LMEVAL_PREFIX}NAME"]


def _target(name) -> str | None:
    """The "module:Class" a backend name resolves to (lm-eval:NAME: lm-eval's, through RegisteredInLMEval)."""
    if name in REGISTERED:
        return f"{REGISTERED[name].__module__}:{REGISTERED[name].__qualname__}"
    return builtin().get(name) or plugins().get(name) or (REGISTERED_IN_LMEVAL if known_backend(name) else None)


def _installed(name) -> type[Backend] | None:
    """Backend NAME's class where it is installed here, else None."""
    if name in REGISTERED:
        return REGISTERED[name]
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
    cls = _installed(name)
    return settings_keys(cls) if cls is not None else frozenset()


def backend_class(cfg) -> type[Backend]:
    name = cfg.backend
    if name in REGISTERED:
        return REGISTERED[name]
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
    return [name for name in builtin() if reads_gguf(name)]
