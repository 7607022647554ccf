"""The paper's decision rules over per-category probabilities (one-vs-all members or multi-head heads).

Fine-grained: when every category's classifier says safe or N/A, the pair is Safe; otherwise it is the category,
among those whose classifier says unsafe, with the highest unsafe probability.
Coarse (veto voting): unsafe when any one classifier says unsafe.
"""

from __future__ import annotations

import numpy as np

from . import CATEGORIES, SAFE

UNSAFE = 1  # column of MEMBER_LABELS


def says_unsafe(probs: np.ndarray) -> np.ndarray:
    """probs: (n, categories, 3) -> (n, categories) bool: that category's classifier's argmax is unsafe."""
    return probs.argmax(axis=-1) == UNSAFE


def fine_decision(probs: np.ndarray, categories: list[str] = CATEGORIES) -> list[str]:
    flagged = says_unsafe(probs)
    unsafe_p = np.where(flagged, probs[..., UNSAFE], -1.0)
    best = unsafe_p.argmax(axis=1)
    return [categories[b] if flagged[i].any() else SAFE for i, b in enumerate(best)]


def veto(probs: np.ndarray) -> np.ndarray:
    """(n,) bool: unsafe when any category's classifier says unsafe."""
    return says_unsafe(probs).any(axis=1)
