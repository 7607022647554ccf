"""The utterance-level baseline: the offensive-language classifier shipped by alt-profanity-check."""

from __future__ import annotations

import functools
from pathlib import Path

from .. import BenchmarkError
from ..identity import file_sha256, sha256_json
from .base import CLASSIFIER_FIELDS, Backend, Reach, above_threshold, utterance_texts
from .registry import register_backend

_INPUTS = ("response", "context+response")


@functools.lru_cache(maxsize=1)
def _package_sha256() -> str:
    """The installed package's version and its model files (the SVM and the vectorizer), hashed."""
    import importlib.metadata
    import importlib.util

    folder = Path(importlib.util.find_spec("profanity_check").origin).parent / "data"
    files = {f.name: file_sha256(f) for f in sorted(folder.glob("*.joblib"))}
    return sha256_json({"version": importlib.metadata.version("alt-profanity-check"), "files": files})


@register_backend("profanity-check")
class ProfanityCheck(Backend):
    model_kind = "classifier"
    fields = CLASSIFIER_FIELDS
    operations = frozenset({"classify"})
    requests_go = Reach.LOCAL  # a classifier shipped in a package
    chunk_size = 1024  # a thousand texts in milliseconds, at a fixed cost of about 15 ms per call
    answer_shape = "verdict-2"  # {"unsafe", "score"} (+ "category"): no label of a task's
    verdict_fields = frozenset({"unsafe", "score"})

    def __init__(self, cfg, data_root: str | None = None):
        if cfg.input not in _INPUTS:
            raise BenchmarkError(f"model {cfg.name}: model.input={cfg.input!r}; profanity-check reads one of {_INPUTS}")
        from profanity_check import predict_prob

        self._predict_prob = predict_prob
        self.input = cfg.input
        self.threshold = cfg.threshold

    def classify(self, inputs):
        texts = utterance_texts(inputs, self.input)
        probs = self._predict_prob(texts)
        return [
            {"unsafe": bool(p > self.threshold), "score": float(p)}
            for p in probs
        ]

    @classmethod
    def installed_sha256(cls, cfg) -> str | None:
        return _package_sha256()

    @classmethod
    def verdict_rule(cls, cfg):
        threshold = cfg.threshold
        return lambda verdict: above_threshold(verdict, "score", threshold)

    def describe(self) -> dict:
        return {"input": self.input, "threshold": self.threshold}
