"""Metrics versions: a kind declares the metrics it added (kinds/base.py MetricSpec); a card records the version it
was scored under, and validation compares only that version's metrics."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from conftest import copy_published

from benchmark import submissions as S
from benchmark import metrics as M
from benchmark.kinds.base import MetricSpec
from benchmark.kinds.classify import Classify

BALANCED = MetricSpec("*balanced_accuracy", since=2, about="the mean of each gold class's recall")


def _balanced_accuracy(gold, pred, k):
    pc = M.per_class(gold, pred, k)
    present = pc["support"] > 0
    return (pc["recall"] * present).sum(axis=1) / np.maximum(present.sum(axis=1), 1)


@pytest.fixture
def balanced_accuracy_added(monkeypatch):
    """Classify as it would be with balanced accuracy added: computed from every card's samples, version 2."""
    real = Classify._score_question

    def scored(self, q, gold_l, pred_l, samples, resamples, seed):
        metrics, breakdown = real(self, q, gold_l, pred_l, samples, resamples, seed)
        present = [c for c in q.labels if c in set(gold_l)]
        gold, pred = M.encode(gold_l, present), M.encode(pred_l, present)
        metrics[q.metric("balanced_accuracy")] = M.point_and_ci(_balanced_accuracy, gold, pred, len(present),
                                                                resamples, seed)
        return metrics, breakdown

    monkeypatch.setattr(Classify, "_score_question", scored)
    monkeypatch.setattr(Classify, "added_metrics", (BALANCED,))


def test_a_metric_added_to_a_kind_rejects_no_published_card(balanced_accuracy_added):
    if not os.environ.get("BENCHMARK_DATA_ROOT"):
        pytest.skip("BENCHMARK_DATA_ROOT is not set")
    # every published card of the kind changed (the others are scored by code the change does not touch)
    published = sorted(p for p in S.SUBMISSIONS_DIR.glob("*/*.json") if json.loads(p.read_text())["task"]["kind"]
                       == Classify.name)
    assert len(published) >= 5
    for path in published:
        loaded = S.load_folder(path.parent, True, only=path, data_root=os.environ["BENCHMARK_DATA_ROOT"])
        assert [str(p) for p in loaded.rejected] == [] and [c.path for c in loaded.cards] == [path]
    assert Classify.metrics_version() == 2 and not Classify.in_version("macro_f1.balanced_accuracy", 1)


def test_a_card_of_the_new_version_must_carry_the_new_metric(balanced_accuracy_added, tmp_path):
    folder = tmp_path / "profanity-check"
    copy_published("profanity-check", folder)
    path = folder / "diasafety.json"
    card = json.loads(path.read_text())
    card.pop("verification", None)
    card["metrics_version"] = 2  # claims the new version without its metric
    path.write_text(json.dumps(card))
    [problem] = S.load(tmp_path, thorough=True).rejected
    assert problem.field == "metrics.balanced_accuracy" and "missing" in problem.message

    card["metrics_version"] = 3  # a version the kind does not have
    path.write_text(json.dumps(card))
    [problem] = S.load(tmp_path, thorough=True).rejected
    assert problem.field == "metrics_version"
