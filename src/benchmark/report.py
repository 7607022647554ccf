"""The readable summary printed after a run."""

from __future__ import annotations


def _pct(x: float) -> str:
    return f"{100 * x:5.1f}"


def table(card: dict, card_path) -> str:
    task, model, run = card["task"], card["model"], card["run"]
    lines = [
        f"{model['name']} on {task['name']} (v{task['version']}, {card['dataset']['split']}, n={card['dataset']['n']})",
        "",
    ]
    per_class = card["breakdown"].get("per_class")
    if per_class:
        width = max(len(c) for c in per_class) + 2
        lines.append(f"{'class':<{width}} precision  recall     F1  support")
        for name, row in per_class.items():
            lines.append(
                f"{name:<{width}}     {_pct(row['precision'])}   {_pct(row['recall'])}  {_pct(row['f1'])}  {row['support']:7d}"
            )
        lines.append("")
    width = max(len(m) for m in card["metrics"]) + 2
    lines.append(f"{'metric':<{width}} value (%)   95% CI")
    for name, m in card["metrics"].items():
        star = "  <- headline" if name == task["headline"] else ""
        lines.append(f"{name:<{width}}    {_pct(m['value'])}   [{_pct(m['ci_low'])}, {_pct(m['ci_high'])}]{star}")
    lines.append("")
    note = f"{run['model_calls']} model calls, {run['cache_hits']} cache hits, {run['resumed']} samples resumed"
    if run["failed"]:
        note += f", {run['failed']} FAILED requests (see samples.jsonl)"
    if card["dataset"]["malformed"]:
        note += f", {len(card['dataset']['malformed'])} malformed records skipped"
    lines.append(f"{note}; {run['wall_s']:.1f} s")
    lines.append(f"score card: {card_path}")
    return "\n".join(lines)
