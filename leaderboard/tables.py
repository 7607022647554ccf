"""The leaderboard's tables, built from accepted score cards (pure pandas: the app only lays them out)."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from benchmark.submissions import TaskEntry
from benchmark.submissions.summary import JudgeQuality, Metric

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
    "success_rate": "share of conversations in which the attacker made the model do what the goal asked within "
                    "the turn limit, as the goal judge reads its replies (%)",
    "corrected_unsafe_rate": "the unsafe rate corrected for the judges' errors (Rogan-Gladen: their sensitivity and "
                             "specificity measured on human labels; the interval resamples those labels too) (%)",
    "turn_unsafe_rate": "share of the target's replies that the judges flag (%)",
    "corrected_turn_unsafe_rate": "that share corrected for the judges' errors (Rogan-Gladen) (%)",
    "over_refusal": "share of safe prompts that only sound unsafe which the model refuses, fully or in part, as the "
                    "refusal judge labels its replies (%)",
}
# the two sides of a refusal: an over-refusal task's headline, and its rate of unsafe prompts answered in full
OVER_REFUSAL, UNSAFE_COMPLIANCE = "over_refusal", "unsafe_compliance"


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


@functools.lru_cache(maxsize=4096)
def size_bucket(text) -> str:
    b = parse_size(text)
    if b is None:
        return "unknown"
    return SIZES[0] if b < 1 else SIZES[1] if b < 10 else SIZES[2] if b < 100 else SIZES[3]


def shown(metric: Metric) -> float:
    """Shares as percentages; other units as they are."""
    return 100 * metric.value if metric.is_share else metric.value


def ci_text(metric: Metric) -> str:
    k = 100 if metric.is_share else 1
    return f"[{k * metric.ci_low:.1f}, {k * metric.ci_high:.1f}]"


def judge_text(quality: JudgeQuality | None) -> str:
    return "" if quality is None else quality.text()


def headline_column(task: TaskEntry) -> str:
    arrow = "↑" if task.better == "higher" else "↓"
    return f"{task.name} · {task.headline} {arrow}"


@dataclass(frozen=True)
class Standing:
    """A ranking page's cards: those it ranks, and those it shows apart below them, never ranked with them."""

    ranked: list  # verified and judged by their task's panel; with unverified ones asked for, those too (marked)
    unverified: list  # judged by their task's panel but not verified: shown apart unless asked for
    nonstandard: list  # judged by another panel than their task's (card.panel says how), verified or not


def standing(cards: list, with_unverified: bool = False) -> Standing:
    """The cards a ranking page ranks and those it shows apart. A card counts as verified when its verification
    block says so: the loader rejects a card whose block is not signed by a listed key or does not hold, so an
    accepted card's block is one a verifier signed."""
    standard = [c for c in cards if c.panel is None]
    unverified = [c for c in standard if not c.summary.verified]
    return Standing(ranked=standard if with_unverified else [c for c in standard if c.summary.verified],
                    unverified=[] if with_unverified else unverified,
                    nonstandard=[c for c in cards if c.panel is not None])


def verified_text(verified: bool) -> str:
    return "yes" if verified else "no"


def models_frame(cards: list) -> pd.DataFrame:
    """One row per model: its public metadata."""
    rows = {}
    for c in cards:
        summary = c.summary
        meta = summary.metadata
        row = rows.setdefault(summary.model, {
            "model": summary.model,
            "organisation": meta.get("organisation") or "",
            "parameters": meta.get("parameters") or "",
            "size": size_bucket(meta.get("parameters")),
            "open weights": yes_no(meta.get("open_weights")),
            "languages": ", ".join(meta.get("languages") or []),
            "licence": meta.get("license") or "",
            "kind": summary.kind,
            "cards": 0,
            "verified": 0,
        })
        row["cards"] += 1
        row["verified"] += summary.verified
    return pd.DataFrame(list(rows.values()))


def model_picked(summary, sizes: list[str], open_weights: str, licences: list[str], kinds: list[str]) -> bool:
    """Whether a card's model matches the overview's filters (an empty pick: any)."""
    meta = summary.metadata
    return ((not sizes or size_bucket(meta.get("parameters")) in sizes)
            and (open_weights == "any" or yes_no(meta.get("open_weights")) == open_weights)
            and (not licences or (meta.get("license") or "") in licences)
            and (not kinds or summary.kind in kinds))


def yes_no(value) -> str:
    return {True: "yes", False: "no"}.get(value, "")


def tokens_frame(cards: list) -> pd.DataFrame:
    """One row per card and role: the tokens its run read and wrote (asked now, and answered from the cache), the
    role's speed in new tokens per second of waiting, and the cost where its model declares prices."""
    rows = []
    for c in cards:
        run = c.record.run
        cost = run.cost.by_role if run.cost is not None else {}
        for role, t in (run.tokens or {}).items():
            new = t.prompt + t.completion
            seconds = (run.seconds or {}).get(role) or 0
            spent = cost.get(role)
            rows.append({"task": c.summary.task, "role": role, "prompt tokens": t.prompt,
                         "completion tokens": t.completion, "cached tokens": t.cached_prompt + t.cached_completion,
                         "tokens/s": round(new / seconds, 1) if new and seconds else None,
                         "not counted": t.uncounted, "counted by": ", ".join(t.counted_by),
                         "cost": f"{spent.amount:.4f} {spent.currency}" if spent is not None else ""})
    return pd.DataFrame(rows)


