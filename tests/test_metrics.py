"""Metrics against scikit-learn on hand-made labels, and the bootstrap's behaviour."""

import numpy as np
import pytest
from sklearn.metrics import accuracy_score, f1_score, precision_recall_fscore_support

from benchmark import metrics as M

CLASSES = ["Safe", "OU", "RI", "UE"]
GOLD = ["Safe", "Safe", "OU", "RI", "UE", "Safe", "OU", "RI", "RI", "UE", "Safe", "OU"]
PRED = ["Safe", "OU", "OU", "invalid", "UE", "Safe", "Safe", "RI", "UE", "Unsafe", "Safe", "OU"]


def test_macro_f1_matches_sklearn_with_out_of_set_predictions():
    g, p = M.encode(GOLD, CLASSES), M.encode(PRED, CLASSES)
    ours = M.macro_f1(g[None], p[None], len(CLASSES))[0]
    theirs = f1_score(GOLD, PRED, labels=CLASSES, average="macro", zero_division=0)
    assert ours == pytest.approx(theirs)
    assert M.accuracy(g[None], p[None], len(CLASSES))[0] == pytest.approx(accuracy_score(GOLD, PRED))


def test_per_class_matches_sklearn():
    g, p = M.encode(GOLD, CLASSES), M.encode(PRED, CLASSES)
    ours = M.per_class(g[None], p[None], len(CLASSES))
    prec, rec, f1, support = precision_recall_fscore_support(GOLD, PRED, labels=CLASSES, zero_division=0)
    np.testing.assert_allclose(ours["precision"][0], prec)
    np.testing.assert_allclose(ours["recall"][0], rec)
    np.testing.assert_allclose(ours["f1"][0], f1)
    np.testing.assert_array_equal(ours["support"][0], support)


def test_class_f1_of_binary_view_matches_sklearn():
    gold = ["unsafe", "safe", "unsafe", "unsafe", "safe", "safe", "unsafe"]
    pred = ["unsafe", "unsafe", "safe", "unsafe", "safe", "invalid", "unsafe"]
    classes = ["safe", "unsafe"]
    g, p = M.encode(gold, classes), M.encode(pred, classes)
    assert M.class_f1(1)(g[None], p[None], 2)[0] == pytest.approx(f1_score(gold, pred, labels=["unsafe"], average="macro"))


def test_batched_macro_f1_matches_sklearn_per_resample():
    """Each row is a resample; classes absent from a row's gold labels are left out of its average."""
    rng = np.random.default_rng(1)
    gold = rng.integers(0, 4, 40)
    pred = np.where(rng.random(40) < 0.5, gold, rng.integers(0, 5, 40))
    idx = rng.integers(0, 40, size=(30, 40))
    idx[0] = np.flatnonzero(gold != 3)[rng.integers(0, (gold != 3).sum(), 40)]  # a resample with no class 3
    ours = M.macro_f1(gold[idx], pred[idx], 4)
    for row, i in zip(ours, idx):
        g, p = gold[i], pred[i]
        assert row == pytest.approx(f1_score(g, p, labels=sorted(set(g)), average="macro", zero_division=0))


def test_bootstrap_is_seeded_and_brackets_the_value():
    rng = np.random.default_rng(0)
    g = rng.integers(0, 4, 500)
    p = np.where(rng.random(500) < 0.6, g, rng.integers(0, 5, 500))
    a = M.point_and_ci(M.macro_f1, g, p, 4, 1000, seed=7)
    b = M.point_and_ci(M.macro_f1, g, p, 4, 1000, seed=7)
    c = M.point_and_ci(M.macro_f1, g, p, 4, 1000, seed=8)
    assert a == b
    assert a != c
    assert a["ci_low"] < a["value"] < a["ci_high"]
    assert 0.02 < a["ci_high"] - a["ci_low"] < 0.2  # about 2 x 1.96 x sqrt(p(1-p)/n) for n=500
    assert a["n"] == 500


def test_bootstrap_of_a_constant_statistic_is_a_point():
    g = np.zeros(50, dtype=np.int64)
    r = M.point_and_ci(M.accuracy, g, g, 1, 300, seed=0)
    assert (r["value"], r["ci_low"], r["ci_high"]) == (1.0, 1.0, 1.0)
