"""Fine-tune a Hugging Face encoder into a DiaSafety detector (one of three designs); see `conf/detector_train.yaml`.

Every design is trained by the same loop: AdamW with linear warm-up and decay, length-grouped random batches (similar
lengths share a batch, so little padding), one validation pass per epoch, and the epoch with the best validation
macro F1 is the one saved. The output is a standard Hugging Face checkpoint folder (one per member for one_vs_all),
with `detector.json` and `training_log.jsonl` beside it.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np
from omegaconf import OmegaConf

from .. import BenchmarkError, __version__
from .. import metrics as M
from ..data import load_rows
from ..files import write_json
from ..identity import sha256_json
from ..models.detector import (ABBREVIATIONS, CATEGORIES, DEFAULT_DIR, DESIGNS, FINE_LABELS, MANIFEST, MEMBER_LABELS,
                               fine_decision)
from ..models.encoders import (collate, logits_of, resolve_encoder, save_delta, softmax, tokenize, weights_sha256,
                               with_delta)
from ..config import DataConfig
from ..paths import CONF_DIR
from . import examples as E
from .config import DetectorTrainConfig

# settings that decide the weights (the others: where data is read from, threads, logging)
_NOT_WEIGHTS = ("data_root", "remote", "output_dir", "overwrite", "threads", "log_every", "progress")


def weight_settings(cfg) -> dict:
    data = OmegaConf.to_container(cfg, resolve=True)
    return {k: v for k, v in data.items() if k not in _NOT_WEIGHTS}


def default_output_dir(cfg) -> Path:
    """`output_dir`, else the default detector's folder for the default settings, else a folder named by the
    settings that differ from them (so two trainings never share a folder by accident)."""
    if cfg.output_dir:
        return Path(cfg.output_dir)
    shipped = OmegaConf.load(_conf_file())
    shipped = OmegaConf.masked_copy(shipped, [k for k in shipped if k not in ("defaults", "hydra")])
    defaults = weight_settings(OmegaConf.merge(OmegaConf.structured(DetectorTrainConfig), shipped))
    changed = {k: v for k, v in weight_settings(cfg).items() if defaults.get(k) != v}
    if not changed:
        return Path(DEFAULT_DIR)
    ctx = "ctx" if cfg.with_context else "noctx"
    return Path(f"checkpoints/diasafety-{cfg.design}-{ctx}-{sha256_json(changed)[:8]}")


def _conf_file() -> Path:
    return CONF_DIR / "detector_train.yaml"


def load_split(cfg, path: str, limit: int | None) -> list[dict]:
    where = f"detector data {path}"
    url = f"{cfg.remote}/{Path(path).name}"
    rows, _ = load_rows(DataConfig(path=path, url=url), cfg.data_root, where)
    E.check_rows(rows, where)
    if limit is not None:
        rows = [rows[i] for i in np.random.default_rng(cfg.seed).permutation(len(rows))[:limit]]
    return rows


def grouped_batches(lengths: np.ndarray, batch_size: int, rng, group: bool) -> list[np.ndarray]:
    """Random batches; with `group`, each run of 50 batches is sorted by length before it is cut into batches."""
    idx = rng.permutation(len(lengths))
    span = batch_size * 50 if group else batch_size
    batches = []
    for s in range(0, len(idx), span):
        chunk = idx[s : s + span]
        if group:
            chunk = chunk[np.argsort(lengths[chunk], kind="stable")]
        batches += [chunk[i : i + batch_size] for i in range(0, len(chunk), batch_size)]
    return [batches[i] for i in rng.permutation(len(batches))]


def macro_f1(gold, pred, labels) -> float:
    """The suite's macro F1 (over the classes present in gold), on integer class codes 0..len(labels)-1."""
    return float(M.macro_f1(np.asarray(gold)[None], np.asarray(pred)[None], len(labels))[0])


def _save_resume(path: Path, state: dict) -> None:
    """The training's whole state after an epoch, replaced in one step (a kill mid-write leaves the last one)."""
    import torch

    tmp = path.with_name(f".resume.{os.getpid()}.tmp")
    torch.save(state, tmp)
    os.replace(tmp, path)


