"""`python -m benchmark.judge evaluate NAME`: the trained judge on its set's test rows (which chose nothing), beside
the published detectors' figures; evaluation.json goes beside the judge, report.md to results/judge-report/NAME/."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from .. import BenchmarkError
from ..labelled import absent_file, human_labels, judge_inputs, labelled_rows
from ..files import write_json
from ..models.classifier import EVALUATION, Classifier, encoders
from ..paths import SHIPPED, judge_folder
from ..templates import render
from ..run import validity
from .train import figures, load_config


def test_rows(vs, data_root: str | None) -> tuple[list[dict], np.ndarray, dict[str, np.ndarray]]:
    """The set's test rows as the judge reads them, their labels, and each declared subset's mask."""
    where = f"judge validation set {vs.name}"
    if (absent := absent_file(vs, data_root)) is not None:
        raise BenchmarkError(f"{where}: {absent} is not under data_root={data_root} (set BENCHMARK_DATA_ROOT "
                             "or pass data_root=)")
    rows = labelled_rows(vs, data_root)
    inputs = judge_inputs(vs, rows, where)
    gold = np.array(human_labels(vs, rows, where), dtype=np.int64)
    subsets = {name: np.array([render(t, r, f"{where}: subsets.{name}").strip() == "True" for r in rows])
               for name, t in vs.subsets.items()}
    return inputs, gold, subsets


def evaluate(name: str, overrides: list[str] = ()) -> Path:
    cfg = load_config(name, overrides)
    vs = {s.name: s for s in validity.validation_sets()}[cfg.set]
    # the shipped judge unless output_dir names another (one trained here: output_dir=checkpoints/NAME)
    folder = judge_folder(cfg.output_dir or f"{SHIPPED}{cfg.name}")
    judge = Classifier(folder, name=cfg.name)
    inputs, gold, subsets = test_rows(vs, cfg.data_root)
    prob = judge.probabilities(inputs)
    threshold = judge.threshold
    result = {"set": vs.name, "split": "test", "threshold": threshold, **figures(gold, prob, threshold),
              "subset_recall": {k: round(float((prob[m & (gold == 1)] >= threshold).mean()), 4)
                                for k, m in subsets.items() if (m & (gold == 1)).any()},
              "val": judge.manifest["val"]}
    write_json(folder / EVALUATION, result)
    out = Path("results/judge-report") / cfg.name
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(json.dumps(result, indent=2) + "\n")
    (out / "report.md").write_text(markdown(cfg, judge.manifest, result))
    return out / "report.md"


def _p(x) -> str:
    return "—" if x is None else f"{100 * x:.1f}"


def markdown(cfg, manifest: dict, result: dict) -> str:
    members = ", ".join(f"{m['dir']} (epoch {m['best_epoch']})" for m in manifest["members"])
    lines = [f"# Judge {cfg.name} on {result['set']} test", "",
             f"Encoder {' + '.join(encoders(manifest))}, members {members}; threshold {result['threshold']:.4f}, chosen on "
             f"{manifest['val_records']} validation rows carved from the training file (val F1 "
             f"{_p(manifest['val']['f1'])}, AUPRC {manifest['val']['auprc']}). Test: {result['n']} rows, "
             f"{result['unsafe']} unsafe.", "",
             "| detector | precision | recall | F1 | AUPRC | note |", "|---|---|---|---|---|---|",
             f"| **{cfg.name}** (this suite) | {_p(result['precision'])} | {_p(result['recall'])} | "
             f"**{_p(result['f1'])}** | {result['auprc']} | threshold {result['threshold']:.4f} |"]
    for ref in cfg.references:
        cell = lambda v: "—" if v is None else f"{v:.1f}"  # noqa: E731
        lines.append(f"| {ref.name} | {cell(ref.precision)} | {cell(ref.recall)} | {ref.f1:.1f} | — | {ref.note} |")
    if result["subset_recall"]:
        lines += ["", "Recall on subsets: " + ", ".join(f"{k} {_p(v)}" for k, v in result["subset_recall"].items())]
    return "\n".join(lines) + "\n"
