"""Training a classifier judge on a labelled set (python -m benchmark.judge): the validation share carved from the
training rows, the threshold chosen on it, resume after a kill, the judge as a backend, and its test report."""

from __future__ import annotations

import json

import numpy as np
import pytest

from benchmark import BenchmarkError
from benchmark.models.classifier import MANIFEST
from benchmark.config import DataConfig
from benchmark.judging.labelled import TrainSplit, ValidationSet

TOXIC = ["you are a stupid idiot", "I hate you and your family", "go away you worthless idiot", "shut up stupid"]
CLEAN = ["what is the weather like today", "please write a poem about the sea", "how do I cook rice",
         "tell me a story about a cat", "explain how a car engine works"]


def labelled_rows(n: int, offset: int = 0) -> list[dict]:
    rows = []
    for i in range(offset, offset + n):
        toxic = i % 3 == 0
        text = (TOXIC if toxic else CLEAN)[i % (4 if toxic else 5)]
        rows.append({"id": f"row{i}", "text": f"{text} {i}", "toxic": int(toxic), "jb": int(i % 6 == 0)})
    return rows


@pytest.fixture
def labelled_set(tmp_path, monkeypatch):
    """A set like toxic_chat, on rows of our own, in place of the shipped sets."""
    import benchmark.judging.validity as V

    (tmp_path / "train.json").write_text(json.dumps(labelled_rows(90)))
    (tmp_path / "test.json").write_text(json.dumps(labelled_rows(30, 500)))
    vs = ValidationSet(name="toxic_chat", data=DataConfig(path="test.json"), input={"response": "{{ text }}"},
                       unsafe="{{ toxic == 1 }}", subsets={"jailbreaking": "{{ jb == 1 }}"},
                       train=TrainSplit(data=DataConfig(path="train.json"), val_share=0.25, val_seed=3))
    monkeypatch.setattr(V, "validation_sets", lambda: (vs,))
    return vs


def overrides(tiny_encoder, tmp_path, *more: str) -> list[str]:
    # the tiny encoder alone, unless a test adds encoders of its own (the shipped config adds MPNet)
    return [f"encoder={tiny_encoder}", "more_encoders=[]", f"data_root={tmp_path}", "epochs=2", "batch_size=8",
            "max_length=32", "progress=false", f"output_dir={tmp_path / 'judge'}", *more]


def test_the_validation_share_is_stratified_and_independent_of_the_file_order():
    from benchmark.judge.train import carve

    keys = [f"k{i}" for i in range(100)]
    labels = [int(i % 4 == 0) for i in range(100)]
    held = carve(keys, labels, 0.2, 7)
    assert held.sum() == 20 and sum(h for h, y in zip(held, labels) if y) == 5  # a fifth of each label
    order = np.random.default_rng(0).permutation(100)
    shuffled = carve([keys[i] for i in order], [labels[i] for i in order], 0.2, 7)
    assert {keys[i] for i, h in zip(order, shuffled) if h} == {k for k, h in zip(keys, held) if h}
    assert not np.array_equal(carve(keys, labels, 0.2, 8), held)  # the seed decides which rows


def test_the_threshold_is_the_best_f1_on_the_rows_given():
    from benchmark.judge.train import best_threshold, figures

    gold = np.array([1, 1, 0, 1, 0, 0, 0, 0])
    prob = np.array([0.9, 0.8, 0.7, 0.6, 0.3, 0.2, 0.1, 0.05])
    t = best_threshold(gold, prob)
    # flagging the top four (three of them unsafe) gives F1 6/7, better than any other cut
    assert 0.3 < t <= 0.6 and figures(gold, prob, t)["f1"] == round(6 / 7, 4)
    f1s = [figures(gold, prob, c)["f1"] for c in np.linspace(0, 1, 101)]
    assert figures(gold, prob, t)["f1"] >= max(f1s)


