"""Train a probe judge (models/probe.py): `python -m benchmark.judge train harm-probe [key=value ...]`.

The base model reads each labelled pair through the probe's prompt; its last hidden states are kept per chunk
(a stopped training resumes from the last chunk written). A logistic regression on the standardised states is fitted
on the training pairs, its regularisation chosen by 5-fold cross-validated ROC AUC on them; the threshold on its
logit is the one with the best Youden J on the validation pairs (J is what a card's corrected rate divides by).
"""

from __future__ import annotations

import hashlib
import json
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import List, Optional

import numpy as np
from omegaconf import MISSING, OmegaConf

from .. import BenchmarkError, __version__
from ..composition import compose
from ..config import Message
from ..data import data_file
from ..files import write_json
from ..identity import sha256_json
from ..models import load_backend
from ..models.probe import EVALUATION, HEAD, MANIFEST, Probe, base_config
from ..paths import CONF_DIR
from ..templates import render
from .config import training_settings

PROBE_CONF = CONF_DIR / "probe_train"
CHUNK = 100  # pairs per features file


@dataclass
class LabelledFile:
    """Labelled pairs: a JSON list of rows, `n` of them drawn with `seed` (all where n is null)."""

    path: str = MISSING  # relative to data_root
    n: Optional[int] = None
    seed: int = 0


@dataclass
class ProbeTrainConfig:
    """conf/probe_train/NAME.yaml: a probe judge's base model, prompt and labelled pairs."""

    name: str = MISSING
    base: str = MISSING  # a model config of conf/model
    base_overrides: List[str] = field(default_factory=list)  # e.g. model.backend=llama-cpp
    messages: List[Message] = field(default_factory=list)  # Jinja over each pair's context and response
    input: dict = field(default_factory=dict)  # {context: Jinja over a row, response: ...}
    unsafe: str = MISSING  # Jinja over a row: "True" where the humans label it unsafe
    set: Optional[str] = None  # the conf/judge_validation.yaml set whose test rows measure it (its training sets' source)
    train: LabelledFile = field(default_factory=LabelledFile)
    val: LabelledFile = field(default_factory=LabelledFile)
    test: Optional[LabelledFile] = None  # measured once trained (evaluation.json); null: not here
    c_grid: List[float] = field(default_factory=lambda: [0.001, 0.003, 0.01, 0.03, 0.1])
    data_root: Optional[str] = None
    output_dir: Optional[str] = None  # null: checkpoints/<name>
    threads: Optional[int] = None  # the base model's threads (llama-cpp: model.args.n_threads)
    minutes: Optional[int] = None  # the training's time, as measured


def load_config(name: str, overrides: list[str] = ()):
    path = PROBE_CONF / f"{name}.yaml"
    if not path.is_file():
        raise BenchmarkError(f"no probe judge {name!r} in {PROBE_CONF}")
    return training_settings(path, ProbeTrainConfig, overrides)


def shipped() -> list[str]:
    return sorted(p.stem for p in PROBE_CONF.glob("*.yaml"))


def base_model(cfg):
    """The base model's config as `python -m benchmark model=BASE OVERRIDES` composes it."""
    return OmegaConf.to_container(compose([f"model={cfg.base}", *cfg.base_overrides]).model, resolve=True)


def load_base(base: dict, threads: int | None, where: str):
    """The base model, on `threads` threads where it is llama-cpp (a setting of this machine, not of the probe)."""
    config = base_config({"base": base}, where)
    if threads and config.backend == "llama-cpp":
        config.args["n_threads"] = threads
    return load_backend(config, allow_remote_code=False, data_root=None)


def pairs(cfg, part: LabelledFile, where: str) -> tuple[list[dict], np.ndarray]:
    path = data_file(cfg.data_root, part.path, where)
    if not path.is_file():
        raise BenchmarkError(f"{where}: {part.path} is not under data_root ({cfg.data_root})")
    rows = json.loads(path.read_text())
    if not isinstance(rows, list):
        raise BenchmarkError(f"{where}: {path} is not a JSON list of rows")
    order = list(range(len(rows)))
    random.Random(part.seed).shuffle(order)
    picked = [rows[i] for i in (order[: part.n] if part.n else range(len(rows)))]
    inputs = [{k: render(t, r, f"{where}: input.{k}") for k, t in cfg.input.items()} for r in picked]
    gold = np.array([render(cfg.unsafe, r, f"{where}: unsafe").strip() == "True" for r in picked], dtype=np.int64)
    return inputs, gold


def features(probe: Probe, inputs: list[dict], folder: Path, say) -> np.ndarray:
    """The base model's states for the inputs, kept per CHUNK in `folder` (keyed by the inputs' hash)."""
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    start = time.time()
    for i in range(0, len(inputs), CHUNK):
        chunk = inputs[i : i + CHUNK]
        key = hashlib.sha256(json.dumps(chunk, sort_keys=True).encode()).hexdigest()[:16]
        path = folder / f"{i:06d}-{key}.npy"
        if not path.is_file():
            x = probe.features(chunk)
            np.save(path.with_suffix(".tmp.npy"), x)
            path.with_suffix(".tmp.npy").replace(path)
            say(f"{folder.name}: {i + len(chunk)}/{len(inputs)} pairs read ({time.time() - start:.0f} s)")
        out.append(np.load(path))
    return np.concatenate(out) if out else np.zeros((0, 0), dtype=np.float32)


