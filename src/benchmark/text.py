"""Text as the suite compares and prints it: case and spacing aside, columns that line up with Korean and Chinese in
them, percentages."""

from __future__ import annotations

import unicodedata


def pad(text: str, width: int) -> str:
    """Left-align in a terminal column; Korean and Chinese characters take two cells."""
    cells = sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)
    return text + " " * max(width - cells, 0)


def pct(x: float) -> str:
    return f"{100 * x:5.1f}"


def normalise(text) -> str:
    """A text with case and spacing aside: what two texts must share to be the same one."""
    return " ".join(str(text).split()).lower()
