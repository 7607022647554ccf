"""The readable summary printed after a run."""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path


def _pad(text: str, width: int) -> str:
    """Left-align in a terminal column; Korean and Chinese characters take two cells."""
    cells = sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)
    return text + " " * max(width - cells, 0)


def _pct(x: float) -> str:
    return f"{100 * x:5.1f}"


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
    effect = ("counted as invalid answers in the metrics" if card["task"]["kind"] == "classify"
              else "left out of the metrics")
    first = _first_error(Path(card_path).parent / card["samples"]["file"])
    return (f"WARNING: {failed} of {card['samples']['n']} samples FAILED ({effect})"
            + (f"; the first error: {first}" if first else "") + ". Failed requests are not cached: rerun the same "
            "command to ask them again (samples.jsonl has every error).")


def judge_quality(judge: dict) -> str:
    """The judge's measured agreement with human labels, one phrase per set: "unsafe F1 on diasafety 49.0 …"."""
    measured = judge.get("measured")
    if not isinstance(measured, dict):
        return "quality not measured"
    parts = [f"{name}: F1 {_pct(m['f1']['value']).strip()}, precision {_pct(m['precision']['value']).strip()}, "
             f"recall {_pct(m['recall']['value']).strip()}"
             for name, m in measured.items() if isinstance(m, dict)]
    return "unsafe class on " + "; ".join(parts) if parts else "quality not measured"


def table(card: dict, card_path) -> str:
    task, model, run = card["task"], card["model"], card["run"]
    lines = [
        f"{model['name']} on {task['name']} (v{task['version']}, {card['dataset']['split']}, n={card['dataset']['n']})",
        "",
    ]
    breakdown = card["breakdown"]
    # one question: its breakdown is the card's; several: one breakdown per question
    parts = [("", breakdown)] if "per_class" in breakdown else [
        (f"{name}: ", b) for name, b in breakdown.items() if isinstance(b, dict) and "per_class" in b
    ]
    for title, part in parts:
        per_class = part["per_class"]
        width = max(len(title) + 5, *(2 * len(c) for c in per_class)) + 2
        lines.append(f"{_pad(title + 'class', width)} precision  recall     F1  support")
        for name, row in per_class.items():
            lines.append(
                f"{_pad(name, width)}     {_pct(row['precision'])}   {_pct(row['recall'])}  {_pct(row['f1'])}  {row['support']:7d}"
            )
        base = part.get("majority_baseline")
        if base:
            lines.append(f"(always '{base['label']}': accuracy {_pct(base['accuracy'])}, macro F1 {_pct(base['macro_f1'])})")
        lines.append("")
    records = breakdown.get("records")
    if isinstance(records, dict) and "scored" in records:  # attack tasks
        lines.append(f"records scored: {records['scored']} of {records['total']} ({records['unmatched']} without "
                     f"recorded responses, {records['failed']} failed); responses judged: {breakdown['responses']}")
    convs = breakdown.get("conversations")
    if isinstance(convs, dict):  # dialogue attacks
        turns = breakdown["turns"]
        lines.append(f"conversations scored: {convs['scored']} of {convs['total']} ({convs['failed']} failed); "
                     f"turns played: {turns['played']} (budget {turns['budget']} each, stop: {turns['stop']})")
    for judge in card.get("judges", []):
        lines.append(f"judge {judge['step']}: {judge['name']} ({judge['backend']}; {judge_quality(judge)})")
    if isinstance(records, dict) and "scored" in records or isinstance(convs, dict):
        lines.append("")
    width = max(len(m) for m in card["metrics"]) + 2
    lines.append(f"{'metric':<{width}} value (%)   95% CI")
    for name, m in card["metrics"].items():
        star = "  <- headline" if name == task["headline"] else ""
        if m.get("unit"):  # not a share: the value as it is
            lines.append(f"{name:<{width}}    {m['value']:5.2f}   [{m['ci_low']:5.2f}, {m['ci_high']:5.2f}] "
                         f"{m['unit']}{star}")
        else:
            lines.append(f"{name:<{width}}    {_pct(m['value'])}   [{_pct(m['ci_low'])}, {_pct(m['ci_high'])}]{star}")
    lines.append("")
    failed = _failures(card, card_path)
    if failed:
        lines += [failed, ""]
    note = f"{run['model_calls']} model calls, {run['cache_hits']} cache hits, {run['resumed']} samples resumed"
    if run["failed"]:
        note += f", {run['failed']} failed"
    truncated = breakdown.get("truncated", {}).get("records")
    if truncated:
        note += f", {truncated} inputs cut to fit the model's context"
    if card["dataset"]["malformed"]:
        note += f", {len(card['dataset']['malformed'])} malformed records skipped"
    lines.append(f"{note}; {run['wall_s']:.1f} s")
    lines.append(f"score card: {card_path}")
    return "\n".join(lines)
