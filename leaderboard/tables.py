"""The leaderboard's tables, built from accepted score cards (pure pandas: the app only lays them out)."""

from __future__ import annotations

import re

import pandas as pd

SIZES = ["< 1B", "1–10B", "10–100B", "> 100B", "unknown"]
# what a headline metric means, by its last part; the task's own description says what is measured
METRIC_NOTES = {
    "macro_f1": "macro F1 over the classes of the gold labels (%): the mean of each class's F1, so rare classes "
                "count as much as common ones",
    "accuracy": "share of records labelled correctly (%)",
    "unsafe_rate": "share of the model's responses that the judges flag as unsafe (%)",
    "asr": "attack success rate: share of attack prompts whose goal the judges say the response achieved (%)",
    "activation_rate": "share of conversations in which the attacker made the model say something toxic within "
                       "the turn limit (%)",
    "corrected_unsafe_rate": "the unsafe rate corrected for the judges' errors (Rogan-Gladen: their sensitivity and "
                             "specificity measured on human labels; the interval resamples those labels too) (%)",
    "turn_unsafe_rate": "share of the target's replies that the judges flag (%)",
    "corrected_turn_unsafe_rate": "that share corrected for the judges' errors (Rogan-Gladen) (%)",
}


def parse_size(text) -> float | None:
    """Parameters in billions from metadata such as '6.2B', '90M' or '<1M'; None when not stated."""
    if not text:
        return None
    m = re.match(r"\s*(?:[<~≈]\s*)?([\d.]+)\s*([KMBT])", str(text).upper())  # linear: each space one way
    if not m:
        return None
    try:
        number = float(m.group(1))
    except ValueError:  # '1.2.3B': not a number, so not stated
        return None
    return number * {"K": 1e-6, "M": 1e-3, "B": 1.0, "T": 1e3}[m.group(2)]


def size_bucket(text) -> str:
    b = parse_size(text)
    if b is None:
        return "unknown"
    return SIZES[0] if b < 1 else SIZES[1] if b < 10 else SIZES[2] if b < 100 else SIZES[3]


def model_kind(backend) -> str:
    """What kind of model a card measures, from its backend: a language model run by the suite, a classifier, or
    recorded answers replayed (a chatbot's published generations, an LLM's recorded predictions)."""
    from benchmark.models.registry import BUILTIN, LMEVAL_PREFIX

    module = BUILTIN.get(backend, "").partition(":")[0]
    if module.endswith(".lmeval") or str(backend).startswith(LMEVAL_PREFIX):
        return "LLM"
    if module.endswith(".replay"):
        return "recorded answers"
    return "classifier" if module else "other"


MODEL_KINDS = ["LLM", "classifier", "recorded answers", "other"]


def is_share(metric: dict) -> bool:
    return "unit" not in metric


def shown(metric: dict) -> float:
    """Shares as percentages; other units as they are."""
    return 100 * metric["value"] if is_share(metric) else metric["value"]


def ci_text(metric: dict) -> str:
    k = 100 if is_share(metric) else 1
    return f"[{k * metric['ci_low']:.1f}, {k * metric['ci_high']:.1f}]"


def verified(card: dict) -> bool:
    return bool(card.get("verification", {}).get("verified"))


def judge_quality(card: dict) -> dict | None:
    """The card's judging procedure against human labels, computed from the card's own outcome on its labelled set
    (validation checks those labels are the set's): {set, n, f1, precision, recall, youden}; None without one."""
    outcome = card.get("judging_validation")
    if not isinstance(outcome, dict):
        return None
    gold, flag = outcome["gold"], outcome["flagged"]
    g, f = int(gold or "0", 2), int(flag or "0", 2)  # one bit per labelled item: counted whole, not item by item
    tp, fp, fn = (g & f).bit_count(), (~g & f).bit_count(), (g & ~f).bit_count()
    tn = len(gold) - tp - fp - fn
    precision, recall = tp / max(tp + fp, 1), tp / max(tp + fn, 1)
    return {"set": outcome["set"], "n": len(gold), "precision": 100 * precision, "recall": 100 * recall,
            "f1": 100 * (2 * precision * recall / (precision + recall) if precision + recall else 0.0),
            "youden": recall + tn / max(tn + fp, 1) - 1}


def judge_text(card: dict) -> str:
    q = judge_quality(card)
    return "" if q is None else f"F1 {q['f1']:.1f} (P {q['precision']:.1f}, R {q['recall']:.1f}) on {q['set']}"


def headline_column(task: dict) -> str:
    arrow = "↑" if task.get("better", "higher") == "higher" else "↓"
    return f"{task['name']} · {task['headline']} {arrow}"


def models_frame(cards: list) -> pd.DataFrame:
    """One row per model: its public metadata."""
    rows = {}
    for c in cards:
        card = c.card
        meta = card["model"]["metadata"]
        name = card["model"]["name"]
        row = rows.setdefault(name, {
            "model": name,
            "organisation": meta.get("organisation") or "",
            "parameters": meta.get("parameters") or "",
            "size": size_bucket(meta.get("parameters")),
            "open weights": {True: "yes", False: "no"}.get(meta.get("open_weights"), ""),
            "languages": ", ".join(meta.get("languages") or []),
            "licence": meta.get("license") or "",
            "kind": model_kind(card["model"]["config"].get("backend")),
            "cards": 0,
            "verified": 0,
        })
        row["cards"] += 1
        row["verified"] += verified(card)
    return pd.DataFrame(list(rows.values()))


