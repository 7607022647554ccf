"""Compare trained detectors with the DiaSafety paper: Table 4 (fine-grained) and Table 5 (coarse), val and test.

Writes <report_dir>/report.json (every figure) and report.md (the tables, the paper's number beside each of ours).
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from .. import BenchmarkError
from .. import metrics as M
from ..files import write_json
from ..models.detector import ABBREVIATIONS, EVALUATION, FINE_LABELS, Detector
from ..models.detoxify import DetoxifyBackend
from ..models.profanity import ProfanityCheck
from ..paths import judge_folder
from . import examples as E
from .detector_train import load_split

# arXiv v1, test set, trained on six categories including STC (not released), so not exactly comparable
PAPER_TABLE4 = {  # F1 with context, without context
    "Safe": (86.8, 78.6), "Offending User": (78.2, 62.8), "Risk Ignorance": (81.8, 56.4),
    "Unauthorized Expertise": (91.7, 90.8), "Toxicity Agreement": (91.9, 74.1), "Biased Opinion": (65.6, 32.4),
    "Sensitive Topic Continuation": (91.5, 61.5),
}
PAPER_TABLE4_MACRO = {True: (82.2, 85.9, 83.9), False: (68.5, 63.8, 65.2)}  # macro P, R, F1
PAPER_TABLE5 = {  # coarse macro F1, unsafe-class F1
    "random": (50.1, 48.1), "detoxify:response": (43.3, 15.8), "detoxify:context+response": (62.3, 56.9),
    "perspective:response": (45.2, 19.7), "perspective:context+response": (62.8, 59.1),
    "detoxify fine-tuned on DiaSafety": (77.4, 77.0), "classifier": (86.1, 85.5),
}
COARSE = ["safe", "unsafe"]


def _ci(stat, gold, pred, k, cfg) -> dict:
    return M.point_and_ci(stat, gold, pred, k, cfg.bootstrap, cfg.seed)


def fine_scores(gold: list[str], pred: list[str], cfg) -> dict:
    g, p = M.encode(gold, FINE_LABELS), M.encode(pred, FINE_LABELS)
    pc = M.per_class(g[None], p[None], len(FINE_LABELS))
    per_class = {c: {m: float(pc[m][0, i]) for m in ("precision", "recall", "f1")} | {"support": int(pc["support"][0, i])}
                 for i, c in enumerate(FINE_LABELS)}
    present = [c for c in FINE_LABELS if per_class[c]["support"] > 0]
    return {
        "macro_f1": _ci(M.macro_f1, g, p, len(FINE_LABELS), cfg),
        "macro_precision": float(np.mean([per_class[c]["precision"] for c in present])),
        "macro_recall": float(np.mean([per_class[c]["recall"] for c in present])),
        "accuracy": float((g == p).mean()),
        "per_class": per_class,
    }


def coarse_scores(gold_unsafe: np.ndarray, pred_unsafe: np.ndarray, cfg) -> dict:
    g, p = gold_unsafe.astype(np.int64), pred_unsafe.astype(np.int64)
    return {
        "macro_f1": _ci(M.macro_f1, g, p, 2, cfg),
        "unsafe_f1": _ci(M.class_f1(1), g, p, 2, cfg),
        "accuracy": float((g == p).mean()),
    }


def random_baseline(gold_unsafe: np.ndarray, cfg, draws: int = 1000) -> dict:
    """A fair coin per pair: the mean over seeded draws (the paper's `random` row)."""
    rng = np.random.default_rng(cfg.seed)
    g = np.broadcast_to(gold_unsafe.astype(np.int64), (draws, len(gold_unsafe)))
    p = rng.integers(0, 2, size=g.shape)
    return {"macro_f1": float(M.macro_f1(g, p, 2).mean()), "unsafe_f1": float(M.class_f1(1)(g, p, 2).mean())}


def utterance_rows(rows, cfg) -> list[tuple[str, str, np.ndarray]]:
    """(name, input, unsafe flags) for the utterance-level classifiers available here."""
    inputs = [{"context": r["context"], "response": r["response"]} for r in rows]
    out = []
    for mode in ("response", "context+response"):
        classifiers = [("profanity-check", ProfanityCheck(SimpleNamespace(name="profanity-check", input=mode,
                                                                           threshold=0.5)))]
        if cfg.detoxify_checkpoint:
            classifiers.append(("detoxify", DetoxifyBackend(SimpleNamespace(
                name="detoxify", pretrained=cfg.detoxify_checkpoint, device="cpu", input=mode, threshold=0.5,
                batch_size=cfg.batch_size, args={"huggingface_config_path": cfg.detoxify_config_path}))))
        for name, clf in classifiers:
            out.append((name, mode, np.array([o["unsafe"] for o in clf.classify(inputs)])))
    return out


def seconds_per_epoch(manifest: dict) -> float:
    """Training time of one epoch of the whole design (for one_vs_all: of all five members)."""
    fits = list(manifest["fit"].values())
    return sum(h["epoch_seconds"] for f in fits for h in f["history"]) / len(fits[0]["history"])


def record_evaluation(folder: Path, entry: dict) -> None:
    """Keep the measured scores beside the detector (evaluation.json; its manifest, whose weights a config's hash
    names, is never rewritten): a score card that uses it as a judge cites them."""
    write_json(folder / EVALUATION, {
        split: {"n": sum(c["support"] for c in entry[split]["fine"]["per_class"].values()),
                "fine_macro_f1": round(entry[split]["fine"]["macro_f1"]["value"], 4),
                "coarse_macro_f1": round(entry[split]["coarse"]["macro_f1"]["value"], 4),
                "unsafe_f1": round(entry[split]["coarse"]["unsafe_f1"]["value"], 4)}
        for split in ("val", "test")})


def _hardware(threads: int) -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores, torch threads {threads}, no GPU"


def evaluate(cfg) -> Path:
    import torch

    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    splits = {name: load_split(cfg, path, cfg.limit) for name, path in (("val", cfg.val_path), ("test", cfg.test_path))}
    report = {
        "command": "python -m benchmark.judge " + " ".join(sys.argv[1:]),
        "hardware": _hardware(torch.get_num_threads()),
        "records": {s: len(r) for s, r in splits.items()},
        "detectors": [],
        "missing": [],
    }
    for folder in cfg.detectors:
        if not (judge_folder(folder) / "detector.json").is_file():
            report["missing"].append(folder)
            continue
        det = Detector(folder, batch_size=cfg.batch_size)
        entry = {"path": folder, "design": det.design, "with_context": det.with_context,
                 "encoder": det.manifest["encoder"], "train_seconds": det.manifest["train_seconds"],
                 "seconds_per_epoch": seconds_per_epoch(det.manifest),
                 "best_epochs": {k: v["best_epoch"] for k, v in det.manifest["fit"].items()}}
        for split, rows in splits.items():
            pairs = [(r["context"], r["response"]) for r in rows]
            started = time.perf_counter()
            probs = det.category_probs(pairs)
            seconds = time.perf_counter() - started
            fine, unsafe = det.decide(probs)
            entry[split] = {
                "fine": fine_scores([E.fine_label(r) for r in rows], fine, cfg),
                "coarse": coarse_scores(np.array([r["label"] == "Unsafe" for r in rows]), unsafe, cfg),
                "pairs_per_second": round(len(rows) / seconds, 1),
            }
        report["detectors"].append(entry)
        if cfg.limit is None:  # a subset's scores are not the detector's measured quality
            record_evaluation(det.path, entry)
    if not report["detectors"]:
        raise BenchmarkError(f"none of the detectors {list(cfg.detectors)} exists; train them first "
                             "(python -m benchmark.judge train diasafety-detector …)")
    test = splits["test"]
    gold_unsafe = np.array([r["label"] == "Unsafe" for r in test])
    report["baselines"] = {"random": random_baseline(gold_unsafe, cfg)}
    for name, mode, flags in utterance_rows(test, cfg):
        report["baselines"][f"{name}:{mode}"] = {k: v["value"] if isinstance(v, dict) else v
                                                 for k, v in coarse_scores(gold_unsafe, flags, cfg).items()}
    best = max(report["detectors"], key=lambda d: d["val"]["fine"]["macro_f1"]["value"])
    report["best_on_val"] = best["path"]
    out = Path(cfg.report_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(json.dumps(report, indent=2) + "\n")
    (out / "report.md").write_text(markdown(report))
    return out / "report.md"


def _p(x: float) -> str:
    return f"{100 * x:.1f}"


def _ci_text(m: dict) -> str:
    return f"{_p(m['value'])} [{_p(m['ci_low'])}–{_p(m['ci_high'])}]"


def markdown(report: dict) -> str:
    dets = report["detectors"]
    lines = [
        "# DiaSafety detector: our measurements beside the paper",
        "",
        f"Command: `{report['command']}`  ",
        f"Hardware: {report['hardware']}  ",
        f"Records: val {report['records']['val']}, test {report['records']['test']}. Brackets are 95% bootstrap "
        "intervals.",
        "",
        "The paper (Sun et al., 2022, arXiv v1) trained and tested on six context-sensitive categories. The released "
        "data has five: **Sensitive Topic Continuation (STC) is not in it**, so its row has no measurement here and "
        "our macro averages run over Safe + five categories, the paper's over Safe + six. The paper fine-tuned "
        "roberta-base with a grid search; the encoder of each of our detectors is named below.",
        "",
        "## Designs compared (model selection on val)",
        "",
        "| detector | design | context | encoder | val fine macro F1 | val coarse macro F1 | test fine macro F1 "
        "| test coarse macro F1 | test unsafe F1 | pairs/s (test) | × one-vs-all speed | s/epoch (train) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    ova_speed = next((d["test"]["pairs_per_second"] for d in dets if d["design"] == "one_vs_all"), None)
    for d in dets:
        ratio = f"{d['test']['pairs_per_second'] / ova_speed:.2f}" if ova_speed else "—"
        lines.append(
            f"| `{d['path']}` | {d['design']} | {'yes' if d['with_context'] else 'no'} | {d['encoder']} "
            f"| {_ci_text(d['val']['fine']['macro_f1'])} | {_ci_text(d['val']['coarse']['macro_f1'])} "
            f"| {_ci_text(d['test']['fine']['macro_f1'])} | {_ci_text(d['test']['coarse']['macro_f1'])} "
            f"| {_ci_text(d['test']['coarse']['unsafe_f1'])} | {d['test']['pairs_per_second']} | {ratio} | {d['seconds_per_epoch']:.0f} |")
    lines += ["", f"Best on val (fine-grained macro F1): `{report['best_on_val']}`.", ""]
    if report["missing"]:
        lines += [f"Not trained, so not in the tables: {', '.join(f'`{m}`' for m in report['missing'])}.", ""]
    return "\n".join(lines + _table4(dets) + _table5(report["baselines"], dets))


def _table4(dets: list) -> list[str]:
    """The paper's Table 4 (fine-grained, test) beside every detector given."""
    lines = ["## Table 4: fine-grained, test set (precision / recall / **F1**, %)", "",
             "The paper's Table 4 is its one-vs-all design; every detector given is shown beside it.", "",
             "| class | " + " | ".join(f"`{Path(d['path']).name}`" for d in dets)
             + " | paper F1 with context | paper F1 without context |",
             "|---|" + "---|" * (len(dets) + 2)]
    for c in [*FINE_LABELS, "Sensitive Topic Continuation"]:
        name = c if c == "Safe" else f"{c} ({ABBREVIATIONS.get(c, 'STC')})"
        cells = []
        for d in dets:
            m = d["test"]["fine"]["per_class"].get(c)
            cells.append(f"{_p(m['precision'])} / {_p(m['recall'])} / **{_p(m['f1'])}**" if m
                         else "not in the released data")
        lines.append(f"| {name} | {' | '.join(cells)} | {PAPER_TABLE4[c][0]} | {PAPER_TABLE4[c][1]} |")
    macro = [f"{_p(d['test']['fine']['macro_precision'])} / {_p(d['test']['fine']['macro_recall'])} / "
             f"**{_p(d['test']['fine']['macro_f1']['value'])}**" for d in dets]
    paper = {k: " / ".join(str(x) for x in v) for k, v in PAPER_TABLE4_MACRO.items()}
    return lines + [f"| overall (macro P / R / F1) | {' | '.join(macro)} | {paper[True]} | {paper[False]} |", ""]


def _table5(base: dict, dets: list) -> list[str]:
    """The paper's Table 5 (coarse safe/unsafe, test): the baselines measured here and every detector given."""

    def ours(key):
        b = base.get(key)
        return f"{_p(b['macro_f1'])} ({_p(b['unsafe_f1'])})" if b else None

    def paper(key):
        return f"{PAPER_TABLE5[key][0]} ({PAPER_TABLE5[key][1]})"

    lines = ["## Table 5: coarse safe/unsafe, test set", "",
             "| method | input | ours: macro F1 (unsafe F1) | paper: macro F1 (unsafe F1) |", "|---|---|---|---|",
             f"| random | — | {ours('random')} | {paper('random')} |"]
    for mode in ("response", "context+response"):
        lines.append(f"| Detoxify (utterance level) | {mode} | "
                     f"{ours(f'detoxify:{mode}') or 'not run: no local checkpoint given'} | {paper(f'detoxify:{mode}')} |")
    for mode in ("response", "context+response"):
        lines.append(f"| Perspective API (utterance level) | {mode} | not run: a network service "
                     f"| {paper(f'perspective:{mode}')} |")
    for mode in ("response", "context+response"):
        lines.append(f"| profanity-check (utterance level, installed with the suite) | {mode} "
                     f"| {ours(f'profanity-check:{mode}')} | — |")
    lines.append(f"| Detoxify fine-tuned on DiaSafety | context+response | not run "
                 f"| {paper('detoxify fine-tuned on DiaSafety')} |")
    for d in dets:
        c = d["test"]["coarse"]
        is_papers = d["design"] == "one_vs_all" and d["with_context"]
        lines.append(f"| {'the paper’s design: ' if is_papers else ''}{d['design']} (`{d['path']}`) "
                     f"| {'context+response' if d['with_context'] else 'response'} "
                     f"| {_ci_text(c['macro_f1'])} ({_p(c['unsafe_f1']['value'])}) "
                     f"| {paper('classifier') + ' (RoBERTa one-vs-all)' if is_papers else '—'} |")
    if not any(d["design"] == "one_vs_all" and d["with_context"] for d in dets):
        lines.append(f"| the paper's classifier (RoBERTa one-vs-all) | context+response | not trained here "
                     f"| {paper('classifier')} |")
    return lines + ["", "Coarse decision: unsafe when any category's classifier says unsafe (veto voting); for the "
                    "multi-class design, when its label is not Safe. The random row is the mean over 1,000 seeded "
                    "fair-coin draws.", ""]
