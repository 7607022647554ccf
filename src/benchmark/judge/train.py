"""Train a binary classifier judge on a labelled set's training rows (see the package's docstring).

Every member is trained by the detector's loop (detector_train.py: AdamW with warm-up, length-grouped batches, the
epoch with the best validation score kept, the whole state saved after every epoch so a stopped training resumes
where it stopped and ends with the same weights). Members are chosen by average precision on the validation share
(threshold-free); the threshold is then the one with the best F1 of the members' mean probability on that share.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import numpy as np
from omegaconf import OmegaConf

from .. import BenchmarkError, __version__
from ..files import write_json
from ..identity import records_sha256
from ..judging import validity
from ..judging.labelled import human_labels, judge_inputs, labelled_rows
from ..models import detector as D
from ..models.classifier import EVALUATION, MANIFEST, TRAIN_CONF, class_label, config_path
from ..models.encoders import load_classifier, logits_of, resolve_encoder, softmax, tokenize, weights_sha256
from ..models.probe import MANIFEST as PROBE_MANIFEST
from ..paths import JUDGES_DIR
from ..templates import render
from ..text import normalise
from . import DETECTOR
from . import probe_train
from .config import JudgeTrainConfig, training_settings
from .detector_train import Trainer
from .examples import Example


def shipped() -> list[str]:
    return sorted([DETECTOR, *(p.stem for p in TRAIN_CONF.glob("*.yaml")), *probe_train.shipped()])


def load_config(name: str, overrides: list[str] = ()):
    """conf/judge_train/NAME.yaml, checked against JudgeTrainConfig, with key=value overrides."""
    path = config_path(name)
    if not path.is_file():
        raise BenchmarkError(f"no trainable judge {name!r}; shipped: {', '.join(shipped())}")
    return training_settings(path, JudgeTrainConfig, overrides)


def trained_status(name: str) -> str:
    """One line for `list judges`: the shipped judge (judges/NAME) with its measured figures, and whether one was
    trained here (checkpoints/NAME), or how to train it."""
    if name == DETECTOR:
        local, manifest, minutes = Path(D.DEFAULT_DIR), D.MANIFEST, D.TRAIN_MINUTES
    elif name in probe_train.shipped():
        local, manifest = Path(f"checkpoints/{name}"), PROBE_MANIFEST
        minutes = probe_train.load_config(name).minutes
    else:
        local, manifest = Path(f"checkpoints/{name}"), MANIFEST
        minutes = OmegaConf.load(config_path(name)).get("minutes")
    shipped_folder = JUDGES_DIR / name
    if (shipped_folder / manifest).is_file():
        line = f"shipped in judges/{name}"
        evaluation = shipped_folder / EVALUATION
        if manifest == PROBE_MANIFEST:  # a probe's validation figures (its test figures are on the cards it judges)
            v = json.loads((shipped_folder / manifest).read_text())["val"]
            line += (f"; validation ({v['n']} pairs) ROC AUC {v['auc']}, Youden J {v['j']} (sensitivity "
                     f"{v['sensitivity']}, specificity {v['specificity']})")
        elif evaluation.is_file():
            e = json.loads(evaluation.read_text())
            if "test" in e:  # the detector's report: its DiaSafety test figures
                e = e["test"]
                line += (f"; DiaSafety test fine macro F1 {100 * e['fine_macro_f1']:.1f}, "
                         f"coarse {100 * e['coarse_macro_f1']:.1f}")
            else:
                line += (f"; {e['set']} test F1 {100 * e['f1']:.1f} (P {100 * e['precision']:.1f}, "
                         f"R {100 * e['recall']:.1f}), AUPRC {e['auprc']}, threshold {e['threshold']:.3f}")
    else:
        line = "not shipped"
    if (local / manifest).is_file():
        return f"{line}; one trained here in {local} (model.pretrained={local} model.sha256=null)"
    return f"{line}; train your own: python -m benchmark.judge train {name} (about {minutes} minutes on 2 CPU cores)"


@dataclass
class Labelled:
    """The set's training rows as the judge reads them, split into the part it learns from and the part that
    chooses its settings."""

    train: list[Example]
    val: list[Example]


def _row_key(row: dict, parts: dict) -> str:
    return str(row.get("id")) if row.get("id") is not None else json.dumps(parts, sort_keys=True)


def carve(keys: list[str], labels: list[int], share: float, seed: int) -> np.ndarray:
    """A boolean mask of the validation rows: within each label, the `share` of rows whose hash of (seed, key) is
    smallest. The same rows whatever the file's order."""
    held = np.zeros(len(keys), dtype=bool)
    for label in sorted(set(labels)):
        rows = [i for i, y in enumerate(labels) if y == label]
        rows.sort(key=lambda i: hashlib.sha256(f"{seed}:{keys[i]}".encode()).hexdigest())
        held[rows[: round(share * len(rows))]] = True
    return held