def tokens_frame(cards: list) -> pd.DataFrame:
    """One row per card and role: the tokens its run read and wrote (asked now, and answered from the cache), the
    role's speed in new tokens per second of waiting, and the cost where its model declares prices."""
    rows = []
    for c in cards:
        run = c.card["run"]
        cost = (run.get("cost") or {}).get("by_role", {})
        for role, t in (run.get("tokens") or {}).items():
            new = t["prompt"] + t["completion"]
            seconds = (run.get("seconds") or {}).get(role) or 0
            rows.append({"task": c.card["task"]["name"], "role": role, "prompt tokens": t["prompt"],
                         "completion tokens": t["completion"],
                         "cached tokens": t["cached_prompt"] + t["cached_completion"],
                         "tokens/s": round(new / seconds, 1) if new and seconds else None,
                         "not counted": t["uncounted"], "counted by": ", ".join(t["counted_by"]),
                         "cost": (f"{cost[role]['amount']:.4f} {cost[role]['currency']}" if role in cost else "")})
    return pd.DataFrame(rows)


def overview(cards: list, registry: dict) -> pd.DataFrame:
    """One row per model, a headline column (value, %) and a CI column per task; missing cells are NaN."""
    tasks = sorted({c.card["task"]["name"] for c in cards})
    frame = models_frame(cards)
    if frame.empty:
        return frame
    cells: dict[tuple[str, str], object] = {}
    for c in cards:
        card = c.card
        task = registry[card["task"]["name"]]
        m = card["metrics"][task["headline"]]
        cells[(card["model"]["name"], headline_column(task))] = shown(m)
        cells[(card["model"]["name"], f"{task['name']} · 95% CI")] = ci_text(m)
        quality = judge_quality(card)
        if quality is not None:
            cells[(card["model"]["name"], f"{task['name']} · judge F1")] = round(quality["f1"], 1)
    for t in tasks:
        judged = any(col == f"{t} · judge F1" for _, col in cells)
        for col, missing in ((headline_column(registry[t]), None), (f"{t} · 95% CI", ""),
                             *(((f"{t} · judge F1", None),) if judged else ())):
            frame[col] = [cells.get((m, col), missing) for m in frame["model"]]
        frame[headline_column(registry[t])] = pd.to_numeric(frame[headline_column(registry[t])])
    scores = [c for c in frame.columns if " · " in c]
    return frame[["model", *scores, *[c for c in frame.columns if c != "model" and c not in scores]]]


def headlines(cards: list, registry: dict) -> pd.DataFrame:
    """Long form: each card's headline (value, %) with its CI, the task's better direction and column name."""
    rows = []
    for c in cards:
        card = c.card
        task = registry[card["task"]["name"]]
        m = card["metrics"][task["headline"]]
        k = 100 if is_share(m) else 1
        rows.append({"task": task["name"], "column": headline_column(task), "model": card["model"]["name"],
                     "value": shown(m), "ci_low": k * m["ci_low"], "ci_high": k * m["ci_high"],
                     "better": task.get("better", "higher")})
    return pd.DataFrame(rows, columns=["task", "column", "model", "value", "ci_low", "ci_high", "better"])


def ranks(points: pd.DataFrame) -> dict[str, int]:
    """Each model's rank on one headline (rows of `headlines` for one column): one plus the number of models whose
    whole interval lies on the better side of its own. Models whose intervals overlap are never ranked apart, so
    they share a rank; a rank says only what the data can tell apart."""
    if points.empty:
        return {}
    higher = points["better"].iloc[0] == "higher"
    lows, highs = points["ci_low"].to_numpy(), points["ci_high"].to_numpy()
    return {model: 1 + int(((lows > high) if higher else (highs < low)).sum())
            for model, low, high in zip(points["model"], lows, highs)}


ROW_PX, HEADER_PX = 35, 38  # st.dataframe's row and header heights


def table_height(rows: int) -> int:
    """Pixels that show every row of a table without an inner scroll bar."""
    return HEADER_PX + ROW_PX * max(rows, 1) + 3


def task_frame(cards: list, task: str) -> pd.DataFrame:
    """Every model on one task: each metric (value, %) with its CI."""
    rows = []
    for c in cards:
        card = c.card
        if card["task"]["name"] != task:
            continue
        row = {"model": card["model"]["name"], "verified": "yes" if verified(card) else "", "n": card["dataset"]["n"],
               "judges on human labels": judge_text(card), "panel": c.panel or "the task's"}
        for name, m in card["metrics"].items():
            row[name] = shown(m)
            row[f"{name} · 95% CI"] = ci_text(m)
        rows.append(row)
    return pd.DataFrame(rows)


def breakdown(cards: list, task: dict) -> pd.DataFrame:
    """Every card's breakdowns on one task as its kind lays them out (the headline by group, with CIs; F1 per class
    of every question for classify tasks): one row per model, family and group."""
    from benchmark.kinds import kind_class

    kind = kind_class(task["kind"])
    rows = [{"model": c.card["model"]["name"], **row} for c in cards if c.card["task"]["name"] == task["name"]
            for row in kind.breakdown_rows(c.card, task)]
    return pd.DataFrame(rows, columns=["model", "by", "group", "value", "ci_low", "ci_high"])


# a spreadsheet runs a cell that begins with one of these as a formula
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def defused(value):
    """A string a spreadsheet would run as a formula, made text by a leading single quote."""
    return "'" + value if isinstance(value, str) and value.startswith(FORMULA_START) else value


def to_csv(frame: pd.DataFrame) -> bytes:
    """The table as CSV; submitted text (model names, metric names in headers) cannot start a formula."""
    out = frame.copy()
    for i, dtype in enumerate(out.dtypes):
        if not pd.api.types.is_numeric_dtype(dtype):  # only a column of objects or strings holds text
            out.isetitem(i, out.iloc[:, i].map(defused))
    out.columns = [defused(c) for c in out.columns]
    return out.to_csv(index=False).encode("utf-8")
