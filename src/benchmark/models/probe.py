"""Backend `llm-probe`: a judge made of a language model's reading and a trained linear head (a probe). The model
(the manifest's `base`, any model config whose backend gives hidden states: llama-cpp or hf) reads a question about
the input (the manifest's `messages`, Jinja over its parts: context, response), and its last hidden state at the
prompt's last token, where it would begin its answer, is standardised and scored by the head: a logistic
regression fitted on labelled pairs (`python -m benchmark.judge train harm-probe`, judge/probe_train.py). Unsafe
where the score's logit reaches the threshold chosen on validation pairs.

A likelihood step asks the same model the same question and compares two label tokens' logits: one direction of
the same hidden state, fixed by the model's output head. A probe learns its direction from human labels instead.

A trained probe is a folder: probe.json (the base model's config, the prompt, the threshold, the training and its
validation figures, the head's sha256) and head.safetensors (mean, scale, weight, bias), pinned together with the
base model's weights' sha256 by the model config's `sha256`.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
from omegaconf import OmegaConf

from .. import BenchmarkError
from ..config import ModelConfig
from ..paths import judge_folder
from ..templates import render
from . import load_backend
from .base import Backend, Reach, above_threshold
from .encoders import TrainedFolder
from .usage import TOKENIZER, Usage
from .registry import register_backend

MANIFEST = "probe.json"
HEAD = "head.safetensors"
EVALUATION = "evaluation.json"  # written by training beside the head: the figures on the set's test rows
HEAD_TENSORS = ("mean", "scale", "weight", "bias")
MARK = "\x00"  # stands for every input part when the prompt's shared beginning is found


def read_manifest(path: str | Path, name: str | None = None) -> dict:
    folder = judge_folder(str(path))
    manifest = folder / MANIFEST
    if not manifest.is_file():
        raise BenchmarkError(f"model {name or folder}: no trained probe at {folder} ({MANIFEST} missing): train one "
                             f"with `python -m benchmark.judge train harm-probe output_dir={folder}`, or point "
                             "model.pretrained at a trained one")
    try:
        out = json.loads(manifest.read_text())
    except json.JSONDecodeError as e:
        raise BenchmarkError(f"{manifest}: not JSON: {e}") from None
    missing = [k for k in ("base", "messages", "threshold", "weights_sha256") if k not in out]
    if missing:
        raise BenchmarkError(f"{manifest}: missing {', '.join(missing)}")
    return out


def read_head(folder: Path, sha256: str | None) -> dict[str, np.ndarray]:
    from safetensors.numpy import load_file

    path = folder / HEAD
    if not path.is_file():
        raise BenchmarkError(f"{folder}: no {HEAD}")
    found = hashlib.sha256(path.read_bytes()).hexdigest()
    if found != sha256:
        raise BenchmarkError(f"{path}: its sha256 is {found}, not the weights_sha256 {sha256} of its {MANIFEST}")
    head = load_file(str(path))
    missing = [k for k in HEAD_TENSORS if k not in head]
    if missing:
        raise BenchmarkError(f"{path}: missing tensors {', '.join(missing)}")
    return head


def base_config(manifest: dict, where: str):
    """The base model's config, as the manifest records it, checked against the suite's model schema."""
    try:
        return OmegaConf.merge(OmegaConf.structured(ModelConfig), manifest["base"])
    except Exception as e:  # a wrong key or type, named by OmegaConf
        raise BenchmarkError(f"{where}: base: {str(e).splitlines()[0]}") from None


def message_parts(messages: list[dict]) -> list[str]:
    """The named parts of an input a probe's prompt reads (its messages' template variables)."""
    from jinja2 import meta
    from jinja2.sandbox import SandboxedEnvironment

    env = SandboxedEnvironment()
    return sorted({v for m in messages for v in meta.find_undeclared_variables(env.parse(m["content"]))})


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


class Probe:
    """A trained probe over its base model, loaded: prompt texts for inputs, and their logits."""

    def __init__(self, folder: str | Path, base=None, data_root: str | None = None, name: str | None = None,
                 head: bool = True):
        self.path = judge_folder(str(folder))
        self.manifest = read_manifest(folder, name)
        self.head = read_head(self.path, self.manifest["weights_sha256"]) if head else None
        self.threshold = float(self.manifest["threshold"])
        if base is None:
            try:
                base = load_backend(base_config(self.manifest, str(self.path / MANIFEST)), allow_remote_code=False,
                                    data_root=data_root)
            except BenchmarkError as e:  # named as the probe's: its base is not a model the run's config names
                raise BenchmarkError(f"{self.path / MANIFEST}: its base model: {e}") from None
        self.base = base
        if not self.base.supports("hidden_states"):
            raise BenchmarkError(f"{self.path / MANIFEST}: base model {self.manifest['base'].get('name')} (backend "
                                 f"{self.manifest['base'].get('backend')}) gives no hidden states: use llama-cpp or hf")
        self.messages = self.manifest["messages"]
        self.prefix = self.text({part: MARK for part in self.parts()}).split(MARK)[0]
        self.prefix = self.prefix[: self.prefix.rfind("\n") + 1]  # a token may run across the first part's start

    def parts(self) -> list[str]:
        return message_parts(self.messages)

    def text(self, parts: dict) -> str:
        messages = [{"role": m["role"], "content": render(m["content"], parts, f"{self.path / MANIFEST}: messages")}
                    for m in self.messages]
        return self.base.context_text(messages)

    def features(self, inputs: list[dict]) -> np.ndarray:
        return self.base.hidden_states([self.text(x) for x in inputs], self.prefix)

    def logits(self, features: np.ndarray) -> np.ndarray:
        h = self.head
        if features.shape[1:] != h["weight"].shape:
            raise BenchmarkError(f"{self.path}: the head reads {h['weight'].shape[0]} features, the base model gives "
                                 f"{features.shape[1]}")
        return ((features - h["mean"]) / h["scale"]) @ h["weight"] + float(h["bias"][0])


@register_backend("llm-probe")
class LLMProbe(TrainedFolder, Backend):
    """Its content: the manifest, which pins the base model's weights by sha256, and the head (TrainedFolder)."""

    manifest_file = MANIFEST
    read_manifest = staticmethod(read_manifest)
    model_kind = "classifier"
    fields = frozenset({"pretrained"})
    operations = frozenset({"classify"})
    answer_shape = "verdict-2"
    verdict_fields = frozenset({"unsafe", "score", "margin"})
    requests_go = Reach.LOCAL

    def __init__(self, cfg, data_root: str | None = None):
        if not cfg.pretrained:
            raise BenchmarkError(f"model {cfg.name}: backend llm-probe needs model.pretrained (the probe's folder)")
        self.probe = Probe(cfg.pretrained, data_root=data_root, name=cfg.name)

    def usage(self, requests, answers):
        """The tokens the base model reads of each input: the probe's prompt around it, as the model reads it."""
        return [Usage(self.probe.base.count_tokens(self.probe.text(r.input)), 0, TOKENIZER) for r in requests]

    @classmethod
    def unreadable_set(cls, cfg, parts: dict) -> str | None:
        """A probe reads the parts its prompt names (a request and a reply): a set of lone utterances is not what it
        judges, and a language model reading thousands of them costs hours."""
        reads = message_parts(read_manifest(cfg.pretrained, cfg.name)["messages"])
        missing = [p for p in reads if p not in parts]
        return f"the probe reads {' and '.join(reads)}; the set gives no {', '.join(missing)}" if missing else None

    def classify(self, inputs):
        """P(unsafe) from the head's logit; unsafe where the logit reaches the threshold (margin: their difference)."""
        z = self.probe.logits(self.probe.features(inputs))
        return [{"unsafe": bool(x - self.probe.threshold >= 0), "score": round(float(sigmoid(x)), 4),
                 "margin": float(x - self.probe.threshold)} for x in z]

    @classmethod
    def verdict_rule(cls, cfg):
        """Unsafe where the margin (logit minus threshold) is at least 0, and the recorded score must be the sigmoid
        of the threshold plus that margin, where the probe's manifest is here to say the threshold."""
        folder = judge_folder(cfg.pretrained) if cfg.pretrained else None
        threshold = (float(read_manifest(cfg.pretrained, cfg.name)["threshold"])
                     if folder is not None and (folder / MANIFEST).is_file() else None)

        def problem(verdict):
            wrong = above_threshold(verdict, "margin", 0.0, inclusive=True)
            if wrong or threshold is None:
                return wrong
            score, margin = verdict.get("score"), verdict["margin"]
            expected = float(sigmoid(threshold + margin))
            if not isinstance(score, (int, float)) or abs(score - expected) > 6e-5:
                return f"score {score!r} is not the sigmoid of its threshold {threshold} plus its margin {margin!r}"
            return None
        return problem

    def describe(self) -> dict:
        return self.artifact_facts(self.probe.path)

    @staticmethod
    def artifact_facts(folder) -> dict:
        """What a card records of the probe: from its manifest and evaluation, not its weights."""
        manifest = read_manifest(folder)
        base = manifest["base"]
        facts = {"encoder": f"{base.get('name')} ({base.get('backend')}), last hidden state",
                 "threshold": manifest["threshold"], "set": manifest.get("set"),
                 "weights_sha256": manifest["weights_sha256"], "val": manifest.get("val")}
        evaluation = judge_folder(str(folder)) / EVALUATION
        if evaluation.is_file():
            facts["evaluation"] = json.loads(evaluation.read_text())
        return facts