class Trainer:
    def __init__(self, cfg, tokenizer, encoder_path: str, log, say):
        self.cfg, self.tokenizer, self.encoder_path, self.log, self.say = cfg, tokenizer, encoder_path, log, say

    def _ids(self, examples):
        return tokenize(self.tokenizer, [(e.context, e.response) for e in examples], self.cfg.max_length,
                        self.cfg.with_context)

    def fit(self, name: str, train: list, val: list, id2label: dict, heads: int, select, folder: Path,
            score_name: str = "val_macro_f1") -> dict:
        """Train one model; `select(logits of val) -> score` picks the epoch to keep. After every epoch the training's
        whole state is saved beside it (`.resume.pt`), so a killed training resumes from the last finished epoch and
        ends with the same weights as one that was never interrupted; a finished member is not trained again."""
        import torch

        cfg = self.cfg
        done_path, resume_path = folder / "fit.json", folder / ".resume.pt"
        if done_path.is_file():  # trained to the end before the training was interrupted
            return json.loads(done_path.read_text())
        torch.manual_seed(cfg.seed)
        model = self._new_model(id2label)
        train_ids, val_ids = self._ids(train), self._ids(val)
        labels = torch.tensor([e.label for e in train])
        rng = np.random.default_rng(cfg.seed)
        per_epoch = -(-len(train) // cfg.batch_size)
        optimizer, schedule = self._optimizer(model, cfg.epochs * per_epoch)
        class_weight = self._class_weight(labels) if heads > 1 else None
        best, history, first = -1.0, [], 1
        if resume_path.is_file():
            best, history, first = self._restore(name, resume_path, model, optimizer, schedule, rng)
        for epoch in range(first, cfg.epochs + 1):
            started = time.perf_counter()
            losses = self._epoch(name, epoch, model, optimizer, schedule, train_ids, labels, rng, heads,
                                 class_weight, per_epoch)
            seconds = time.perf_counter() - started
            score = select(logits_of(model.eval(), self.tokenizer, val_ids, cfg.batch_size * 2))
            record = {"model": name, "epoch": epoch, "train_loss": float(np.mean(losses)), score_name: score,
                      "epoch_seconds": round(seconds, 1), "examples": len(train)}
            history.append(record)
            self.log(record)
            self.say(f"{name} epoch {epoch}/{cfg.epochs}: loss {record['train_loss']:.3f}, {score_name} {score:.4f}, "
                     f"{seconds:.0f} s")
            folder.mkdir(parents=True, exist_ok=True)
            if score > best:  # the best epoch so far is the output, as it stands
                best = score
                if cfg.lora is not None:
                    save_delta(model, folder, cfg.encoder, self.encoder_path, cfg.lora, id2label)
                else:
                    model.save_pretrained(folder)
                    self.tokenizer.save_pretrained(folder)
            _save_resume(resume_path, {"epoch": epoch, "model": model.state_dict(),
                                       "optimizer": optimizer.state_dict(), "schedule": schedule.state_dict(),
                                       "rng": rng.bit_generator.state, "torch_rng": torch.get_rng_state(),
                                       "best": best, "history": history})
        best_epoch = max(history, key=lambda r: r[score_name])["epoch"]
        result = {"best_epoch": best_epoch, score_name: best, "history": history}
        write_json(done_path, result)
        resume_path.unlink()
        return result

    def _new_model(self, id2label: dict):
        from transformers import AutoModelForSequenceClassification

        model = AutoModelForSequenceClassification.from_pretrained(
            self.encoder_path, num_labels=len(id2label), id2label=id2label,
            label2id={v: k for k, v in id2label.items()})
        if self.cfg.lora is not None:  # a delta over the base encoder, small enough to ship
            model = with_delta(model, self.cfg.lora)
        return model

    def _restore(self, name: str, resume_path: Path, model, optimizer, schedule, rng) -> tuple[float, list, int]:
        """The state saved after the last finished epoch, put back: (best score, history, next epoch)."""
        import torch

        state = torch.load(resume_path, weights_only=False)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        schedule.load_state_dict(state["schedule"])
        rng.bit_generator.state = state["rng"]
        torch.set_rng_state(state["torch_rng"])
        self.say(f"{name}: resuming after epoch {state['epoch']} of {self.cfg.epochs}")
        return state["best"], state["history"], state["epoch"] + 1

    def _optimizer(self, model, steps: int):
        """AdamW with weight decay on the weights only (not biases, not LayerNorm), and a linear warm-up schedule."""
        import torch
        from transformers import get_linear_schedule_with_warmup

        cfg = self.cfg
        trained = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
        params = [
            {"params": [p for n, p in trained if not n.endswith("bias") and "LayerNorm" not in n],
             "weight_decay": cfg.weight_decay},
            {"params": [p for n, p in trained if n.endswith("bias") or "LayerNorm" in n], "weight_decay": 0.0},
        ]
        optimizer = torch.optim.AdamW(params, lr=cfg.lr)
        return optimizer, get_linear_schedule_with_warmup(optimizer, int(cfg.warmup_ratio * steps), steps)

    def _class_weight(self, labels):
        """A head sees its own category in about 1 pair of 5 and N/A in the rest; weighting N/A by own/N/A gives both
        sides equal weight, as na_ratio=1 does for a one-vs-all member."""
        import torch

        na = float((labels == E.NA).sum())
        weight = self.cfg.na_weight if self.cfg.na_weight is not None else (labels.numel() - na) / max(na, 1.0)
        return torch.tensor([1.0, 1.0, weight])

    def _epoch(self, name, epoch, model, optimizer, schedule, train_ids, labels, rng, heads, class_weight,
               per_epoch) -> list[float]:
        """One pass over the training set in length-grouped batches; the batches' losses."""
        import torch
        from tqdm import tqdm

        cfg = self.cfg
        model.train()
        losses = []
        lengths = np.array([len(x) for x in train_ids])
        bar = tqdm(total=per_epoch, desc=f"{name} epoch {epoch}/{cfg.epochs}", unit="batch", leave=False,
                   disable=not cfg.progress)
        for step, batch in enumerate(grouped_batches(lengths, cfg.batch_size, rng, cfg.length_grouped), 1):
            enc = collate(self.tokenizer, [train_ids[i] for i in batch])
            logits = model(**enc).logits
            y = labels[batch]
            if heads > 1:  # one 3-way softmax per category head
                loss = torch.nn.functional.cross_entropy(logits.view(-1, 3), y.view(-1), weight=class_weight)
            else:
                loss = torch.nn.functional.cross_entropy(logits, y)
            loss.backward()
            torch.nn.utils.clip_grad_norm_([p for p in model.parameters() if p.requires_grad], 1.0)
            optimizer.step()
            schedule.step()
            optimizer.zero_grad()
            losses.append(loss.item())
            bar.update(1)
            bar.set_postfix(loss=f"{np.mean(losses[-cfg.log_every:]):.3f}")
            if step % cfg.log_every == 0:
                self.log({"model": name, "epoch": epoch, "step": step, "loss": float(np.mean(losses[-cfg.log_every:])),
                          "lr": schedule.get_last_lr()[0]})
        bar.close()
        return losses


def _fit_design(cfg, trainer: Trainer, train_rows: list, val_rows: list, out: Path) -> dict:
    """The models of the configured design, each fitted (or its finished fit read back): {member: fit}."""
    ctx = cfg.with_context
    val_fine = [FINE_LABELS.index(E.fine_label(r)) for r in val_rows]
    fit = {}
    member_labels = dict(enumerate(MEMBER_LABELS))
    if cfg.design == "one_vs_all":
        for c in CATEGORIES:
            val = E.member(val_rows, c, ctx, None, cfg.seed)
            gold = [e.label for e in val]
            fit[ABBREVIATIONS[c]] = trainer.fit(
                ABBREVIATIONS[c], E.member(train_rows, c, ctx, cfg.na_ratio, cfg.seed), val, member_labels, 1,
                lambda logits, gold=gold: macro_f1(gold, logits.argmax(1), [0, 1, 2]), out / ABBREVIATIONS[c])
    elif cfg.design == "multiclass":
        fit["multiclass"] = trainer.fit(
            "multiclass", E.multiclass(train_rows, ctx), E.multiclass(val_rows, ctx), dict(enumerate(FINE_LABELS)),
            1, lambda logits: macro_f1(val_fine, logits.argmax(1), list(range(6))), out)
    else:
        head_labels = {3 * h + j: f"{ABBREVIATIONS[c]}:{lab}" for h, c in enumerate(CATEGORIES)
                       for j, lab in enumerate(MEMBER_LABELS)}

        def select(logits):
            probs = softmax(logits.reshape(len(logits), len(CATEGORIES), 3))
            return macro_f1(val_fine, [FINE_LABELS.index(x) for x in fine_decision(probs)], list(range(6)))

        fit["multihead"] = trainer.fit("multihead", E.multihead(train_rows, ctx), E.multihead(val_rows, ctx),
                                       head_labels, len(CATEGORIES), select, out)
    return fit


def train(cfg) -> Path:
    import torch
    import transformers
    from transformers import AutoTokenizer

    transformers.logging.set_verbosity_error()  # the "newly initialized head" notice is expected here
    if cfg.design not in DESIGNS:
        raise BenchmarkError(f"design={cfg.design!r}: use one of {', '.join(DESIGNS)}")
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    out = default_output_dir(cfg)
    if (out / MANIFEST).exists():
        if not cfg.overwrite:
            raise BenchmarkError(f"{out} already holds a trained detector; pass overwrite=true or another output_dir")
        (out / MANIFEST).unlink()  # until the new manifest is written, the folder is not a usable detector
        for leftover in [*out.rglob("fit.json"), *out.rglob(".resume.pt")]:
            leftover.unlink()
    settings = weight_settings(cfg)
    begun = out / "training.json"  # what the folder's unfinished training is: a resume needs the same settings
    if begun.is_file() and json.loads(begun.read_text()) != settings:
        raise BenchmarkError(f"{out} holds an unfinished training with other settings; pass another output_dir, or "
                             "remove that folder to start over")
    train_rows = load_split(cfg, cfg.train_path, cfg.limit)
    val_rows = load_split(cfg, cfg.val_path, cfg.limit)
    encoder_path = resolve_encoder(cfg.encoder)
    try:
        tokenizer = AutoTokenizer.from_pretrained(encoder_path)
    except OSError as e:
        raise BenchmarkError(f"encoder={cfg.encoder!r}: not a local folder and not loadable from the hub ({e})") from None
    out.mkdir(parents=True, exist_ok=True)
    write_json(begun, settings)
    log_path = out / "training_log.jsonl"
    log_file = open(log_path, "a", encoding="utf-8")  # a resumed training adds to its log

    def log(event: dict) -> None:
        log_file.write(json.dumps(event) + "\n")
        log_file.flush()

    def say(line: str) -> None:
        if cfg.progress:
            print(line, flush=True)

    fit = _fit_design(cfg, Trainer(cfg, tokenizer, encoder_path, log, say), train_rows, val_rows, out)
    log_file.close()
    write_json(out / MANIFEST, _manifest(cfg, out, fit, train_rows, val_rows))
    for leftover in [*out.rglob("fit.json"), begun]:
        leftover.unlink()
    return out


def _manifest(cfg, out: Path, fit: dict, train_rows: list, val_rows: list) -> dict:
    import torch

    return {
        "design": cfg.design,
        "with_context": cfg.with_context,
        "max_length": cfg.max_length,
        "encoder": cfg.encoder,
        "categories": CATEGORIES,
        "weights_sha256": weights_sha256(out),
        "train": OmegaConf.to_container(cfg, resolve=True) | {"train_records": len(train_rows), "val_records": len(val_rows)},
        "fit": fit,
        "train_seconds": round(sum(h["epoch_seconds"] for f in fit.values() for h in f["history"]), 1),
        "threads": torch.get_num_threads(),
        "cpu_count": os.cpu_count(),
        "benchmark_version": __version__,
    }
