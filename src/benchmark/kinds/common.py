"""What every kind does the same way: the variables a template sees, the chat messages of a record, refusals."""

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


class RefusalPhrases:
    """A transparent refusal detector: a text containing one of the task's phrases (case-insensitive) is a refusal.
    Scores count refusals from the texts themselves, so a card's refusal rate follows from its samples."""

    def __init__(self, phrases: list[str]):
        self.phrases = [p.lower() for p in phrases]

    def __bool__(self) -> bool:
        return bool(self.phrases)

    def __call__(self, text) -> bool | None:
        if not self.phrases:
            return None
        low = str(text).lower()
        return any(p in low for p in self.phrases)
