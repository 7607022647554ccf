"""How far to trust a classifier judge: its verdicts on human-labelled sets (conf/judge_validation.yaml) against the
humans' labels, asked through the same cached model the run judges with (so each set is judged once per judge
config, ever). A score card's judge entries carry the figures under `measured`."""

from __future__ import annotations

import numpy as np

from . import metrics as M
from .templates import render

STATS = ("precision", "recall", "specificity", "f1", "macro_f1")


def _stat(name: str):
    """A statistic of the unsafe class (code 1) over 0/1 gold and predicted codes; `specificity` is the safe class's
    recall, `macro_f1` the mean F1 of both."""
    def stat(gold, pred, k):
        pc = M.per_class(gold, pred, 2)
        if name == "specificity":
            return pc["recall"][:, 0]
        if name == "macro_f1":
            return M.macro_f1(gold, pred, 2)
        return pc[name][:, 1]

    return stat


def validation_sets():
    from omegaconf import OmegaConf

    from .paths import CONF_DIR
    from .schema import ValidationConfig

    config = OmegaConf.merge(OmegaConf.structured(ValidationConfig), OmegaConf.load(CONF_DIR / "judge_validation.yaml"))
    return OmegaConf.to_object(config).sets


def measure(judge, data_root: str | None, resamples: int, seed: int, sets=None) -> dict:
    """{set name: {n, unsafe (the human-labelled unsafe share), data_sha256, precision, recall, specificity, f1,
    macro_f1 (each {value, ci_low, ci_high, n})}} or {set name: "not measured: <why>"}."""
    from .data import data_file, load_rows, records_sha256

    out = {}
    for vs in sets if sets is not None else validation_sets():
        where = f"judge validation set {vs.name}"
        if not data_root or not data_file(data_root, vs.data.path, where).is_file():
            out[vs.name] = f"not measured: {vs.data.path} is not under data_root"
            continue
        rows, _ = load_rows(vs.data, data_root, where)
        inputs = [{k: render(t, row, f"{where}: input.{k}") for k, t in vs.input.items()} for row in rows]
        gold = np.array([render(vs.unsafe, row, f"{where}: unsafe").strip() == "True" for row in rows], dtype=np.int64)
        answers = judge("classify", [{"input": x} for x in inputs])
        failed = sum(1 for a in answers if not isinstance(a, dict))
        if failed:
            out[vs.name] = f"not measured: {failed} of {len(rows)} requests failed"
            continue
        pred = np.array([bool(a["unsafe"]) for a in answers], dtype=np.int64)
        sha = records_sha256(rows)
        out[vs.name] = {"n": len(rows), "unsafe": round(float(gold.mean()), 4), "data_sha256": sha,
                        "sha256_matches": None if not vs.data.sha256 else sha == vs.data.sha256,
                        **{s: M.point_and_ci(_stat(s), gold, pred, 2, resamples, seed) for s in STATS}}
    return out