def overview(cards: list, registry: dict[str, TaskEntry]) -> pd.DataFrame:
    """One row per model, a headline column (value, %) and a CI column per task; missing cells are NaN."""
    tasks = sorted({c.summary.task for c in cards})
    frame = models_frame(cards)
    if frame.empty:
        return frame
    cells: dict[tuple[str, str], object] = {}
    judged = set()
    unverified: dict[str, list[str]] = {}
    unbacked: dict[str, list[str]] = {}
    for c in cards:
        summary = c.summary
        task = registry[summary.task]
        m = summary.headline
        if not summary.verified:
            unverified.setdefault(summary.model, []).append(summary.task)
        if summary.unbacked:
            unbacked.setdefault(summary.model, []).append(f"{summary.task}: {', '.join(summary.unbacked)}")
        cells[(summary.model, headline_column(task))] = shown(m)
        cells[(summary.model, f"{summary.task} · 95% CI")] = ci_text(m)
        if summary.judge is not None:
            cells[(summary.model, f"{summary.task} · judge F1")] = round(summary.judge.f1, 1)
            judged.add(summary.task)
    models = frame["model"].tolist()
    for t in tasks:
        for col, missing in ((headline_column(registry[t]), None), (f"{t} · 95% CI", ""),
                             *(((f"{t} · judge F1", None),) if t in judged else ())):
            frame[col] = [cells.get((m, col), missing) for m in models]
        frame[headline_column(registry[t])] = pd.to_numeric(frame[headline_column(registry[t])])
    marks = []
    if unverified:  # beside the name: a row's figures from an unverified card are never read as verified ones
        frame["not verified"] = [", ".join(sorted(unverified.get(m, []))) for m in models]
        marks = ["not verified"]
    if unbacked:  # a headline that averages languages where its judges are noise is no finding about them
        frame[UNBACKED] = ["; ".join(sorted(unbacked.get(m, []))) for m in models]
        marks.append(UNBACKED)
    scores = [c for c in frame.columns if " · " in c]
    return frame[["model", *marks, *scores,
                  *[c for c in frame.columns if c != "model" and c not in scores and c not in marks]]]


UNBACKED = "judges cannot back"  # the overview's column: per task, the languages its headline averages unbacked


@dataclass(frozen=True)
class Headline:
    """One card's headline as the overview ranks and charts it: value and 95% CI in the shown unit (%, for shares)."""

    task: str
    column: str  # the overview's column: task, headline and the arrow of its better direction
    model: str
    value: float
    ci_low: float
    ci_high: float
    better: str  # higher | lower
    verified: bool


def headlines(cards: list, registry: dict[str, TaskEntry]) -> list[Headline]:
    """Each card's headline with its CI, the task's better direction and column name."""
    rows = []
    for c in cards:
        summary, task = c.summary, registry[c.summary.task]
        m = summary.headline
        k = 100 if m.is_share else 1
        rows.append(Headline(task=summary.task, column=headline_column(task), model=summary.model, value=shown(m),
                             ci_low=k * m.ci_low, ci_high=k * m.ci_high, better=task.better,
                             verified=summary.verified))
    return rows


def tradeoff(cards: list, registry: dict[str, TaskEntry]) -> pd.DataFrame:
    """Each card of an over-refusal task (headline over_refusal, beside it unsafe_compliance): the share of unsafe
    prompts the model answered in full (x) and of safe prompts it refused (y), in %, each with its 95% interval."""
    rows = []
    for c in cards:
        task = registry.get(c.summary.task)
        if task is None or task.headline != OVER_REFUSAL:
            continue
        unsafe = c.record.metrics.get(UNSAFE_COMPLIANCE)
        if unsafe is None:
            continue
        over, unsafe = c.summary.headline, Metric.of(unsafe)
        rows.append({"model": c.summary.model, "task": c.summary.task, "verified": c.summary.verified,
                     **{f"{name}{part}": 100 * getattr(m, field) for name, m in (("unsafe", unsafe), ("over", over))
                        for part, field in (("", "value"), ("_low", "ci_low"), ("_high", "ci_high"))}})
    return pd.DataFrame(rows, columns=["model", "task", "verified", "unsafe", "unsafe_low", "unsafe_high", "over",
                                       "over_low", "over_high"])


def ranks(points: list[Headline]) -> dict[str, int]:
    """Each model's rank on one headline (the `headlines` of one column): one plus the number of models whose whole
    interval lies on the better side of its own. Models whose intervals overlap are never ranked apart, so they share
    a rank; a rank says only what the data can tell apart."""
    if not points:
        return {}
    lows = np.array([p.ci_low for p in points])
    highs = np.array([p.ci_high for p in points])
    if points[0].better == "higher":  # better: a low end above this high end
        better = len(lows) - np.searchsorted(np.sort(lows), highs, side="right")
    else:  # better: a high end below this low end
        better = np.searchsorted(np.sort(highs), lows, side="left")
    return {p.model: 1 + int(b) for p, b in zip(points, better)}


