"""`python -m benchmark.judge evaluate NAME`: the trained judge on its set's test rows (which chose nothing), beside
the published detectors' figures; evaluation.json goes beside the judge, report.md to results/judge-report/NAME/."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from .. import BenchmarkError
from ..composition import compose
from ..files import write_json
from ..judging import validity
from ..judging.labelled import absent_file, human_labels, judge_inputs, labelled_rows
from ..models.classifier import EVALUATION, Classifier, encoders
from ..models.registry import backend_class
from ..paths import CONF_DIR, SHIPPED, judge_folder
from ..templates import render
from .train import figures, load_config


def test_rows(vs, data_root: str | None) -> tuple[list[dict], np.ndarray, dict[str, np.ndarray], list[dict]]:
    """The set's test rows as the judge reads them, their labels, each declared subset's mask, and the rows."""
    where = f"judge validation set {vs.name}"
    if (absent := absent_file(vs, data_root)) is not None:
        raise BenchmarkError(f"{where}: {absent} is not under data_root={data_root} (set BENCHMARK_DATA_ROOT "
                             "or pass data_root=)")
    rows = labelled_rows(vs, data_root)
    inputs = judge_inputs(vs, rows, where)
    gold = np.array(human_labels(vs, rows, where), dtype=np.int64)
    subsets = {name: np.array([render(t, r, f"{where}: subsets.{name}").strip() == "True" for r in rows])
               for name, t in vs.subsets.items()}
    return inputs, gold, subsets, rows


def judge_backend(name: str, folder: Path):
    """The judge as tasks use it, and its trained classifier: its model config (conf/model/NAME.yaml, its phrases
    and settings) with the trained folder given; the classifier alone (None, it) where no model config has the
    judge's name."""
    if (CONF_DIR / "model" / f"{name}.yaml").is_file():
        cfg = compose([f"model={name}", f"model.pretrained={folder}", "model.sha256=null"])
        judge = backend_class(cfg.model)(cfg.model)
        return judge, judge.judge
    return None, Classifier(folder, name=name)


def judged(judge, classifier: Classifier, inputs: list[dict]) -> tuple[np.ndarray, np.ndarray, list | None]:
    """Each row's flag, score and label (None where the judge gives no label)."""
    if judge is None:
        prob = classifier.probabilities(inputs)
        return prob >= classifier.threshold, prob, None
    verdicts = judge.classify(inputs)
    labels = [v["label"] for v in verdicts] if verdicts and "label" in verdicts[0] else None
    return (np.array([v["unsafe"] for v in verdicts]), np.array([v["score"] for v in verdicts]), labels)


def set_figures(vs, data_root, judge, classifier) -> dict:
    inputs, gold, subsets, rows = test_rows(vs, data_root)
    flags, scores, labels = judged(judge, classifier, inputs)
    out = {"language": vs.language, **flag_figures(gold, flags, scores),
           "subset_recall": {k: round(float(flags[m & (gold == 1)].mean()), 4)
                             for k, m in subsets.items() if (m & (gold == 1)).any()}}
    if labels is not None and vs.classes is not None:
        truth = [render(vs.classes, r, f"judge validation set {vs.name}: classes").strip() for r in rows]
        out["class_accuracy"] = round(float(np.mean([a == b for a, b in zip(labels, truth)])), 4)
    return out


def flag_figures(gold: np.ndarray, flags: np.ndarray, scores: np.ndarray) -> dict:
    """figures() of the flags as given (a judge whose flag is more than its score at a threshold), with accuracy."""
    out = figures(gold, flags.astype(float), 0.5)
    if 0 < gold.sum() < len(gold):
        from sklearn.metrics import average_precision_score

        out["auprc"] = round(float(average_precision_score(gold, scores)), 4)
    out["accuracy"] = round(float((flags.astype(int) == gold).mean()), 4)
    return out


def evaluate(name: str, overrides: list[str] = ()) -> Path:
    """The judge on its set's test rows, and on every other labelled set of its kind (harm or refusal) that is here;
    none of them chose anything."""
    cfg = load_config(name, overrides)
    sets = {s.name: s for s in validity.validation_sets()}
    vs = sets[cfg.set]
    # the shipped judge unless output_dir names another (one trained here: output_dir=checkpoints/NAME)
    folder = judge_folder(cfg.output_dir or f"{SHIPPED}{cfg.name}")
    judge, classifier = judge_backend(cfg.name, folder)
    measures = type(judge).measures if judge is not None else "harm"
    main = set_figures(vs, cfg.data_root, judge, classifier)
    others = {o.name: set_figures(o, cfg.data_root, judge, classifier) for o in sets.values()
              if o.name != vs.name and o.measures == measures and absent_file(o, cfg.data_root) is None
              and set(o.input) >= {"response"}}
    result = {"set": vs.name, "split": "test", "threshold": classifier.threshold, **main, "val": classifier.manifest["val"],
              **({"other_sets": others} if others else {})}
    write_json(folder / EVALUATION, result)
    out = Path("results/judge-report") / cfg.name
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(json.dumps(result, indent=2) + "\n")
    (out / "report.md").write_text(markdown(cfg, classifier.manifest, result))
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
             "| detector | accuracy | precision | recall | F1 | AUPRC | note |", "|---|---|---|---|---|---|---|",
             f"| **{cfg.name}** (this suite) | {_p(result['accuracy'])} | {_p(result['precision'])} | "
             f"{_p(result['recall'])} | **{_p(result['f1'])}** | {result['auprc']} | threshold {result['threshold']:.4f} |"]
    for ref in cfg.references:
        cell = lambda v: "—" if v is None else f"{v:.1f}"  # noqa: E731
        lines.append(f"| {ref.name} | — | {cell(ref.precision)} | {cell(ref.recall)} | {ref.f1:.1f} | — | {ref.note} |")
    if result["subset_recall"]:
        lines += ["", "Recall on subsets: " + ", ".join(f"{k} {_p(v)}" for k, v in result["subset_recall"].items())]
    if "class_accuracy" in result:
        lines += ["", f"Accuracy over its classes ({', '.join(manifest.get('classes', []))}): "
                      f"{_p(result['class_accuracy'])}"]
    if result.get("other_sets"):
        lines += ["", "On the other labelled sets of its kind (none chose anything):", "",
                  "| set | language | rows | positive | accuracy | precision | recall | F1 | AUPRC |",
                  "|---|---|---|---|---|---|---|---|---|"]
        lines += [f"| {k} | {v['language']} | {v['n']} | {v['unsafe']} | {_p(v['accuracy'])} | {_p(v['precision'])} | "
                  f"{_p(v['recall'])} | {_p(v['f1'])} | {v['auprc']} |" for k, v in result["other_sets"].items()]
    return "\n".join(lines) + "\n"
