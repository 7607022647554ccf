"""Classification metrics with seeded bootstrap 95% confidence intervals.

Labels are integer codes: 0..K-1 are the classes the metric averages over (the task's labels that occur in the
gold labels); any code >= K (an invalid answer, a coarse-only answer) is a miss for the gold class and a false
positive for none, as scikit-learn treats predictions outside `labels`. Macro averages run over the classes with
gold support in each sample (resample), i.e. scikit-learn's `f1_score(labels=<gold classes>, average="macro")`. Every statistic takes arrays with a leading resample axis, so the bootstrap is a
handful of vectorised numpy calls (well under a second for 10k samples x 1000 resamples).

The statistics of judging sit here too: a rate corrected for its judges' errors measured on human labels
(`corrected`), and how often a step's voters agree (`agreement`).
"""

from __future__ import annotations

import numpy as np

_BOOT_CHUNK = 100  # resamples per vectorised step; bounds memory at _BOOT_CHUNK x n
# every published card's intervals: the suite's resamples and seed (the defaults of a run), so no submitter picks
# the interval widths or shops for a seed
PUBLISHED_RESAMPLES = 1000
PUBLISHED_SEED = 1234


def confusion(gold: np.ndarray, pred: np.ndarray, k: int) -> np.ndarray:
    """Batched confusion matrices, shape (B, k+1, k+1); row = gold, column = prediction; code k = 'other'."""
    gold = np.minimum(gold, k)
    pred = np.minimum(pred, k)
    b = gold.shape[0]
    flat = (np.arange(b)[:, None] * (k + 1) + gold) * (k + 1) + pred
    return np.bincount(flat.ravel(), minlength=b * (k + 1) ** 2).reshape(b, k + 1, k + 1)


def per_class(gold: np.ndarray, pred: np.ndarray, k: int) -> dict[str, np.ndarray]:
    """Precision, recall, F1 and support per class, each shape (B, k). Zero where undefined."""
    cm = confusion(gold, pred, k)
    tp = np.diagonal(cm, axis1=1, axis2=2)[:, :k].astype(float)
    predicted = cm[:, :, :k].sum(axis=1)
    support = cm[:, :k, :].sum(axis=2)
    with np.errstate(divide="ignore", invalid="ignore"):
        precision = np.where(predicted > 0, tp / predicted, 0.0)
        recall = np.where(support > 0, tp / support, 0.0)
        f1 = np.where(predicted + support > 0, 2 * tp / (predicted + support), 0.0)
    return {"precision": precision, "recall": recall, "f1": f1, "support": support}


def macro_f1(gold, pred, k):
    pc = per_class(gold, pred, k)
    present = pc["support"] > 0
    return (pc["f1"] * present).sum(axis=1) / np.maximum(present.sum(axis=1), 1)


def class_f1(c: int):
    def stat(gold, pred, k):
        return per_class(gold, pred, k)["f1"][:, c]

    return stat


def accuracy(gold, pred, k):
    return (gold == pred).mean(axis=1)


def rate(flags, _unused, k):
    """The share of ones in a 0/1 array."""
    return flags.mean(axis=1)


def ratio(numerators, denominators, k):
    """Sum of numerators over sum of denominators: a rate over responses, resampled by record (cluster bootstrap).
    NaN where the denominators sum to 0 (e.g. a resample with no activated conversation); such resamples are left
    out of the interval."""
    den = denominators.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, numerators.sum(axis=1) / np.where(den > 0, den, 1), np.nan)