ROW_PX, HEADER_PX = 35, 38  # st.dataframe's row and header heights


# rows a table shows at once; more scroll inside it (a browser takes about a second more to draw a page-high table of
# a thousand rows: benchmarks/leaderboard_browser.py)
ROWS_IN_VIEW = 50


def table_height(rows: int) -> int:
    """Pixels that show every row of a table of up to ROWS_IN_VIEW rows without an inner scroll bar."""
    return HEADER_PX + ROW_PX * min(max(rows, 1), ROWS_IN_VIEW) + 3


def task_frame(cards: list, task: str) -> pd.DataFrame:
    """Every model on one task: each metric (value, %) with its CI."""
    rows = []
    for c in cards:
        summary = c.summary
        if summary.task != task:
            continue
        row = {"model": summary.model, "verified": verified_text(summary.verified), "n": summary.n,
               "reads the task's language": reads_language(c), "judges on human labels": judge_text(summary.judge),
               "panel": c.panel or "the task's"}
        for name, m in c.record.metrics.items():
            m = Metric.of(m)
            row[name] = shown(m)
            row[f"{name} · 95% CI"] = ci_text(m)
        rows.append(row)
    return pd.DataFrame(rows)


def reads_language(c) -> str:
    """Whether the model's declared languages include its task's: an English classifier's row on a Korean task is a
    baseline that cannot read the text, and the board says so beside its score. Blank where the task has several
    languages or the model declares none."""
    task, languages = c.record.task.language, c.summary.metadata.get("languages") or []
    if task in (None, "multi") or not languages:
        return ""
    return "yes" if task in languages else f"no: reads {', '.join(map(str, languages))}"


def apart_frame(cards: list) -> pd.DataFrame:
    """Cards a ranking page shows apart from its ranking: one row each, by model and task (an order by score would
    read as a rank)."""
    rows = [{"model": c.summary.model, "task": c.summary.task, "headline": round(shown(c.summary.headline), 1),
             "95% CI": ci_text(c.summary.headline), "verified": verified_text(c.summary.verified),
             "panel": c.panel or "the task's"} for c in cards]
    frame = pd.DataFrame(rows, columns=["model", "task", "headline", "95% CI", "verified", "panel"])
    return frame.sort_values(["model", "task"], kind="stable", ignore_index=True)


def breakdown(cards: list, task: TaskEntry) -> pd.DataFrame:
    """Every card's breakdowns on one task as its kind lays them out (the headline by group, with CIs; F1 per class
    of every question for classify tasks): one row per model, family and group."""
    from benchmark.kinds import kind_class

    kind = kind_class(task.kind)
    rows = [{"model": c.summary.model, **row} for c in cards if c.summary.task == task.name
            for row in kind.breakdown_rows(c.card, task.config)]
    frame = pd.DataFrame(rows, columns=["model", "by", "group", "value", "ci_low", "ci_high", "judging", "backed"])
    # how far a group's rate can be read, where its kind says (attack: its judges' J in each language)
    return frame if frame["judging"].notna().any() else frame.drop(columns=["judging", "backed"])


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


def model_row(c, task: TaskEntry) -> dict:
    """One card's row in a model's table of cards."""
    card, summary = c.record, c.summary
    m = summary.headline
    judge_error = card.breakdown.get("judge_error")
    fixed = card.metrics.get(judge_error.get("corrected")) if isinstance(judge_error, dict) else None
    fixed = Metric.of(fixed) if fixed is not None else None
    return {"task": summary.task, "headline": task.headline, "value": shown(m), "95% CI": ci_text(m),
            "corrected for judge error": (f"{judge_error['corrected']}: {shown(fixed):.1f} {ci_text(fixed)}"
                                          if fixed is not None else
                                          str(judge_error.get("corrected", "")) if isinstance(judge_error, dict)
                                          else ""),
            "judges on human labels": judge_text(summary.judge),
            UNBACKED: ", ".join(summary.unbacked),
            "panel": c.panel or "the task's",
            "better": task.better, "n": summary.n,
            "verified": verified_text(summary.verified), "run": card.run.started_at,
            "suite commit": (card.run.git_commit or "")[:10],
            "judges": ", ".join(f"{j.step}: {j.name}" for j in card.judges or [])}


LANGUAGES = {"en": "English", "zh": "Chinese", "ko": "Korean", "multi": "Several languages"}


def language_name(code: str) -> str:
    """A task's language as the board names it (the code itself where it has no name here)."""
    return LANGUAGES.get(code, code)


def language_order(code: str) -> tuple:
    """The board's order of languages: those it names in its own order, then the others by code."""
    names = list(LANGUAGES)
    return (names.index(code), "") if code in names else (len(names), code)