def row_classes(vs, rows: list[dict], classes: list[str], where: str) -> list[int]:
    """Each row's class, as an index into `classes` (the set's `classes` template names it)."""
    if vs.classes is None:
        raise BenchmarkError(f"{where}: the judge has classes {classes}, and the set names no row's class (`classes:` "
                             "in conf/judge_validation.yaml)")
    out = []
    for i, row in enumerate(rows):
        name = render(vs.classes, row, f"{where}: classes").strip()
        if name not in classes:
            raise BenchmarkError(f"{where}: row {i}'s class {name!r} is not one of {classes}")
        out.append(classes.index(name))
    return out


def labelled(vs, data_root: str | None, classes: list[str] = ()) -> Labelled:
    """The set's training rows, labelled 0/1 by its `unsafe` template, or by their index in `classes`."""
    where = f"judge validation set {vs.name}: train"
    if vs.train is None:
        raise BenchmarkError(f"{where}: the set declares no training rows (`train:` in conf/judge_validation.yaml)")
    if vs.train.val is None and not 0 < vs.train.val_share < 1:
        raise BenchmarkError(f"{where}.val_share={vs.train.val_share}: use a share between 0 and 1")
    examples, keys, _ = _examples(vs, data_root, vs.train.data, classes, where)
    if vs.train.val is not None:  # a file of its own: nothing carved
        val, _, _ = _examples(vs, data_root, vs.train.val, classes, f"{where}.val")
        if len({e.label for e in val}) < 2:
            raise BenchmarkError(f"{where}.val: {vs.train.val.path} holds one label only; validation needs both")
        return Labelled(examples, val)
    held = carve(keys, [e.label for e in examples], vs.train.val_share, vs.train.val_seed)
    if len({e.label for e, h in zip(examples, held) if h}) < 2:
        raise BenchmarkError(f"{where}: the validation share holds one label only; the set needs both")
    return Labelled([e for e, h in zip(examples, held) if not h], [e for e, h in zip(examples, held) if h])


def _examples(vs, data_root: str | None, data, classes, where: str) -> tuple[list[Example], list[str], list[dict]]:
    """A training file's rows as examples (their hash checked where it is pinned), each row's key, and the rows."""
    rows = labelled_rows(vs, data_root, data, where)
    if not rows:
        raise BenchmarkError(f"{where}: {data.path} has no rows")
    if data.sha256 and records_sha256(rows) != data.sha256:
        raise BenchmarkError(f"{where}: {data.path} is not the file the shipped judges were trained on "
                             f"(its rows hash to {records_sha256(rows)}, not {data.sha256})")
    inputs = judge_inputs(vs, rows, where)
    labels = row_classes(vs, rows, list(classes), where) if classes else human_labels(vs, rows, where)
    examples = [Example(parts.get("context"), parts.get("response", ""), label)
                for parts, label in zip(inputs, labels)]
    return examples, [_row_key(row, parts) for row, parts in zip(rows, inputs)], rows