def point_and_ci(stat, gold: np.ndarray, pred: np.ndarray, k: int, resamples: int, seed: int) -> dict:
    """{value, ci_low, ci_high, n}: the statistic on the data and the 2.5/97.5 percentiles of its bootstrap."""
    n = len(gold)
    value = float(stat(gold[None, :], pred[None, :], k)[0])
    if n == 0 or resamples <= 0:
        return {"value": value, "ci_low": value, "ci_high": value, "n": n}
    rng = np.random.default_rng(seed)
    draws = []
    for start in range(0, resamples, _BOOT_CHUNK):
        idx = rng.integers(0, n, size=(min(_BOOT_CHUNK, resamples - start), n))
        draws.append(stat(gold[idx], pred[idx], k))
    draws = np.concatenate(draws)
    if np.isnan(draws).all():
        return {"value": value, "ci_low": value, "ci_high": value, "n": n}
    low, high = np.nanpercentile(draws, [2.5, 97.5])
    return {"value": value, "ci_low": float(low), "ci_high": float(high), "n": n}


def ratio_difference(a: tuple, b: tuple, resamples: int, seed: int) -> dict:
    """{value, ci_low, ci_high, n}: ratio(a) - ratio(b) of two groups of records, each (numerators, denominators),
    each resampled by record on its own; n is a's records."""
    def draws(num, den, offset):
        if resamples <= 0 or len(num) == 0:
            return np.empty(0)
        rng = np.random.default_rng(seed + offset)
        idx = rng.integers(0, len(num), size=(resamples, len(num)))
        return ratio(num[idx], den[idx], 0)

    value = float(ratio(a[0][None, :], a[1][None, :], 0)[0] - ratio(b[0][None, :], b[1][None, :], 0)[0])
    diff = draws(*a, 0) - draws(*b, 1)
    if diff.size == 0 or np.isnan(diff).all():
        return {"value": value, "ci_low": value, "ci_high": value, "n": len(a[0])}
    low, high = np.nanpercentile(diff, [2.5, 97.5])
    return {"value": value, "ci_low": float(low), "ci_high": float(high), "n": len(a[0])}


def encode(values: list[str], classes: list[str]) -> np.ndarray:
    """Integer codes for `values`; anything not in `classes` gets code len(classes)."""
    index = {c: i for i, c in enumerate(classes)}
    return np.array([index.get(v, len(classes)) for v in values], dtype=np.int64)


def youden(gold: np.ndarray, flagged: np.ndarray) -> tuple[float, float]:
    """(sensitivity, specificity) of 0/1 flags against 0/1 gold labels; NaN where a class is absent."""
    pos, neg = gold == 1, gold == 0
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(flagged[pos].mean()) if pos.any() else np.nan, float(1 - flagged[neg].mean()) if neg.any() else np.nan


def corrected_rate(numerators, denominators, gold, flagged, resamples: int, seed: int) -> dict | None:
    """The Rogan-Gladen estimate of a rate that an imperfect judge measured: (observed + specificity - 1) /
    (sensitivity + specificity - 1), clipped to [0, 1], with the judge's sensitivity and specificity measured on
    human labels (gold, flagged). Its interval resamples both the records (by record, as `ratio`) and the labelled
    set, independently. None where the judge is no better than chance on the set (sensitivity + specificity <= 1)."""
    num, den = np.asarray(numerators, dtype=float), np.asarray(denominators, dtype=float)
    gold, flagged = np.asarray(gold), np.asarray(flagged)

    def correct(p, sens, spec):
        j = sens + spec - 1
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(j > 0, np.clip((p + spec - 1) / np.where(j > 0, j, 1), 0, 1), np.nan)

    sens, spec = youden(gold, flagged)
    if not sens + spec - 1 > 0:
        return None
    value = float(correct(num.sum() / den.sum(), sens, spec))
    if resamples <= 0:
        return {"value": value, "ci_low": value, "ci_high": value, "n": len(num)}
    rng = np.random.default_rng(seed)
    draws = []
    for start in range(0, resamples, _BOOT_CHUNK):
        b = min(_BOOT_CHUNK, resamples - start)
        r = rng.integers(0, len(num), size=(b, len(num)))
        v = rng.integers(0, len(gold), size=(b, len(gold)))
        g, f = gold[v], flagged[v]
        pos, neg = (g == 1).sum(1), (g == 0).sum(1)
        with np.errstate(divide="ignore", invalid="ignore"):
            s = np.where(pos > 0, (f * (g == 1)).sum(1) / np.maximum(pos, 1), np.nan)
            c = np.where(neg > 0, ((1 - f) * (g == 0)).sum(1) / np.maximum(neg, 1), np.nan)
        draws.append(correct(ratio(num[r], den[r], 0), s, c))
    draws = np.concatenate(draws)
    if np.isnan(draws).all():
        return {"value": value, "ci_low": value, "ci_high": value, "n": len(num)}
    low, high = np.nanpercentile(draws, [2.5, 97.5])
    return {"value": value, "ci_low": float(min(low, value)), "ci_high": float(max(high, value)), "n": len(num)}