def youden(gold: np.ndarray, z: np.ndarray) -> tuple[float, dict]:
    """The threshold (on the logit) with the best J, halfway between neighbouring logits, and its figures."""
    from sklearn.metrics import roc_auc_score

    order = np.sort(np.unique(z))
    cuts = np.concatenate([[order[0] - 1], (order[:-1] + order[1:]) / 2, [order[-1] + 1]])
    best = max(cuts, key=lambda t: (rates(gold, z, t)["j"], -abs(t)))
    return float(best), {**rates(gold, z, best), "auc": round(float(roc_auc_score(gold, z)), 4)}


def rates(gold: np.ndarray, z: np.ndarray, threshold: float) -> dict:
    flag = z >= threshold
    sens = float((flag & (gold == 1)).sum() / max(1, (gold == 1).sum()))
    spec = float((~flag & (gold == 0)).sum() / max(1, (gold == 0).sum()))
    tp, fp = int((flag & (gold == 1)).sum()), int((flag & (gold == 0)).sum())
    precision = tp / (tp + fp) if tp + fp else 0.0
    f1 = 2 * precision * sens / (precision + sens) if precision + sens else 0.0
    return {"n": int(len(gold)), "unsafe": int(gold.sum()), "sensitivity": round(sens, 4),
            "specificity": round(spec, 4), "j": round(sens + spec - 1, 4), "f1": round(f1, 4)}


@dataclass
class Head:
    """A probe's fitted head: standardisation, logistic weights, the C chosen and what each C scored, the threshold on
    the logit and its figures on the validation pairs."""

    mean: np.ndarray
    scale: np.ndarray
    weight: np.ndarray
    bias: np.ndarray
    c: float
    tried: dict
    threshold: float
    val: dict

    def logits(self, f: np.ndarray) -> np.ndarray:
        return ((f - self.mean) / self.scale) @ self.weight + self.bias[0]


def fit_head(f_train: np.ndarray, y_train: np.ndarray, f_val: np.ndarray, y_val: np.ndarray, c_grid) -> Head:
    """A logistic regression on the standardised states, C by 5-fold cross-validated ROC AUC on the training pairs,
    the threshold by the best Youden J on the validation pairs."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import cross_val_score

    mean, scale = f_train.mean(axis=0), f_train.std(axis=0) + 1e-6
    s_train = (f_train - mean) / scale
    tried = {c: float(cross_val_score(LogisticRegression(C=c, max_iter=5000), s_train, y_train, cv=5,
                                      scoring="roc_auc").mean()) for c in c_grid}
    c = max(tried, key=lambda k: (tried[k], -k))
    fit = LogisticRegression(C=c, max_iter=5000).fit(s_train, y_train)
    weight, bias = fit.coef_[0].astype(np.float32), fit.intercept_.astype(np.float32)
    threshold, val = youden(y_val, ((f_val - mean) / scale) @ weight + bias[0])
    return Head(mean, scale, weight, bias, c, tried, threshold, val)


def train(name: str, overrides: list[str] = ()) -> Path:
    from safetensors.numpy import save_file

    cfg = load_config(name, overrides)
    out = Path(cfg.output_dir or Path("checkpoints") / cfg.name)
    out.mkdir(parents=True, exist_ok=True)
    say = lambda line: print(line, flush=True)  # noqa: E731
    base = base_model(cfg)
    messages = [{"role": m.role, "content": m.content} for m in cfg.messages]
    if not messages:
        raise BenchmarkError(f"probe {name}: messages is empty: the probe's prompt")
    # the manifest first (without head): the prompt and base that the features are read with
    write_json(out / MANIFEST, {"base": base, "messages": messages, "threshold": 0.0, "weights_sha256": None})
    (out / HEAD).unlink(missing_ok=True)
    probe = Probe(out, base=load_base(base, cfg.threads, str(out / MANIFEST)), name=name, head=False)
    x_train, y_train = pairs(cfg, cfg.train, f"probe {name}: train")
    x_val, y_val = pairs(cfg, cfg.val, f"probe {name}: val")
    read_as = out / "features" / sha256_json({"base": base, "messages": messages})[:12]  # new prompt: new features
    f_train = features(probe, x_train, read_as / "train", say)
    f_val = features(probe, x_val, read_as / "val", say)
    head = fit_head(f_train, y_train, f_val, y_val, cfg.c_grid)
    save_file({"mean": head.mean.astype(np.float32), "scale": head.scale.astype(np.float32), "weight": head.weight,
               "bias": head.bias}, str(out / HEAD))
    manifest = {
        "base": base, "messages": messages, "threshold": round(head.threshold, 6),
        "weights_sha256": hashlib.sha256((out / HEAD).read_bytes()).hexdigest(), "set": cfg.set,
        "val": head.val, "train": {"n": int(len(y_train)), "unsafe": int(y_train.sum()), "c": head.c,
                                   "cv_auc": {str(k): round(v, 4) for k, v in head.tried.items()},
                                   "path": cfg.train.path, "seed": cfg.train.seed, "val_path": cfg.val.path,
                                   "val_n": int(len(y_val)), "val_seed": cfg.val.seed},
        "suite_version": __version__,
    }
    write_json(out / MANIFEST, manifest)
    say(f"C={head.c} (5-fold AUC {head.tried[head.c]:.3f}); threshold {head.threshold:.3f}: val {head.val}")
    if cfg.test is not None:
        x_test, y_test = pairs(cfg, cfg.test, f"probe {name}: test")
        trained = Probe(out, base=probe.base, name=name)
        z = trained.logits(features(trained, x_test, read_as / "test", say))
        write_json(out / EVALUATION, {"test": {**rates(y_test, z, trained.threshold),
                                               "auc": youden(y_test, z)[1]["auc"], "path": cfg.test.path}})
    return out
