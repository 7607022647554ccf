"""A trained detector folder -> per-category probabilities and the paper's decisions, in length-sorted batches."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

from .. import BenchmarkError
from ..paths import judge_folder
from . import ABBREVIATIONS, CATEGORIES, DEFAULT_DIR, FINE_LABELS, MANIFEST, SAFE, TRAIN_MINUTES
from .rules import fine_decision, says_unsafe, veto

Pair = tuple  # (context or None, response)


def tokenize(tokenizer, pairs: list[Pair], max_length: int, with_context: bool) -> list[list[int]]:
    """Token ids per pair: [CLS] context [SEP] response [SEP] with context, [CLS] response [SEP] without."""
    responses = [r for _, r in pairs]
    if with_context:
        enc = tokenizer([c or "" for c, _ in pairs], responses, truncation=True, max_length=max_length)
    else:
        enc = tokenizer(responses, truncation=True, max_length=max_length)
    return enc["input_ids"]


def batches_by_length(lengths: list[int], batch_size: int):
    """Index batches of similar length (the least padding); in length order."""
    order = np.argsort(lengths, kind="stable")
    for start in range(0, len(order), batch_size):
        yield order[start : start + batch_size]


def collate(tokenizer, ids: list[list[int]]):
    return tokenizer.pad({"input_ids": ids}, return_tensors="pt")


def logits_of(model, tokenizer, ids: list[list[int]], batch_size: int) -> np.ndarray:
    import torch

    out = None
    with torch.inference_mode():
        for batch in batches_by_length([len(x) for x in ids], batch_size):
            enc = collate(tokenizer, [ids[i] for i in batch])
            logits = model(**enc).logits.float().numpy()
            if out is None:
                out = np.zeros((len(ids), logits.shape[1]), dtype=np.float32)
            out[batch] = logits
    return out


def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def weights_sha256(folder: Path) -> str:
    h = hashlib.sha256()
    for f in sorted(folder.rglob("*.safetensors")):
        h.update(f.relative_to(folder).as_posix().encode())
        h.update(f.read_bytes())
    return h.hexdigest()


def read_manifest(path: str | Path) -> dict:
    folder = judge_folder(str(path))
    manifest = folder / MANIFEST
    if not manifest.is_file():
        how = ("make it with `python -m benchmark.detector train`" if Path(path) == Path(DEFAULT_DIR) else
               f"train one there with `python -m benchmark.detector train output_dir={folder}`")
        raise BenchmarkError(f"no trained DiaSafety detector at {folder} ({MANIFEST} missing): {how} (the default "
                             f"detector takes about {TRAIN_MINUTES} minutes on 2 CPU cores, and a stopped training "
                             "resumes), or point model.pretrained at a trained one")
    return json.loads(manifest.read_text())


class Detector:
    def __init__(self, path: str | Path, batch_size: int = 64, device: str = "cpu"):
        from ..models.encoders import load_classifier, load_tokenizer

        self.path = judge_folder(str(path))
        self.manifest = read_manifest(path)
        self.design = self.manifest["design"]
        self.with_context = self.manifest["with_context"]
        self.max_length = self.manifest["max_length"]
        self.batch_size = batch_size
        folders = ([self.path / ABBREVIATIONS[c] for c in CATEGORIES] if self.design == "one_vs_all"
                   else [self.path])
        self.tokenizer = load_tokenizer(folders[0])
        self.models = [load_classifier(f, device) for f in folders]

    def category_probs(self, pairs: list[Pair]) -> np.ndarray:
        """(n, 5, 3) P(safe, unsafe, N/A) per category; for multiclass (n, 6) P(label) over FINE_LABELS."""
        ids = tokenize(self.tokenizer, pairs, self.max_length, self.with_context)
        if self.design == "one_vs_all":
            return np.stack([softmax(logits_of(m, self.tokenizer, ids, self.batch_size)) for m in self.models], axis=1)
        logits = logits_of(self.models[0], self.tokenizer, ids, self.batch_size)
        if self.design == "multihead":
            return softmax(logits.reshape(len(pairs), len(CATEGORIES), 3))
        return softmax(logits)

    def decide(self, probs: np.ndarray) -> tuple[list[str], np.ndarray]:
        """Fine labels and coarse unsafe flags: the paper's rules for per-category designs, argmax for multiclass."""
        if self.design == "multiclass":
            labels = [FINE_LABELS[i] for i in probs.argmax(axis=1)]
            return labels, np.array([lab != SAFE for lab in labels])
        return fine_decision(probs), veto(probs)

    def category_flags(self, probs: np.ndarray) -> np.ndarray:
        """(n, 5) bool: each category's classifier says unsafe (its argmax; for multiclass: that label wins)."""
        if self.design == "multiclass":
            return np.stack([probs.argmax(axis=1) == i + 1 for i in range(len(CATEGORIES))], axis=1)
        return says_unsafe(probs)

    def category_margins(self, probs: np.ndarray) -> np.ndarray:
        """(n, 5): how far each category's decision is from flipping: P(unsafe) minus the larger other probability
        of its classifier (for multiclass: that label's probability minus the best other label's); positive where it
        says unsafe."""
        if self.design == "multiclass":
            cols = [i + 1 for i in range(len(CATEGORIES))]
            others = [np.delete(probs, c, axis=1).max(axis=1) for c in cols]
            return np.stack([probs[:, c] - o for c, o in zip(cols, others)], axis=1)
        return probs[:, :, 1] - np.maximum(probs[:, :, 0], probs[:, :, 2])

    def unsafe_probability(self, probs: np.ndarray, categories: list[str]) -> np.ndarray:
        """P(unsafe) of each pair in the given category (the second step of the paper's chatbot scoring)."""
        idx = [CATEGORIES.index(c) for c in categories]
        rows = np.arange(len(idx))
        if self.design == "multiclass":
            return probs[rows, [i + 1 for i in idx]]
        return probs[rows, idx, 1]