def corrected(metrics: dict, name: str, flagged, judged, validation: dict | None, resamples: int,
              seed: int, min_youden: float) -> dict | None:
    """Adds metric `name`, a flagged-share corrected for the judges' errors, when the judging steps' outcome on a
    labelled set is given and it is informative enough to correct: Youden's J (sensitivity + specificity - 1) at least
    `min_youden` (the task's), and an interval that does not span the whole range. Returns what the breakdown says of
    it (the set, sensitivity, specificity, and the corrected metric's name or why there is none)."""
    if not isinstance(validation, dict):
        return {"corrected": validation} if validation else None
    gold, flags = (np.frombuffer(validation[k].encode(), dtype=np.uint8) - 48 for k in ("gold", "flagged"))
    sens, spec = youden(gold, flags)
    j_value = sens + spec - 1
    j = f"{j_value:.2f}".replace("-0.00", "0.00")
    result = corrected_rate(flagged, judged, gold, flags, resamples, seed) if j_value >= min_youden else None
    if result is not None and result["ci_low"] <= 0 and result["ci_high"] >= 1:
        why = f"not correctable: judge J = {j}, and the corrected interval spans the whole range"
        result = None
    elif result is None:
        why = (f"not correctable: judge J = {j} on {validation['set']} (sensitivity {sens:.2f} + "
               f"specificity {spec:.2f} - 1), below the task's minimum {min_youden:g}")
    if result is not None:
        metrics[name] = result
    return {"set": validation["set"], "n": validation["n"], "sensitivity": round(sens, 4),
            "specificity": round(spec, 4), "corrected": name if result is not None else why}


def agreement(rows: list[list]) -> dict | None:
    """Between voters who each flag (1) or clear (0) the same items, one row of flags per item in the same voter
    order: percent agreement, Cohen's kappa (two voters) and Fleiss' kappa (any number), over the rows of the most
    voters. None with fewer than two voters."""
    voters = max((len(r) for r in rows), default=0)
    if voters < 2:
        return None
    rows = [r for r in rows if len(r) == voters]
    table = np.array(rows, dtype=int)  # items x voters, 1 = flagged
    out = {"voters": voters, "responses": len(rows),
           "percent_agreement": float((table.min(axis=1) == table.max(axis=1)).mean()) if rows else None,
           "fleiss_kappa": fleiss_kappa(table) if rows else None}
    if voters == 2 and rows:
        from sklearn.metrics import cohen_kappa_score

        kappa = cohen_kappa_score(table[:, 0], table[:, 1]) if len(set(table.ravel())) > 1 else 1.0
        out["cohen_kappa"] = float(kappa)
    return out


def fleiss_kappa(table: np.ndarray) -> float:
    """Fleiss' kappa for binary ratings: items x raters, each 0 or 1. 1.0 when every rating is the same."""
    n, m = table.shape
    counts = np.stack([m - table.sum(axis=1), table.sum(axis=1)], axis=1)  # per item: raters per category
    p_j = counts.sum(axis=0) / (n * m)
    p_i = ((counts ** 2).sum(axis=1) - m) / (m * (m - 1))
    p_e = float((p_j ** 2).sum())
    if p_e == 1.0:
        return 1.0
    return float((p_i.mean() - p_e) / (1 - p_e))
