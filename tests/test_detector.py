"""The DiaSafety detector: decision rules, training examples, training and evaluation end to end, the backend."""

from __future__ import annotations

import json
from pathlib import Path
import subprocess
import sys

import numpy as np
import pytest
from conftest import REPO

from benchmark import BenchmarkError
from benchmark.judge import examples as E
from benchmark.models.detector import CATEGORIES, MANIFEST, fine_decision, veto

SAFE, UNSAFE, NA = [0.8, 0.1, 0.1], [0.1, 0.8, 0.1], [0.1, 0.1, 0.8]


def probs(*rows):
    return np.array(rows, dtype=float)


def test_all_safe_or_na_is_safe():
    p = probs([SAFE, NA, NA, NA, NA], [NA, NA, NA, NA, NA])
    assert fine_decision(p) == ["Safe", "Safe"]
    assert veto(p).tolist() == [False, False]


def test_most_confident_unsafe_category_wins():
    weak, strong = [0.2, 0.6, 0.2], [0.05, 0.9, 0.05]
    p = probs([NA, weak, NA, strong, SAFE])
    assert fine_decision(p) == ["Toxicity Agreement"]
    assert veto(p).tolist() == [True]


def test_unsafe_probability_counts_only_where_unsafe_is_the_argmax():
    # RI's unsafe probability (0.45) is higher than OU's (0.4), but RI's classifier says safe
    p = probs([[0.3, 0.4, 0.3], [0.55, 0.45, 0.0], NA, NA, NA])
    assert fine_decision(p) == ["Offending User"]


def test_veto_one_voice_is_enough():
    p = probs([SAFE, SAFE, SAFE, SAFE, UNSAFE])
    assert veto(p).tolist() == [True]
    assert fine_decision(p) == ["Biased Opinion"]


ROWS = [
    {"context": "c1", "response": "r1", "category": "Offending User", "label": "Unsafe"},
    {"context": "c2", "response": "r2", "category": "Offending User", "label": "Safe"},
    {"context": "c3", "response": "r3", "category": "Risk Ignorance", "label": "Unsafe"},
    {"context": "c4", "response": "r4", "category": "Biased Opinion", "label": "Safe"},
    {"context": "c5", "response": "r5", "category": "Toxicity Agreement", "label": "Safe"},
]


def test_member_examples_draw_na_from_other_categories():
    ex = E.member(ROWS, "Offending User", True, na_ratio=1.0, seed=0)
    assert [e.label for e in ex[:2]] == [1, 0]
    assert [e.label for e in ex[2:]] == [E.NA, E.NA]  # two own pairs, two N/A
    assert {e.context for e in ex[2:]} <= {"c3", "c4", "c5"}
    everything = E.member(ROWS, "Offending User", False, na_ratio=None, seed=0)
    assert len(everything) == 5 and all(e.context is None for e in everything)


def test_multihead_labels_one_per_category():
    ex = E.multihead(ROWS[:1], True)[0]
    assert ex.label == [1, E.NA, E.NA, E.NA, E.NA]


def test_multiclass_labels():
    assert [e.label for e in E.multiclass(ROWS, True)] == [1, 0, 2, 0, 0]


def test_bad_rows_name_the_record():
    with pytest.raises(BenchmarkError, match="record 1: category 'Politics'"):
        E.check_rows([ROWS[0], {**ROWS[1], "category": "Politics"}], "train.json")
    with pytest.raises(BenchmarkError, match="record 0 has no string field 'response'"):
        E.check_rows([{"context": "c", "category": "Offending User", "label": "Safe"}], "train.json")


def detector_cli(*args, cwd):
    return subprocess.run([sys.executable, "-m", "benchmark.judge", args[0], "diasafety-detector", *args[1:]], cwd=cwd, capture_output=True,
                          text=True, timeout=600)


# the default design in every run; the other two (20 s each) with -m slow
@pytest.mark.parametrize("design", [pytest.param("one_vs_all", marks=pytest.mark.slow),
                                    pytest.param("multiclass", marks=pytest.mark.slow), "multihead"])
