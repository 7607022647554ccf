"""The readable summary printed after a run."""

from __future__ import annotations

import json
from pathlib import Path

from ..kinds import kind_class
from ..text import pct


def _first_error(samples_path: Path) -> str | None:
    try:
        with open(samples_path, encoding="utf-8") as f:
            for line in f:
                error = json.loads(line).get("error")
                if error:
                    return error
    except (OSError, ValueError):
        return None
    return None


def _failures(card: dict, card_path) -> str | None:
    """A run with failed samples says so, with the first error and what to do."""
    failed = card["run"]["failed"]
    if not failed:
        return None
    effect = kind_class(card["task"]["kind"]).failed_samples
    first = _first_error(Path(card_path).parent / card["samples"]["file"])
    return (f"WARNING: {failed} of {card['samples']['n']} samples FAILED ({effect})"
            + (f"; the first error: {first}" if first else "") + ". Failed requests are not cached: rerun the same "
            "command to ask them again (samples.jsonl has every error).")


def judge_quality(judge: dict) -> str:
    """The judge's measured agreement with human labels, one phrase per set: "unsafe F1 on diasafety 49.0 …"."""
    measured = judge.get("measured")
    if not isinstance(measured, dict):
        return "quality not measured"
    parts = [f"{name}: F1 {pct(m['f1']['value']).strip()}, precision {pct(m['precision']['value']).strip()}, "
             f"recall {pct(m['recall']['value']).strip()}"
             for name, m in measured.items() if isinstance(m, dict)]
    return "unsafe class on " + "; ".join(parts) if parts else "quality not measured"


def table(card: dict, card_path) -> str:
    task, model, run = card["task"], card["model"], card["run"]
    lines = [
        f"{model['name']} on {task['name']} (v{task['version']}, {card['dataset']['split']}, n={card['dataset']['n']})",
        "",
    ]
    lines += kind_class(task["kind"]).summary_lines(card)
    for judge in card.get("judges", []):
        lines.append(f"judge {judge['step']}: {judge['name']} ({judge['backend']}; {judge_quality(judge)})")
    if card.get("judges"):
        lines.append("")
    width = max(len(m) for m in card["metrics"]) + 2
    lines.append(f"{'metric':<{width}} value (%)   95% CI")
    for name, m in card["metrics"].items():
        star = "  <- headline" if name == task["headline"] else ""
        if m.get("unit"):  # not a share: the value as it is
            lines.append(f"{name:<{width}}    {m['value']:5.2f}   [{m['ci_low']:5.2f}, {m['ci_high']:5.2f}] "
                         f"{m['unit']}{star}")
        else:
            lines.append(f"{name:<{width}}    {pct(m['value'])}   [{pct(m['ci_low'])}, {pct(m['ci_high'])}]{star}")
    lines.append("")
    failed = _failures(card, card_path)
    if failed:
        lines += [failed, ""]
    note = f"{run['model_calls']} model calls, {run['cache_hits']} cache hits, {run['resumed']} samples resumed"
    if run["failed"]:
        note += f", {run['failed']} failed"
    if card["dataset"]["malformed"]:
        note += f", {len(card['dataset']['malformed'])} malformed records skipped"
    spent = ", ".join(f"{k} {v:.1f} s" for k, v in (run.get("seconds") or {}).items() if v >= 0.05)
    lines.append(f"{note}; {run['wall_s']:.1f} s" + (f" ({spent})" if spent else ""))
    lines.append(f"score card: {card_path}")
    return "\n".join(lines)