def excluded_texts(vs, sets: dict, data_root: str | None, where: str) -> set[str]:
    """The requests and replies (case and spacing aside) of the sets a set's training rows must not share
    (train.exclude)."""
    out = set()
    for name in vs.train.exclude:
        if name not in sets:
            raise BenchmarkError(f"{where}: set {vs.name}'s train.exclude names {name!r}, which is not a set of "
                                 "conf/judge_validation.yaml")
        other = sets[name]
        for parts in judge_inputs(other, labelled_rows(other, data_root), f"{where}: excluded set {name}"):
            out.update(normalise(v) for v in parts.values() if v.strip())
    return out


def more_rows(cfg, sets: dict) -> list[Example]:
    """The training examples the config's `more_rows` add: from each named set, its training rows outside the share
    it carves for its own validation (a judge trained there is chosen on those), kept and labelled by the templates."""
    out = []
    for i, more in enumerate(cfg.more_rows):
        where = f"{config_path(cfg.name)}: more_rows[{i}]"
        if more.set not in sets or sets[more.set].train is None:
            raise BenchmarkError(f"{where}: set={more.set!r} is not a set of conf/judge_validation.yaml with training "
                                 f"rows ({', '.join(sorted(k for k, s in sets.items() if s.train is not None))})")
        vs = sets[more.set]
        examples, keys, rows = _examples(vs, cfg.data_root, vs.train.data, (), where)
        held = (np.zeros(len(rows), dtype=bool) if vs.train.val is not None else
                carve(keys, [e.label for e in examples], vs.train.val_share, vs.train.val_seed))
        measured = excluded_texts(vs, sets, cfg.data_root, where)
        for row, example, h in zip(rows, examples, held):
            if h or normalise(example.context or "") in measured or normalise(example.response) in measured:
                continue
            if render(more.keep, row, f"{where}.keep").strip().lower() in ("", "false", "0", "none", "no"):
                continue
            name = render(more.label, row, f"{where}.label").strip()
            names = list(cfg.classes) or ["0", "1"]
            if name not in names:
                raise BenchmarkError(f"{where}.label: {name!r} is not one of {names}")
            out.append(Example(example.context, example.response, names.index(name)))
    return out


def best_threshold(gold: np.ndarray, prob: np.ndarray) -> float:
    """The threshold with the best F1 (unsafe when P >= it), halfway between two neighbouring probabilities."""
    order = np.argsort(-prob, kind="stable")
    p, g = prob[order], gold[order]
    tp = np.cumsum(g)
    f1 = 2 * tp / (np.arange(1, len(g) + 1) + g.sum())
    cut = [i for i in range(len(p)) if i == len(p) - 1 or p[i] > p[i + 1]]  # flag the top i+1
    i = max(cut, key=lambda c: (f1[c], -c))
    return float(p[i] if i == len(p) - 1 else (p[i] + p[i + 1]) / 2)


def figures(gold: np.ndarray, prob: np.ndarray, threshold: float) -> dict:
    from sklearn.metrics import average_precision_score

    flag = prob >= threshold
    tp, fp, fn = int((flag & (gold == 1)).sum()), int((flag & (gold == 0)).sum()), int((~flag & (gold == 1)).sum())
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"n": int(len(gold)), "unsafe": int(gold.sum()), "precision": round(precision, 4),
            "recall": round(recall, 4), "f1": round(f1, 4),
            "auprc": round(float(average_precision_score(gold, prob)), 4) if 0 < gold.sum() < len(gold) else None}


