"""Backend `trained-classifier`: a classifier judge trained by `python -m benchmark.judge train NAME`, as a judge or
a model. A trained folder gives P(unsafe) per input (the mean over its encoders of the mean of each encoder's
members) and the verdict at its threshold."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
from omegaconf import OmegaConf

from .. import BenchmarkError
from ..paths import CONF_DIR, judge_folder
from .base import Backend, Reach, above_threshold
from .encoders import (DELTA, TrainedFolder, load_classifier, load_tokenizer, logits_of, softmax, tokenize,
                       weights_sha256)
from .usage import TOKENIZER, Usage
from .registry import register_backend

MANIFEST = "judge.json"  # written beside the members' weights: settings, members, threshold, validation figures
EVALUATION = "evaluation.json"  # written by `evaluate`: the judge's figures on its set's test rows
TRAIN_CONF = CONF_DIR / "judge_train"  # NAME.yaml: how the judge NAME is trained


def class_label(flagged: bool, probs) -> int:
    """A judge of several classes: the first class where it does not flag, else the likeliest of the others."""
    return 0 if not flagged else 1 + int(np.argmax(probs[1:]))


def config_path(name: str) -> Path:
    return TRAIN_CONF / f"{name}.yaml"


def how_to_train(name: str | None, folder: Path) -> str:
    """What a run that needs an untrained judge is told: the command that makes it and how long it takes."""
    if name and config_path(name).is_file():
        minutes = OmegaConf.load(config_path(name)).get("minutes")
        took = f" (about {minutes} minutes on 2 CPU cores; a stopped training resumes)" if minutes else ""
        default = Path(f"checkpoints/{name}")
        where = "" if folder == default else f" output_dir={folder}"
        return f"make it with `python -m benchmark.judge train {name}{where}`{took}, or point model.pretrained at one"
    return "point model.pretrained at a folder made by `python -m benchmark.judge train NAME`"


def parts(inputs: list[dict], with_context: bool) -> list[tuple]:
    """What the encoder reads of each input: (context, response), or (None, response)."""
    return [((x.get("context") or "") if with_context else None, x.get("response") or "") for x in inputs]


def read_manifest(folder: str | Path, name: str | None = None) -> dict:
    folder = judge_folder(str(folder))
    path = folder / MANIFEST
    if not path.is_file():
        raise BenchmarkError(f"no trained judge at {folder} ({MANIFEST} missing): {how_to_train(name, folder)}")
    return json.loads(path.read_text())


def manifest_threshold(cfg) -> float | None:
    """The threshold a trained judge's manifest records, or None where its folder is not here to say it."""
    folder = judge_folder(cfg.pretrained) if cfg.pretrained else None
    if folder is None or not (folder / MANIFEST).is_file():
        return None
    return read_manifest(cfg.pretrained, cfg.name)["threshold"]


def score_problem(score, threshold: float, margin) -> str | None:
    """A recorded score (P, rounded to 4 places) that is not the threshold plus the recorded margin."""
    if not isinstance(score, (int, float)) or abs(score - (threshold + margin)) > 6e-5:
        return f"score {score!r} is not its threshold {threshold} plus its margin {margin!r}"
    return None


def member_encoder(manifest: dict, member: dict) -> str:
    """The encoder a member was fine-tuned from (a judge of one encoder names it once, in the manifest)."""
    return member.get("encoder", manifest["encoder"])


def encoders(manifest: dict) -> list[str]:
    return list(dict.fromkeys(member_encoder(manifest, m) for m in manifest["members"]))


def _vocabulary(member: Path) -> str:
    """What decides a member's token ids: its tokenizer files (a delta's: its base encoder's)."""
    if (member / DELTA).is_file():
        return json.loads((member / DELTA).read_text())["base"]
    files = sorted(member.glob("tokenizer*.json")) + sorted(member.glob("vocab*")) + sorted(member.glob("*.model"))
    return hashlib.sha256(b"".join(f.name.encode() + f.read_bytes() for f in files)).hexdigest()


class Classifier:
    def __init__(self, folder: str | Path, batch_size: int = 64, device: str = "cpu", name: str | None = None):
        self.path = judge_folder(str(folder))
        self.manifest = read_manifest(folder, name)
        if weights_sha256(self.path) != self.manifest["weights_sha256"]:
            raise BenchmarkError(f"{self.path}: the weights are not the ones {MANIFEST} names (weights_sha256); "
                                 "train the judge again")
        members = [self.path / m["dir"] for m in self.manifest["members"]]
        # members may be fine-tuned from different encoders: each reads the text with its own tokenizer
        self.tokenizers = [load_tokenizer(m) for m in members]
        self.vocabularies = [_vocabulary(m) for m in members]  # members with the same files share token ids
        self.models = [load_classifier(m, device) for m in members]
        self.threshold = float(self.manifest["threshold"])
        self.batch_size = batch_size

    def probabilities(self, inputs: list[dict]) -> np.ndarray:
        """P(flagged) per input: the probability of every class but the first (a two-class judge's: unsafe)."""
        return 1 - self.class_probabilities(inputs)[:, 0] if inputs else np.zeros(0)

    def class_probabilities(self, inputs: list[dict]) -> np.ndarray:
        """Each class's probability per input: the mean over encoders of the mean of each encoder's members."""
        pairs, with_context = parts(inputs, self.manifest["with_context"]), self.manifest["with_context"]
        ids: dict[str, list] = {}
        groups: dict[str, list] = {}  # encoder -> its members' probabilities
        for member, tokenizer, key, model in zip(self.manifest["members"], self.tokenizers, self.vocabularies,
                                                 self.models):
            if key not in ids:
                ids[key] = tokenize(tokenizer, pairs, self.manifest["max_length"], with_context)
            groups.setdefault(member_encoder(self.manifest, member), []).append(
                softmax(logits_of(model, tokenizer, ids[key], self.batch_size)))
        return np.mean([np.mean(g, axis=0) for g in groups.values()], axis=0)  # one vote per encoder, as trained


@register_backend("trained-classifier")
class TrainedClassifier(TrainedFolder, Backend):
    """Its content: the manifest and the members' deltas (TrainedFolder)."""

    manifest_file = MANIFEST
    read_manifest = staticmethod(read_manifest)
    model_kind = "classifier"
    fields = frozenset({"pretrained", "device"})
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
    def verdict_rule(cls, cfg):
        """Unsafe at its threshold: the margin (P(unsafe) minus the threshold) decides, and the recorded score (P,
        rounded to 4 places) must be the threshold plus that margin, where the judge's manifest is here to say it."""
        threshold = manifest_threshold(cfg)

        def problem(verdict):
            wrong = above_threshold(verdict, "margin", 0.0, inclusive=True)
            if wrong or threshold is None:
                return wrong
            return score_problem(verdict.get("score"), threshold, verdict["margin"])
        return problem

    def describe(self) -> dict:
        return self.artifact_facts(self.judge.path)

    @staticmethod
    def artifact_facts(folder) -> dict:
        """What a card records of the judge: read from its folder's manifest and evaluation, not its weights."""
        manifest = read_manifest(folder)
        facts = {"encoder": " + ".join(encoders(manifest)), "threshold": manifest["threshold"], "set": manifest["set"],
                 "members": len(manifest["members"]), "weights_sha256": manifest["weights_sha256"],
                 "val": manifest["val"]}
        evaluation = judge_folder(str(folder)) / EVALUATION
        if evaluation.is_file():  # `python -m benchmark.judge evaluate`'s figures on the set's test rows
            facts["evaluation"] = json.loads(evaluation.read_text())
        return facts
