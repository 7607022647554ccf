"""What the suite offers, and what a run would ask, without running it:

    python -m benchmark list [tasks|models|judges|attackers]     every config with a one-line description
    python -m benchmark task=cpad model=... preview=3            the first 3 records' requests, no model loaded

and `evaluate`, the Python entry point (what lm-eval's simple_evaluate is to lm-eval)."""

from __future__ import annotations

import json
from pathlib import Path

from .. import BenchmarkError
from ..judge.train import shipped, trained_status
from ..paths import CONF_DIR, TASKS_DIR
from ..run.estimate import summary
from ..run.runner import plan
from ..submissions.base import task_registry

GROUPS = {"tasks": TASKS_DIR, "models": CONF_DIR / "model", "judges": CONF_DIR / "judge",
          "attackers": CONF_DIR / "attacker"}


def _first_sentence(text: str) -> str:
    """Up to the first ". ", ": " or "; " outside parentheses."""
    text, depth = " ".join(text.split()), 0
    for i, ch in enumerate(text):
        depth += (ch == "(") - (ch == ")")
        if depth == 0 and ch in ".:;" and (i + 1 == len(text) or text[i + 1] == " "):
            return text[:i]
    return text


def _comment(path: Path) -> str:
    """The file's leading comment block, as one line."""
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        lines.append(line.lstrip("#").strip())
    return " ".join(lines)


def describe(group: str) -> list[tuple[str, str]]:
    """(name, one line) for every config of a group."""
    from omegaconf import OmegaConf

    if group == "tasks":
        return [(name, f"{t.language}  {t.kind:<16} {_first_sentence(t.description)}")
                for name, t in sorted(task_registry().items())]
    out = []
    for path in sorted(GROUPS[group].glob("*.yaml")):
        line = _comment(path) or f"backend {OmegaConf.load(path).get('backend')}"
        out.append((path.stem, _first_sentence(line)))
    return out


def listing(what: str | None = None) -> str:
    groups = [what] if what else list(GROUPS)
    unknown = [g for g in groups if g not in GROUPS]
    if unknown:
        raise BenchmarkError(f"list {unknown[0]}: choose one of {', '.join(GROUPS)}")
    lines = []
    for group in groups:
        rows = describe(group)
        width = max((len(n) for n, _ in rows), default=0) + 2
        lines += [f"{group} ({GROUPS[group]}):"] + [f"  {name:<{width}}{line}" for name, line in rows] + [""]
        if group == "judges":  # the judges the suite trains: here or not, and how good

            names = shipped()
            width = max(len(n) for n in names) + 2
            lines += ["trained judges (shipped in judges/; python -m benchmark.judge train NAME makes your own):"]
            lines += [f"  {name:<{width}}{trained_status(name)}" for name in names] + [""]
    return "\n".join(lines).rstrip()


def preview(cfg, n: int) -> str:
    """What a run would ask for its first n records: every request, to the model, the attacker and the judges (a
    judge's request shows where the model's answer goes). Plans the run (records, configs, hashes); loads no model."""
    p = plan(cfg, pin=False)
    lines = [f"task {cfg.task.name} ({cfg.task.kind}), model {cfg.model.name}: {len(p.items)} records; the first "
             f"{min(n, len(p.items))}:", ""]
    for record in p.items[:n]:
        lines.append(f"== record {record['id']}")
        for who, request in p.kind.preview(record):
            lines.append(f"-- {who}")
            if isinstance(request, list):  # chat messages
                lines += [f"[{m['role']}] {m['content']}" for m in request]
            else:
                lines.append(json.dumps(request, ensure_ascii=False, indent=1))
        lines.append("")
    lines += summary(p)
    return "\n".join(lines).rstrip()