class Run:
    """One training of one judge: its members, each a fine-tuned encoder in a subfolder."""

    def __init__(self, cfg, data: Labelled, out: Path):
        import transformers
        from transformers import AutoTokenizer

        transformers.logging.set_verbosity_error()  # the "newly initialized head" notice is expected here
        self.cfg, self.data, self.out = cfg, data, out
        self.encoders: dict[str, tuple] = {}  # encoder name -> (its folder, its tokenizer)
        for name in [cfg.encoder, *(g.encoder for g in cfg.more_encoders)]:
            path = resolve_encoder(name)
            try:
                self.encoders[name] = (path, AutoTokenizer.from_pretrained(path))
            except OSError as e:
                raise BenchmarkError(f"encoder={name!r}: not a local folder and not loadable from the hub "
                                     f"({e})") from None
        self.with_context = any(e.context is not None for e in data.train)
        self.classes = list(cfg.classes) or ["safe", "unsafe"]
        self.gold_class = np.array([e.label for e in data.val])
        self.gold = (self.gold_class > 0).astype(int)  # flagged: any class but the first
        self.log_file = open(out / "training_log.jsonl", "a", encoding="utf-8")  # a resumed training adds to it

    def _log(self, event: dict) -> None:
        self.log_file.write(json.dumps(event) + "\n")
        self.log_file.flush()

    def _say(self, line: str) -> None:
        if self.cfg.progress:
            print(line, flush=True)

    def member(self, encoder: str, lr: float, seed: int) -> dict:
        """Train (or resume, or reuse) the member of this encoder with this learning rate and seed; its figures on
        val."""
        from sklearn.metrics import average_precision_score

        cfg = self.cfg
        settings = SimpleNamespace(
            seed=seed, epochs=cfg.epochs, batch_size=cfg.batch_size, lr=lr, weight_decay=cfg.weight_decay,
            warmup_ratio=cfg.warmup_ratio, length_grouped=cfg.length_grouped, log_every=cfg.log_every,
            progress=cfg.progress, max_length=cfg.max_length, with_context=self.with_context, na_weight=None,
            encoder=encoder, lora=cfg.lora)
        path, tokenizer = self.encoders[encoder]
        # the first encoder's members are named by their settings alone; a further encoder's also by its name
        name = f"lr{lr:g}-seed{seed}" if encoder == cfg.encoder else f"{Path(encoder).name}-lr{lr:g}-seed{seed}"
        val_ids = tokenize(tokenizer, [(e.context, e.response) for e in self.data.val], cfg.max_length,
                           self.with_context)

        def select(logits) -> float:
            return float(average_precision_score(self.gold, 1 - softmax(logits)[:, 0]))

        fit = Trainer(settings, tokenizer, path, self._log, self._say).fit(
            name, self.data.train, self.data.val, dict(enumerate(self.classes)), 1, select, self.out / name,
            score_name="val_auprc")

        model = load_classifier(self.out / name)
        probs = softmax(logits_of(model, tokenizer, val_ids, cfg.batch_size * 2))
        return {"dir": name, "encoder": encoder, "lr": lr, "seed": seed, "best_epoch": fit["best_epoch"],
                "val_auprc": round(fit["val_auprc"], 4), "epoch_seconds": [h["epoch_seconds"] for h in fit["history"]],
                "val_prob": 1 - probs[:, 0], "val_classes": probs}