def test_train_then_evaluate(design, tiny_encoder, synthetic_root, tmp_path):
    out = tmp_path / "det"
    done = detector_cli("train", f"design={design}", f"encoder={tiny_encoder}", f"data_root={synthetic_root}",
                        f"output_dir={out}", "epochs=2", "batch_size=8", "max_length=32", "progress=false",
                        cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    manifest_bytes = (out / MANIFEST).read_bytes()
    manifest = json.loads(manifest_bytes)
    assert manifest["design"] == design and manifest["with_context"] is True
    fits = manifest["fit"]
    assert len(fits) == (5 if design == "one_vs_all" else 1)
    assert all(len(f["history"]) == 2 and f["best_epoch"] in (1, 2) for f in fits.values())
    log = [json.loads(line) for line in (out / "training_log.jsonl").read_text().splitlines()]
    assert sum("val_macro_f1" in e for e in log) == 2 * len(fits)

    from benchmark.models.encoders import DELTA_WEIGHTS, load_classifier

    folder = out / "OU" if design == "one_vs_all" else out
    assert (folder / DELTA_WEIGHTS).is_file() and not (folder / "model.safetensors").exists()  # a delta, not a copy
    model = load_classifier(folder)  # the delta applied to its base encoder
    expected = {"one_vs_all": 3, "multiclass": 6, "multihead": 15}[design]
    assert model.config.num_labels == expected

    if design == "multihead":  # the refusal is the same for every design: one check, one process fewer for two
        again = detector_cli("train", f"design={design}", f"encoder={tiny_encoder}", f"data_root={synthetic_root}",
                             f"output_dir={out}", cwd=tmp_path)
        assert again.returncode == 2 and "already holds a trained detector" in again.stderr

    report_dir = tmp_path / "report"
    done = detector_cli("evaluate", f"detectors=[{out},{tmp_path / 'missing'}]", f"data_root={synthetic_root}",
                        f"report_dir={report_dir}", "bootstrap=50", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads((report_dir / "report.json").read_text())
    assert report["missing"] == [str(tmp_path / "missing")]
    (entry,) = report["detectors"]
    for split in ("val", "test"):
        fine, coarse = entry[split]["fine"], entry[split]["coarse"]
        assert 0 <= fine["macro_f1"]["ci_low"] <= fine["macro_f1"]["value"] <= fine["macro_f1"]["ci_high"] <= 1
        assert sum(c["support"] for c in fine["per_class"].values()) == 20
        assert 0 <= coarse["unsafe_f1"]["value"] <= 1
    assert entry["test"]["pairs_per_second"] > 0
    assert set(report["baselines"]) == {"random", "profanity-check:response", "profanity-check:context+response"}
    text = (report_dir / "report.md").read_text()
    assert "Sensitive Topic Continuation (STC)" in text and "not in the released data" in text
    assert "86.1 (85.5)" in text  # the paper's classifier row of Table 5
    # the evaluation is recorded beside the detector, for score cards that cite it as a judge; the manifest is not
    # rewritten
    from benchmark.models.detector import EVALUATION

    assert json.loads((out / EVALUATION).read_text())["test"]["coarse_macro_f1"] == pytest.approx(
        entry["test"]["coarse"]["macro_f1"]["value"], abs=1e-4)
    assert (out / MANIFEST).read_bytes() == manifest_bytes


def test_evaluate_without_any_detector_says_so(synthetic_root, tmp_path):
    done = detector_cli("evaluate", f"detectors=[{tmp_path / 'none'}]", f"data_root={synthetic_root}", cwd=tmp_path)
    assert done.returncode == 2 and "train them first" in done.stderr


def test_unknown_design_and_command(tmp_path, synthetic_root):
    done = detector_cli("train", "design=bogus", f"data_root={synthetic_root}", cwd=tmp_path)
    assert done.returncode == 2 and "design='bogus'" in done.stderr
    done = detector_cli("fit", cwd=tmp_path)
    assert done.returncode == 2 and "usage" in done.stderr


@pytest.fixture(scope="module")
def trained_detector(tmp_path_factory, tiny_encoder):
    import os

    from conftest import synthetic_diasafety

    root = tmp_path_factory.mktemp("det-data")
    (root / "diasafety").mkdir()
    for split, n, offset in (("train", 40, 0), ("val", 10, 100), ("test", 20, 200)):
        (root / "diasafety" / f"{split}.json").write_text(json.dumps(synthetic_diasafety(n, offset)))
    out = root / "detector"
    done = subprocess.run([sys.executable, "-m", "benchmark.judge", "train", "diasafety-detector", "design=multihead",
                           f"encoder={tiny_encoder}", f"data_root={root}", f"output_dir={out}", "epochs=1",
                           "max_length=32", "progress=false"], cwd=root, capture_output=True, text=True,
                          timeout=600, env={**os.environ})
    assert done.returncode == 0, done.stderr[-3000:]
    return root, out


def test_detector_as_a_model_writes_a_score_card(trained_detector, compose):
    from benchmark.run.runner import run

    root, out = trained_detector
    cfg = compose("model=diasafety-detector", f"model.pretrained={out}", "model.sha256=null", "task=diasafety",
                  f"data_root={root}")
    card, path = run(cfg)
    assert card["dataset"]["n"] == 20 and card["model"]["backend"] == "diasafety-detector"
    assert set(card["breakdown"]["predictions"]) <= {"Safe", *CATEGORIES}
    sample = json.loads(path.with_name("samples.jsonl").read_text().splitlines()[0])
    assert set(sample["output"]["p_unsafe"]) == {"OU", "RI", "UE", "TA", "BO"}


def test_a_detector_you_trained_judges_a_run_under_its_own_hash(trained_detector, compose, data_root):
    from benchmark.models.encoders import artifact_sha256
    from benchmark.run.card_record import ScoreCard
    from benchmark.run.runner import run
    from benchmark.submissions.panel import panel_status

    _, out = trained_detector
    card, _ = run(compose("model=blenderbot-small", "task=diasafety_chatbot", "limit=3",
                          f"judge.models.context.pretrained={out}", "judge.models.context.sha256=null"))
    context = next(j for j in card["judges"] if j["step"] == "context")
    assert context["config"]["pretrained"] == str(out)
    shipped = compose("task=diasafety_chatbot").judge.models.context.sha256
    assert context["config"]["sha256"] == artifact_sha256(out, MANIFEST) != shipped
    assert panel_status(ScoreCard.model_validate(card)).startswith("judge context: ")  # valid, but shown apart from the standard cards


def test_missing_checkpoint_is_one_clear_error(compose, tmp_path, synthetic_root, monkeypatch):
    from benchmark.run.runner import run

    cfg = compose("model=diasafety-detector", f"model.pretrained={tmp_path / 'nothing'}", "task=diasafety",
                  f"data_root={synthetic_root}")
    with pytest.raises(BenchmarkError, match="no trained DiaSafety detector at .*train one there with "
                                             "`python -m benchmark.judge train diasafety-detector output_dir="):
        run(cfg)


def test_the_config_loads_the_shipped_detector_and_training_writes_beside_it():
    import subprocess

    text = (REPO / "conf" / "model" / "diasafety-detector.yaml").read_text()
    assert "pretrained: judges/diasafety-detector" in text
    tracked = subprocess.run(["git", "ls-files", "judges/diasafety-detector"], cwd=REPO, capture_output=True,
                             text=True).stdout.split()
    assert {"judges/diasafety-detector/detector.json", "judges/diasafety-detector/delta.safetensors"} <= set(tracked)
    assert "checkpoints/" in (REPO / ".gitignore").read_text().split()  # a detector trained here stays local


@pytest.fixture(scope="module")
def detoxify_checkpoint(tmp_path_factory, tiny_encoder):
    """A checkpoint in Detoxify's format (config + state dict) around the tiny encoder: the package's real loader."""
    pytest.importorskip("detoxify", reason="the detoxify package is not installed (pip install -e '.[detoxify]')")
    import torch
    from transformers import BertForSequenceClassification

    torch.manual_seed(0)
    model = BertForSequenceClassification.from_pretrained(tiny_encoder, num_labels=2)
    path = tmp_path_factory.mktemp("detoxify") / "tiny.ckpt"
    torch.save({"config": {"arch": {"args": {"model_type": str(tiny_encoder), "model_name": "BertForSequenceClassification",
                                             "tokenizer_name": "AutoTokenizer", "num_classes": 2}},
                           "dataset": {"args": {"classes": ["toxic", "insult"]}}},
                "state_dict": model.state_dict()}, path)
    return path


def test_detoxify_backend_and_report_rows(detoxify_checkpoint, tiny_encoder, compose, synthetic_root, tmp_path):
    from benchmark.run.runner import run

    card, path = run(compose("model=detoxify", f"model.pretrained={detoxify_checkpoint}",
                             f"+model.args.huggingface_config_path={tiny_encoder}", "task=diasafety",
                             f"data_root={synthetic_root}"))
    sample = json.loads(path.with_name("samples.jsonl").read_text().splitlines()[0])
    assert set(sample["output"]["attributes"]) == {"toxicity", "insult"}
    assert sample["output"]["unsafe"] == (max(sample["output"]["attributes"].values()) > 0.5)
    assert card["dataset"]["n"] == 20
    assert [f["name"] for f in card["model"]["weights"]["files"]] == ["tiny.ckpt"]  # a local checkpoint: named

    with pytest.raises(BenchmarkError, match="must be a local Detoxify checkpoint"):
        run(compose("model=detoxify", "task=diasafety", f"data_root={synthetic_root}"))

    # the evaluation report's Detoxify rows, beside the paper's
    from types import SimpleNamespace

    from benchmark.judge.detector_evaluate import utterance_rows

    rows = json.loads((synthetic_root / "diasafety" / "test.json").read_text())
    cfg = SimpleNamespace(detoxify_checkpoint=str(detoxify_checkpoint), detoxify_config_path=str(tiny_encoder),
                          batch_size=8)
    names = [(name, mode) for name, mode, flags in utterance_rows(rows, cfg) if len(flags) == 20]
    assert ("detoxify", "response") in names and ("detoxify", "context+response") in names


def _train_cfg(*overrides):
    from hydra import compose, initialize_config_dir

    from benchmark.paths import CONF_DIR
    from benchmark.judge.config import register

    register()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return compose("detector_train", overrides=list(overrides))


def test_a_killed_training_resumes_to_the_same_weights(tiny_encoder, synthetic_root, tmp_path, monkeypatch):
    import benchmark.judge.detector_train as T

    common = (f"encoder={tiny_encoder}", f"data_root={synthetic_root}", "epochs=3", "batch_size=8", "max_length=32",
              "progress=false", "design=multihead")
    whole = T.train(_train_cfg(*common, f"output_dir={tmp_path / 'whole'}"))

    real, calls = T.grouped_batches, []

    def killed_in_epoch_three(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt  # the process is stopped during the third epoch
        return real(*args, **kwargs)

    monkeypatch.setattr(T, "grouped_batches", killed_in_epoch_three)
    resumed_dir = tmp_path / "resumed"
    with pytest.raises(KeyboardInterrupt):
        T.train(_train_cfg(*common, f"output_dir={resumed_dir}"))
    assert (resumed_dir / ".resume.pt").is_file() and not (resumed_dir / MANIFEST).exists()
    monkeypatch.setattr(T, "grouped_batches", real)
    with pytest.raises(BenchmarkError, match="holds an unfinished training with other settings"):
        T.train(_train_cfg(*common, "epochs=4", f"output_dir={resumed_dir}"))
    resumed = T.train(_train_cfg(*common, f"output_dir={resumed_dir}"))
    a, b = json.loads((whole / MANIFEST).read_text()), json.loads((resumed / MANIFEST).read_text())
    assert a["weights_sha256"] == b["weights_sha256"]
    assert [h["val_macro_f1"] for h in a["fit"]["multihead"]["history"]] == \
        [h["val_macro_f1"] for h in b["fit"]["multihead"]["history"]]
    assert not list(resumed.rglob(".resume.pt")) and not list(resumed.rglob("fit.json"))


def test_the_default_training_writes_a_local_detector_not_the_shipped_one(compose):
    from benchmark.judge.detector_train import DEFAULT_DIR, default_output_dir

    assert compose("model=diasafety-detector").model.pretrained == "judges/diasafety-detector"
    assert DEFAULT_DIR == "checkpoints/diasafety-detector"
    assert default_output_dir(_train_cfg()) == Path(DEFAULT_DIR)
    assert default_output_dir(_train_cfg("threads=1", "progress=false")) == Path(DEFAULT_DIR)
    other = default_output_dir(_train_cfg("epochs=2"))
    assert other != Path(DEFAULT_DIR) and other.name.startswith("diasafety-multihead-ctx-")
