"""A trained classifier judge folder -> P(unsafe) per input (the mean over its encoders of the mean of each encoder's
members) and the verdict at its threshold."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

from .. import BenchmarkError
from ..paths import judge_folder
from ..detector.model import logits_of, softmax, tokenize, weights_sha256
from ..models.encoders import DELTA, load_classifier, load_tokenizer
from . import MANIFEST


def parts(inputs: list[dict], with_context: bool) -> list[tuple]:
    """What the encoder reads of each input: (context, response), or (None, response)."""
    return [((x.get("context") or "") if with_context else None, x.get("response") or "") for x in inputs]


def read_manifest(folder: str | Path, name: str | None = None) -> dict:
    folder = judge_folder(str(folder))
    path = folder / MANIFEST
    if not path.is_file():
        from .train import how_to_train

        raise BenchmarkError(f"no trained judge at {folder} ({MANIFEST} missing): {how_to_train(name, folder)}")
    return json.loads(path.read_text())


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
        if not inputs:
            return np.zeros(0)
        pairs, with_context = parts(inputs, self.manifest["with_context"]), self.manifest["with_context"]
        ids: dict[str, list] = {}
        groups: dict[str, list] = {}  # encoder -> its members' probabilities
        for member, tokenizer, key, model in zip(self.manifest["members"], self.tokenizers, self.vocabularies,
                                                 self.models):
            if key not in ids:
                ids[key] = tokenize(tokenizer, pairs, self.manifest["max_length"], with_context)
            groups.setdefault(member_encoder(self.manifest, member), []).append(
                softmax(logits_of(model, tokenizer, ids[key], self.batch_size))[:, 1])
        return np.mean([np.mean(g, axis=0) for g in groups.values()], axis=0)  # one vote per encoder, as trained