def train(name: str, overrides: list[str] = ()) -> Path:
    """`python -m benchmark.judge train NAME [key=value ...]` -> the judge's folder."""
    import torch

    cfg = load_config(name, overrides)
    if not cfg.lr or not cfg.seeds:
        raise BenchmarkError(f"{config_path(name)}: lr and seeds each need at least one value")
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    sets = {s.name: s for s in validity.validation_sets()}
    if cfg.set not in sets:
        raise BenchmarkError(f"{config_path(name)}: set={cfg.set!r} is not in conf/judge_validation.yaml "
                             f"({', '.join(sorted(sets))})")
    vs = sets[cfg.set]
    out = Path(cfg.output_dir or f"checkpoints/{cfg.name}")
    settings = {k: v for k, v in OmegaConf.to_container(cfg, resolve=True).items()
                if k not in ("data_root", "output_dir", "overwrite", "threads", "log_every", "progress", "minutes",
                             "references")}
    _start(out, settings, cfg.overwrite)
    for g in cfg.more_encoders:
        if not g.lr or not g.seeds:
            raise BenchmarkError(f"{config_path(name)}: more_encoders {g.encoder}: lr and seeds each need a value")
    data = labelled(vs, cfg.data_root, cfg.classes)
    data.train += more_rows(cfg, sets)
    run = Run(cfg, data, out)
    tried, members, group_probs, group_classes = [], [], [], []
    for encoder, lrs, seeds in [(cfg.encoder, cfg.lr, cfg.seeds),
                                *((g.encoder, g.lr, g.seeds) for g in cfg.more_encoders)]:
        these = [run.member(encoder, lr, seeds[0]) for lr in lrs]
        best = max(these, key=lambda m: m["val_auprc"])
        group = [best] + [run.member(encoder, best["lr"], seed) for seed in seeds[1:]]
        tried, members = tried + these, members + group
        group_probs.append(np.mean([m["val_prob"] for m in group], axis=0))
        group_classes.append(np.mean([m["val_classes"] for m in group], axis=0))
    prob = np.mean(group_probs, axis=0)
    threshold = best_threshold(run.gold, prob)
    run.log_file.close()
    _finish(out, cfg, vs, run, tried, members, threshold, prob, settings, np.mean(group_classes, axis=0))
    return out


def _start(out: Path, settings: dict, overwrite: bool) -> None:
    begun = out / "training.json"  # what the folder's unfinished training is: a resume needs the same settings
    if (out / MANIFEST).exists():
        if not overwrite:
            raise BenchmarkError(f"{out} already holds a trained judge; pass overwrite=true or another output_dir")
        (out / MANIFEST).unlink()  # until the new manifest is written, the folder is not a usable judge
        for leftover in [*out.rglob("fit.json"), *out.rglob(".resume.pt")]:
            leftover.unlink()
    if begun.is_file() and json.loads(begun.read_text()) != settings:
        raise BenchmarkError(f"{out} holds an unfinished training with other settings; pass another output_dir, or "
                             "remove that folder to start over")
    out.mkdir(parents=True, exist_ok=True)
    write_json(begun, settings)


def _finish(out: Path, cfg, vs, run: Run, tried: list, members: list, threshold: float, prob, settings,
            class_probs) -> None:
    import torch

    keep = {m["dir"] for m in members}
    for m in tried:  # learning rates that lost are not part of the judge
        if m["dir"] not in keep:
            shutil.rmtree(out / m["dir"], ignore_errors=True)
    plain = [{k: v for k, v in m.items() if k not in ("val_prob", "val_classes")} for m in members]
    manifest = {
        "name": cfg.name, "set": vs.name, "encoder": cfg.encoder, "with_context": run.with_context,
        "max_length": cfg.max_length, "members": plain, "threshold": round(threshold, 6),
        "lr_tried": {(f"{m['lr']:g}" if m["encoder"] == cfg.encoder else f"{Path(m['encoder']).name} {m['lr']:g}"):
                     m["val_auprc"] for m in tried},
        "val": figures(run.gold, prob, threshold),
        **({"classes": run.classes, "val_class_accuracy": round(float(np.mean(
            [class_label(p >= threshold, c) == g for p, c, g in zip(prob, class_probs, run.gold_class)])), 4)}
           if cfg.classes else {}),
        "weights_sha256": weights_sha256(out),
        "train_records": len(run.data.train), "val_records": len(run.data.val),
        "train_seconds": round(sum(s for m in {m["dir"]: m for m in tried + members}.values()
                                   for s in m["epoch_seconds"]), 1),
        "settings": settings, "threads": torch.get_num_threads(), "cpu_count": os.cpu_count(),
        "benchmark_version": __version__,
    }
    write_json(out / MANIFEST, manifest)
    for leftover in [*out.rglob("fit.json"), out / "training.json"]:
        leftover.unlink(missing_ok=True)
