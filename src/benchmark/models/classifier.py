"""Backend `trained-classifier`: a judge trained by `python -m benchmark.judge train NAME`, as a judge or a model."""

from __future__ import annotations

import json

from ..judge import EVALUATION, MANIFEST
from ..judge.classifier import Classifier, read_manifest
from ..paths import judge_folder
from .encoders import artifact_sha256
from .base import Backend, Reach, above_threshold


class TrainedClassifier(Backend):
    operations = frozenset({"classify"})
    answer_shape = "verdict-2"  # {"unsafe", "score"}: no label of a task's
    verdict_fields = frozenset({"unsafe", "score", "margin"})
    requests_go = Reach.LOCAL

    def __init__(self, cfg, data_root: str | None = None):
        import transformers

        transformers.logging.disable_progress_bar()
        self.judge = Classifier(cfg.pretrained, batch_size=cfg.batch_size, device=cfg.device, name=cfg.name)

    def usage(self, requests, answers):
        """The tokens the judge's first encoder reads of each input (truncated as it reads them)."""
        from ..detector.model import tokenize
        from ..judge.classifier import parts
        from .usage import TOKENIZER, Usage

        manifest = self.judge.manifest
        ids = tokenize(self.judge.tokenizers[0], parts([r.input for r in requests], manifest["with_context"]),
                       manifest["max_length"], manifest["with_context"])
        return [Usage(len(x), 0, TOKENIZER) for x in ids]

    def classify(self, inputs):
        """P(unsafe), the mean of the members' probabilities; unsafe at the threshold chosen on validation rows."""
        probs = self.judge.probabilities(inputs)
        return [{"unsafe": bool(p >= self.judge.threshold), "score": round(float(p), 4),
                 "margin": float(p - self.judge.threshold)} for p in probs]

    @classmethod
    def verdict_problem(cls, cfg, verdict):
        """Unsafe at its threshold: the margin (P(unsafe) minus the threshold) decides, and the recorded score (P,
        rounded to 4 places) must be the threshold plus that margin, where the judge's manifest is here to say it."""
        problem = above_threshold(verdict, "margin", 0.0, inclusive=True)
        folder = judge_folder(cfg.pretrained) if cfg.pretrained else None
        if problem or folder is None or not (folder / MANIFEST).is_file():
            return problem
        threshold = read_manifest(cfg.pretrained, cfg.name)["threshold"]
        score, margin = verdict.get("score"), verdict["margin"]
        if not isinstance(score, (int, float)) or abs(score - (threshold + margin)) > 6e-5:
            return f"score {score!r} is not its threshold {threshold} plus its margin {margin!r}"
        return None

    @classmethod
    def content_sha256(cls, cfg, data_root):
        """The judge's artifact: its manifest and the members' deltas (models/encoders.py)."""
        if not cfg.pretrained:
            return None
        read_manifest(cfg.pretrained, cfg.name)  # a missing judge is named with the command that makes it
        return artifact_sha256(judge_folder(cfg.pretrained), MANIFEST)

    @classmethod
    def content_source(cls, cfg) -> str:
        return f"the judge in {judge_folder(cfg.pretrained)}"

    def describe(self) -> dict:
        return self.artifact_facts(self.judge.path)

    @staticmethod
    def artifact_facts(folder) -> dict:
        """What a card records of the judge: read from its folder's manifest and evaluation, not its weights."""
        from ..judge.classifier import encoders

        manifest = read_manifest(folder)
        facts = {"encoder": " + ".join(encoders(manifest)), "threshold": manifest["threshold"], "set": manifest["set"],
                 "members": len(manifest["members"]), "weights_sha256": manifest["weights_sha256"],
                 "val": manifest["val"]}
        evaluation = judge_folder(str(folder)) / EVALUATION
        if evaluation.is_file():  # `python -m benchmark.judge evaluate`'s figures on the set's test rows
            facts["evaluation"] = json.loads(evaluation.read_text())
        return facts

    @classmethod
    def recorded_facts(cls, cfg) -> dict | None:
        folder = judge_folder(cfg.pretrained) if cfg.pretrained else None
        return cls.artifact_facts(folder) if folder is not None and (folder / MANIFEST).is_file() else None
