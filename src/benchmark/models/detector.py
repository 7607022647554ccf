"""Backend `diasafety-detector`: a detector trained by `python -m benchmark.detector train`, as a model or a judge."""

from __future__ import annotations

import json

from .. import BenchmarkError
from ..detector import ABBREVIATIONS, CATEGORIES, EVALUATION, MANIFEST
from ..detector.model import Detector, read_manifest
from ..paths import judge_folder
from .encoders import artifact_sha256
from .base import Backend, Reach


class DiaSafetyDetector(Backend):
    operations = frozenset({"classify"})
    requests_go = Reach.LOCAL  # a trained detector on this machine
    answer_shape = "verdict-2"  # {"unsafe", "score"} (+ "category"): no label of a task's
    verdict_fields = frozenset({"unsafe", "score", "margin", "category", "p_unsafe"})

    def __init__(self, cfg, data_root: str | None = None):
        import transformers

        transformers.logging.disable_progress_bar()
        self.detector = Detector(cfg.pretrained, batch_size=cfg.batch_size, device=cfg.device)

    def usage(self, requests, answers):
        """The tokens the detector reads of each input (context and response, truncated as it reads them)."""
        from ..detector.model import tokenize
        from .usage import TOKENIZER, Usage

        det = self.detector
        pairs = [((r.input.get("context") or None), r.input["response"]) for r in requests]
        return [Usage(len(ids), 0, TOKENIZER) for ids in tokenize(det.tokenizer, pairs, det.max_length,
                                                                   det.with_context)]

    def classify(self, inputs):
        """The fine label by the paper's rules; `unsafe` is the coarse verdict (veto), or, when the input names a
        category, that category's verdict (the second step of the paper's chatbot scoring). Both are the decisions
        whose quality `python -m benchmark.detector evaluate` measures."""
        det = self.detector
        pairs = [(x.get("context") or None, x["response"]) for x in inputs]
        probs = det.category_probs(pairs)
        labels, veto = det.decide(probs)
        every = {c: det.unsafe_probability(probs, [c] * len(pairs)) for c in CATEGORIES}
        flagged = det.category_flags(probs)
        margins = det.category_margins(probs)
        out = []
        for i, x in enumerate(inputs):
            p_unsafe = {ABBREVIATIONS[c]: round(float(every[c][i]), 4) for c in CATEGORIES}
            category = x.get("category")
            if category:
                if category not in CATEGORIES:
                    raise BenchmarkError(f"diasafety-detector: category {category!r} is not one of {CATEGORIES}")
                c = CATEGORIES.index(category)
                p, unsafe, margin = float(every[category][i]), bool(flagged[i, c]), float(margins[i, c])
            else:  # unsafe when any category says so: as near its boundary as the category closest to flipping it
                p, unsafe, margin = max(p_unsafe.values()), bool(veto[i]), float(margins[i].max())
            out.append({"unsafe": bool(unsafe), "score": round(p, 4), "margin": margin, "category": labels[i],
                        "p_unsafe": p_unsafe})
        return out

    @classmethod
    def verdict_problem(cls, cfg, verdict):
        """Unsafe where the category's P(unsafe) beats its other classes: a positive margin (at exactly 0, either)."""
        margin = verdict.get("margin")
        if not isinstance(margin, (int, float)) or isinstance(margin, bool):
            return f"margin {margin!r}: the detector records its margin as a number"
        if margin and verdict["unsafe"] is not (margin > 0):
            return f"unsafe {verdict['unsafe']} with margin {margin}: a positive margin is unsafe, a negative safe"
        return None

    @classmethod
    def content_sha256(cls, cfg, data_root):
        """The judge's artifact: its manifest and the members' deltas (models/encoders.py)."""
        if not cfg.pretrained:
            return None
        read_manifest(cfg.pretrained)  # a missing detector is named with the command that makes it
        return artifact_sha256(judge_folder(cfg.pretrained), MANIFEST)

    @classmethod
    def content_source(cls, cfg) -> str:
        return f"the judge in {judge_folder(cfg.pretrained)}"

    def describe(self) -> dict:
        return self.artifact_facts(self.detector.path)

    @staticmethod
    def artifact_facts(folder) -> dict:
        """What a card records of the detector: read from its folder's manifest and evaluation, not its weights."""
        folder = judge_folder(str(folder))
        manifest = json.loads((folder / MANIFEST).read_text())
        facts = {"design": manifest["design"], "with_context": manifest["with_context"], "encoder": manifest["encoder"],
                 "weights_sha256": manifest["weights_sha256"]}
        evaluation = folder / EVALUATION
        if evaluation.is_file():  # the detector report's figures (fine-grained too)
            facts["evaluation"] = {"task": "diasafety", "split": "test", **json.loads(evaluation.read_text())["test"]}
        return facts

    @classmethod
    def recorded_facts(cls, cfg) -> dict | None:
        folder = judge_folder(cfg.pretrained) if cfg.pretrained else None
        return cls.artifact_facts(folder) if folder is not None and (folder / MANIFEST).is_file() else None