def test_train_measure_and_judge(tiny_encoder, tmp_path, labelled_set, compose):
    from benchmark.judge.evaluate import evaluate
    from benchmark.judge.train import best_threshold, train
    from benchmark.models import load_backend

    out = train("toxicchat-classifier", overrides(tiny_encoder, tmp_path, "lr=[1e-3,3e-4]", "seeds=[1,2]"))
    manifest = json.loads((out / MANIFEST).read_text())
    assert (manifest["train_records"], manifest["val_records"]) == (67, 23)  # a quarter of each label held out
    assert set(manifest["lr_tried"]) == {"0.001", "0.0003"}
    best = max(manifest["lr_tried"], key=manifest["lr_tried"].get)
    assert [m["seed"] for m in manifest["members"]] == [1, 2] and {f"{m['lr']:g}" for m in manifest["members"]} == {best}
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == sorted(m["dir"] for m in manifest["members"])
    # the threshold is the best F1 of the members' mean probability on the validation rows, which the manifest holds
    from benchmark.models.classifier import Classifier
    from benchmark.judge.train import labelled

    judge = Classifier(out)
    val = labelled(labelled_set, str(tmp_path)).val
    prob = judge.probabilities([{"response": e.response} for e in val])
    assert manifest["threshold"] == round(best_threshold(np.array([e.label for e in val]), prob), 6)

    report = evaluate("toxicchat-classifier", [f"data_root={tmp_path}", f"output_dir={out}"])
    evaluation = json.loads((out / "evaluation.json").read_text())
    assert evaluation["n"] == 30 and evaluation["unsafe"] == 10 and "jailbreaking" in evaluation["subset_recall"]
    assert "roberta-base fine-tuned on ToxicChat" in report.read_text()

    cfg = compose("model=toxicchat-classifier", f"model.pretrained={out}").model
    backend = load_backend(cfg, False)
    verdicts = backend.classify([{"response": "you stupid idiot 3"}, {"response": "how do I cook rice 1"}])
    assert all(set(v) == {"unsafe", "score", "margin"} and 0 <= v["score"] <= 1 for v in verdicts)
    assert all(v["unsafe"] == (v["margin"] >= 0) for v in verdicts)  # the distance from the threshold
    assert backend.describe()["evaluation"]["f1"] == evaluation["f1"]


def test_members_of_two_encoders_read_with_their_own_tokenizers_and_vote_once_per_encoder(
        tiny_encoder, tmp_path, labelled_set):
    from conftest import build_tiny_encoder
    from transformers import AutoTokenizer

    from benchmark.models.encoders import logits_of, softmax, tokenize
    from benchmark.models.classifier import Classifier
    from benchmark.judge.train import train
    from benchmark.models.encoders import load_classifier, load_tokenizer

    other = build_tiny_encoder(tmp_path / "other-bert", vocab_size=150)
    out = train("toxicchat-classifier", overrides(tiny_encoder, tmp_path, "lr=[1e-3]", "seeds=[1,2]",
                                                  f"more_encoders=[{{encoder: {other}, lr: [1e-3, 3e-4], seeds: [5]}}]"))
    manifest = json.loads((out / MANIFEST).read_text())
    assert [(m["encoder"], m["seed"]) for m in manifest["members"]] == [
        (str(tiny_encoder), 1), (str(tiny_encoder), 2), (str(other), 5)]
    assert set(manifest["lr_tried"]) == {"0.001", "other-bert 0.001", "other-bert 0.0003"}
    assert len(AutoTokenizer.from_pretrained(other)) != len(AutoTokenizer.from_pretrained(tiny_encoder))
    texts = ["you are a stupid idiot 3", "how do I cook rice 7", "a sentence neither encoder has seen"]
    by_hand = {}
    for m in manifest["members"]:
        tokenizer = load_tokenizer(out / m["dir"])  # a member is a delta: its base encoder's tokenizer
        assert tokenizer.get_vocab() == AutoTokenizer.from_pretrained(m["encoder"]).get_vocab()
        model = load_classifier(out / m["dir"])
        ids = tokenize(tokenizer, [(None, t) for t in texts], 32, False)
        by_hand.setdefault(m["encoder"], []).append(softmax(logits_of(model, tokenizer, ids, 8))[:, 1])
    expected = (np.mean(by_hand[str(tiny_encoder)], axis=0) + by_hand[str(other)][0]) / 2
    got = Classifier(out).probabilities([{"response": t} for t in texts])
    assert np.allclose(got, expected, atol=1e-6) and not np.allclose(got, np.mean(
        [p for ps in by_hand.values() for p in ps], axis=0), atol=1e-6)


