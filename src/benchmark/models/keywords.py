"""Backend `keywords`: a transparent rule-based classifier: a text is flagged when it contains a listed phrase.

Useful where a readable rule beats a model (refusal detection, blocklists) and as a deterministic judge in tests.
Phrases match case-insensitively anywhere in the named input part (for Chinese and Korean, words are not spaced).
"""

from __future__ import annotations

from .. import BenchmarkError
from .base import Backend, Reach
from .registry import register_backend


@register_backend("keywords")
class Keywords(Backend):
    model_kind = "classifier"
    fields = frozenset({"phrases", "input"})
    operations = frozenset({"classify"})
    requests_go = Reach.LOCAL  # phrases in its config
    answer_shape = "verdict-2"  # {"unsafe", "score"} (+ "category"): no label of a task's
    verdict_fields = frozenset({"unsafe", "score", "matched"})

    def __init__(self, cfg, data_root: str | None = None):
        if not cfg.phrases:
            raise BenchmarkError(f"model {cfg.name}: backend keywords needs model.phrases (a list of phrases)")
        self.phrases = [p.lower() for p in cfg.phrases]
        self.part = cfg.input if cfg.input in ("response", "context") else "response"

    def classify(self, inputs):
        out = []
        for x in inputs:
            text = str(x.get(self.part, "")).lower()
            hit = next((p for p in self.phrases if p in text), None)
            out.append({"unsafe": hit is not None, "score": float(hit is not None),
                        "matched": hit})
        return out

    @classmethod
    def verdict_rule(cls, cfg):
        def problem(verdict):
            if verdict.get("score") != float(verdict["unsafe"]):
                return (f"unsafe {verdict['unsafe']} with score {verdict.get('score')!r}: a keyword list scores a "
                        "hit 1.0")
            return None
        return problem

    def describe(self) -> dict:
        return {"phrases": len(self.phrases), "input": self.part}
