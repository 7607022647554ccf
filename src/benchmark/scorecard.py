"""Score cards: one JSON file per (model, task) run, checked against a versioned JSON Schema."""

from __future__ import annotations

import importlib.metadata
import json
import platform
import subprocess
from pathlib import Path

import jsonschema

from . import BenchmarkError, __version__
from .files import write_json
from .paths import REPO_ROOT, SCHEMA_FILE

SCHEMA_VERSION = 1


def load_schema() -> dict:
    return json.loads(SCHEMA_FILE.read_text())


def validate(card: dict, where: str = "score card") -> None:
    """Raise BenchmarkError naming the first field that breaks the schema."""
    validator = jsonschema.Draft202012Validator(load_schema())
    errors = sorted(validator.iter_errors(card), key=lambda e: list(e.absolute_path))
    if errors:
        e = errors[0]
        field = ".".join(str(p) for p in e.absolute_path) or "(top level)"
        raise BenchmarkError(f"{where}: field {field}: {e.message}")


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def versions() -> dict:
    return {
        "python": platform.python_version(),
        "torch": _version("torch"),
        "transformers": _version("transformers"),
        "lm_eval": _version("lm_eval"),
        "datasets": _version("datasets"),
        "hydra": _version("hydra-core"),
        "benchmark": __version__,
    }


def git_commit() -> str | None:
    try:
        out = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def write(card: dict, path: Path) -> None:
    """Validate, then write atomically (a crash never leaves half a card)."""
    validate(card, str(path))
    write_json(path, card)