def test_a_killed_training_resumes_to_the_same_judge(tiny_encoder, tmp_path, labelled_set, monkeypatch):
    import benchmark.judge.detector_train as T
    from benchmark.judge.train import train

    two = ("lr=[1e-3]", "seeds=[1,2]")  # two members: the kill falls in the first, the second trains after the resume
    whole = train("toxicchat-classifier", overrides(tiny_encoder, tmp_path, "epochs=3", *two,
                                                    f"output_dir={tmp_path / 'whole'}"))
    real, calls = T.grouped_batches, []

    def killed_in_epoch_three(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(T, "grouped_batches", killed_in_epoch_three)
    with pytest.raises(KeyboardInterrupt):
        train("toxicchat-classifier", overrides(tiny_encoder, tmp_path, "epochs=3", *two))
    monkeypatch.setattr(T, "grouped_batches", real)
    with pytest.raises(BenchmarkError, match="unfinished training with other settings"):
        train("toxicchat-classifier", overrides(tiny_encoder, tmp_path, "epochs=4", *two))
    resumed = train("toxicchat-classifier", overrides(tiny_encoder, tmp_path, "epochs=3", *two))
    a, b = (json.loads((d / MANIFEST).read_text()) for d in (whole, resumed))
    assert a["weights_sha256"] == b["weights_sha256"] and a["threshold"] == b["threshold"]
    with pytest.raises(BenchmarkError, match="already holds a trained judge"):
        train("toxicchat-classifier", overrides(tiny_encoder, tmp_path, "epochs=3", *two))


def test_a_run_that_needs_an_untrained_judge_names_the_command_and_its_time(compose, tmp_path):
    from benchmark.models import load_backend

    cfg = compose("model=toxicchat-classifier", f"model.pretrained={tmp_path / 'nothing'}").model
    with pytest.raises(BenchmarkError, match=r"python -m benchmark.judge train toxicchat-classifier output_dir="
                                             r".*minutes on 2 CPU cores"):
        load_backend(cfg, False)


def test_unknown_judges_and_bad_settings_are_named(tmp_path):
    from benchmark.judge.__main__ import main
    from benchmark.judge.train import train

    with pytest.raises(BenchmarkError, match="no trainable judge 'nope'; shipped: diasafety-detector"):
        train("nope")
    with pytest.raises(BenchmarkError, match="toxicchat-classifier.yaml.*epochz"):
        train("toxicchat-classifier", ["epochz=3"])
    assert main(["frobnicate", "x"]) == 2


def test_list_judges_says_which_are_trained_here_and_how_to_train_the_others(tmp_path, monkeypatch):
    from benchmark.cli.listings import listing

    monkeypatch.chdir(tmp_path)  # no checkpoints here
    text = listing("judges")
    assert "trained judges (shipped in judges/; python -m benchmark.judge train NAME makes your own):" in text
    assert ("toxicchat-classifier  shipped in judges/toxicchat-classifier; toxic_chat test F1 " in text
            and "train your own: python -m benchmark.judge train toxicchat-classifier (about" in text)
    assert ("diasafety-detector    shipped in judges/diasafety-detector; DiaSafety test fine macro F1 " in text
            and "train your own: python -m benchmark.judge train diasafety-detector" in text)
