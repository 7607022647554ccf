"""A trained classifier judge folder -> P(unsafe) per input (the mean of its members) and the verdict at its
threshold."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from .. import BenchmarkError
from ..detector.model import logits_of, softmax, tokenize, weights_sha256
from . import MANIFEST


def parts(inputs: list[dict], with_context: bool) -> list[tuple]:
    """What the encoder reads of each input: (context, response), or (None, response)."""
    return [((x.get("context") or "") if with_context else None, x.get("response") or "") for x in inputs]


def read_manifest(folder: str | Path, name: str | None = None) -> dict:
    folder = Path(folder).expanduser()
    path = folder / MANIFEST
    if not path.is_file():
        from .train import how_to_train

        raise BenchmarkError(f"no trained judge at {folder} ({MANIFEST} missing): {how_to_train(name, folder)}")
    return json.loads(path.read_text())


class Classifier:
    def __init__(self, folder: str | Path, batch_size: int = 64, device: str = "cpu", name: str | None = None):
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        self.path = Path(folder).expanduser()
        self.manifest = read_manifest(self.path, name)
        if weights_sha256(self.path) != self.manifest["weights_sha256"]:
            raise BenchmarkError(f"{self.path}: the weights are not the ones {MANIFEST} names (weights_sha256); "
                                 "train the judge again")
        members = [self.path / m["dir"] for m in self.manifest["members"]]
        self.tokenizer = AutoTokenizer.from_pretrained(members[0])
        self.models = [AutoModelForSequenceClassification.from_pretrained(m).to(device).eval() for m in members]
        self.threshold = float(self.manifest["threshold"])
        self.batch_size = batch_size

    def probabilities(self, inputs: list[dict]) -> np.ndarray:
        ids = tokenize(self.tokenizer, parts(inputs, self.manifest["with_context"]), self.manifest["max_length"],
                       self.manifest["with_context"])
        if not ids:
            return np.zeros(0)
        return np.mean([softmax(logits_of(m, self.tokenizer, ids, self.batch_size))[:, 1] for m in self.models], axis=0)
