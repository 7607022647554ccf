"""The suite in-process: `benchmark.evaluate(model=..., task=..., **settings)` runs one task as the command line
would and returns its card."""

from __future__ import annotations

import re

from ..composition import compose
from .runner import run


def _value(value) -> str:
    """A Python value as a Hydra override's value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_value(v) for v in value) + "]"
    if isinstance(value, (int, float)):
        return repr(value)
    text = str(value)
    return text if re.fullmatch(r"[\w./:@+-]+", text) else "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def evaluate(model: str | None = None, task: str | None = None, overrides: list[str] | tuple[str, ...] = (),
             **settings) -> dict:
    """Run `task` on `model` in this process and return the score card (a dict, as `scorecard.json` holds it).

    Settings and fields go as keyword arguments (`limit=50`, `seed=3`) or, for dotted fields, as overrides
    (`overrides=["model.pretrained=/path", "task.attack.samples=2"]`), exactly as on the command line. The card's
    folder is the command line's: a rerun resumes, and the models the last call loaded stay loaded for the next.

        import benchmark
        card = benchmark.evaluate(model="smollm2-135m-instruct", task="diasafety", limit=20)
        card["metrics"]["macro_f1"]["value"]
    """
    given = [*(f"model={model}",) * bool(model), *(f"task={task}",) * bool(task),
             *(f"{k}={_value(v)}" for k, v in settings.items()), *overrides]
    card, _ = run(compose(given), given)
    return card
