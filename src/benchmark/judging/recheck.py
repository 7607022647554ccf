"""A verifier's check of the shipped record (judges/validity.json) that a card's judge figures and judging procedure
were read from: the run's own judges, loaded as the run loaded them, asked again through a fresh cache on a random
sample of each labelled set's rows, their flags compared with the record's. A flag near its judge's decision boundary
(in the record, or now) may differ by another machine's rounding and is not counted."""

from __future__ import annotations

import random
from pathlib import Path

from ..cache import ResponseCache
from .labelled import absent_file
from .panels import open_panel
from .validity import (judge_key, judge_outcome, procedure_key, procedure_outcome, rows_differ, sets_for,
                       sets_named)
from .validity_record import Outcome, shipped


def _compared(recorded: Outcome, live, only: list[int]) -> dict | str:
    """{"n", "differ", "near"}: the live flags on the sampled rows against the record's at the same rows."""
    if isinstance(live, str):
        return live.replace("not measured", "not rechecked", 1)
    near = [recorded.near[i] == "1" or live.near[k] == "1" for k, i in enumerate(only)]
    differ = sum(live.flagged[k] != recorded.flagged[i] and not near[k] for k, i in enumerate(only))
    return {"n": len(only), "differ": differ, "near": sum(near)}


def _unlike(vs, data_root: str | None, recorded: Outcome) -> str | None:
    """Why the set's rows here cannot recheck the record (absent, or other rows), or None."""
    if (absent := absent_file(vs, data_root)) is not None:
        return f"not rechecked: {absent} is not under data_root"
    if rows_differ(vs, data_root, recorded):
        return f"not rechecked: the rows of {vs.name} here are not the ones the record was measured on"
    return None


def _sample(n: int, size: int, seed: int) -> list[int]:
    return sorted(random.Random(seed).sample(range(n), min(size, n))) if size > 0 else list(range(n))


def recheck(p, backend, cache_path: Path, size: int, seed: int) -> dict:
    """{"judge_records": {"<judge> on <set>" or "<task> steps on <set>": {"n", "differ", "near"} or "not rechecked:
    <why>"}, "judge_records_agree": whether every sampled flag (but near ones) is the record's}, for the outcomes the
    shipped record gives this run (`p`: its runner.Plan; `backend(config)`: a judge config's loaded backend); `size`
    rows per set (0: every row), drawn with `seed`. {} where the record gives the run nothing."""
    record, cfg, kind = shipped(), p.cfg, p.kind
    if not cfg.judge_validity:  # the card carries no figures to check
        return {}
    cache = ResponseCache(cache_path)
    try:
        panel = open_panel(p, cache, backend)
        found: dict = {}
        for key, judge in panel.judges.items():
            if not judge.supports("classify"):
                continue
            for vs in sets_for(cfg.task.language, type(judge.backend).measures):
                recorded = record.find("judge", judge_key(judge), vs)
                if recorded is None:
                    continue
                only = _sample(recorded.n, size, seed)
                live = _unlike(vs, cfg.data_root, recorded) or judge_outcome(judge, vs, cfg.data_root, None,
                                                                              cfg.progress, only)
                found[f"{judge.config.name} on {vs.name}"] = _compared(recorded, live, only)
        if kind.judging_validation is not None:
            spec, steps = kind.judging_validation
            vs = sets_named().get(spec.set)
            key = procedure_key(spec, steps, panel, kind.spec.tie, vs) if vs is not None else None
            recorded = record.find("procedure", key, vs)
            if recorded is not None:
                only = _sample(recorded.n, size, seed)
                live = _unlike(vs, cfg.data_root, recorded) or procedure_outcome(
                    spec, steps, panel, kind.spec.tie, cfg.data_root, None, cfg.progress, cfg.task.name, only)
                found[f"{cfg.task.name} steps on {recorded.set}"] = _compared(recorded, live, only)
    finally:
        cache.close()
    if not found:
        return {}
    return {"judge_records": found,
            "judge_records_agree": all(isinstance(v, dict) and v["differ"] == 0 for v in found.values())}
