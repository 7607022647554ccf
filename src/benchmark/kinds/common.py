"""What every kind does the same way: the variables a template sees and the chat messages of a record."""

from __future__ import annotations

from ..templates import render


def variables(task, record: dict) -> dict:
    return {**record, "options": task.options}


def render_messages(task, record: dict) -> list[dict]:
    v = variables(task, record)
    return [
        {"role": m.role, "content": render(m.content, v, f"task {task.name}: messages[{i}]")}
        for i, m in enumerate(task.messages)
    ]
