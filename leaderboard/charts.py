"""The leaderboard's charts as Vega-Lite specs (plain dicts for `st.vega_lite_chart`): no chart library to import
or to validate a spec through, which would cost the first visitor of a fresh server a second."""

from __future__ import annotations

from dataclasses import asdict

import pandas as pd

from benchmark.submissions import TaskEntry

CHART_MODELS = 30  # models per panel of the headline chart: more are not readable, and cost the page seconds


def _field(name: str, kind: str = "quantitative", **more) -> dict:
    return {"field": name, "type": kind, **more}


def _tooltip(*names: str) -> list[dict]:
    return [_field(n, "nominal") if n in ("model", "group", "turn", "judging") else _field(n, format=".1f")
            for n in names]


def headline_chart(points: list) -> dict:
    """One panel per task: the best models' headlines (tables.Headline) with their 95% CIs, the best at the top;
    where unverified cards are among them, each point coloured by whether its card is verified."""
    panels, datasets = [], {}
    marked = not all(p.verified for p in points)
    point = {"x": _field("value")}
    if marked:
        point["color"] = _field("card", "nominal", title=None, scale={"domain": ("verified", "not verified")})
    columns = sorted({(p.task, p.column) for p in points})
    for i, (task, column) in enumerate(columns):
        part = [p for p in points if (p.task, p.column) == (task, column)]
        part = sorted(part, key=lambda p: p.value, reverse=part[0].better == "higher")[:CHART_MODELS]
        datasets[f"panel{i}"] = pd.DataFrame(
            [{**asdict(p), **({"card": "verified" if p.verified else "not verified"} if marked else {})}
             for p in part])
        # a fixed width: a concatenation cannot take the page's width, and "container" would overflow it by the labels
        panels.append({
            "title": column, "width": 560, "data": {"name": f"panel{i}"},
            "encoding": {"y": _field("model", "nominal", sort=[p.model for p in part], title=None,
                                     axis={"labelLimit": 240}),
                         "tooltip": _tooltip("model", "value", "ci_low", "ci_high")},
            "layer": [{"mark": {"type": "rule", "strokeWidth": 2},
                       "encoding": {"x": _field("ci_low", title=None), "x2": {"field": "ci_high"}}},
                      {"mark": {"type": "point", "filled": True, "size": 60}, "encoding": point}]})
    return {"title": f"Each model's headline with its 95% CI, by task (the best {CHART_MODELS} of each task where "
                     "there are more)", "datasets": datasets, "vconcat": panels}


TRADEOFF_NOTE = ("How to read it: each point is a model, each whisker its 95% interval. Left is safer (fewer unsafe "
                 "prompts answered in full), lower is more helpful (fewer safe prompts refused): the corner near zero "
                 "on both is the goal. A model near the top refuses what it should answer; one far right answers what "
                 "it should refuse.")


def tradeoff_chart(frame: pd.DataFrame, highlight: str | None = None) -> dict:
    """Safety against over-refusal: unsafe prompts answered in full (x) and safe prompts refused (y), each point's
    intervals as whiskers both ways, its model named beside it; `highlight`: the model a page is about."""
    frame = frame.assign(shown=frame["model"].eq(highlight).map({True: highlight, False: "other models"})
                         if highlight else "models")
    colour = _field("shown", "nominal", title=None)
    x = _field("unsafe", title="unsafe prompts answered in full (%)", scale={"domain": [0, 100]})
    y = _field("over", title="safe prompts refused, fully or in part (%)", scale={"domain": [0, 100]})
    tooltip = [_field("model", "nominal"), _field("task", "nominal"),
               *(_field(n, format=".1f") for n in ("unsafe", "unsafe_low", "unsafe_high", "over", "over_low",
                                                    "over_high"))]
    return {"title": "Safety and over-refusal: each model with both figures and their 95% intervals",
            "datasets": {"tradeoff": frame.reset_index(drop=True)}, "data": {"name": "tradeoff"},
            "width": 560, "height": 420,
            "layer": [{"mark": {"type": "rule"}, "encoding": {"x": _field("unsafe_low"), "x2": {"field": "unsafe_high"},
                                                               "y": y, "color": colour}},
                      {"mark": {"type": "rule"}, "encoding": {"y": _field("over_low"), "y2": {"field": "over_high"},
                                                               "x": x, "color": colour}},
                      {"mark": {"type": "point", "filled": True, "size": 70},
                       "encoding": {"x": x, "y": y, "color": colour, "tooltip": tooltip}},
                      {"mark": {"type": "text", "align": "left", "dx": 7, "dy": -7, "fontSize": 11},
                       "encoding": {"x": x, "y": y, "text": _field("model", "nominal")}}]}


def bars(frame: pd.DataFrame, title: str) -> dict:
    """One panel per group, a bar per model with its CI as a whisker (a whisker over an x-offset bar would sit at
    the bar's edge, so the groups are facets)."""
    encoding = {"x": _field("model", "nominal", title=None, axis={"labels": False, "ticks": False}),
                "color": _field("model", "nominal", title="model"),
                "tooltip": _tooltip("model", "group", "value", "ci_low", "ci_high",
                                    *(["judging"] if "judging" in frame.columns else []))}
    bar = {**encoding, "y": _field("value", title="%")}
    if "judging" in frame.columns:  # a group whose judges are not measured there, or are noise there, is drawn faint
        bar["opacity"] = {"condition": {"test": "datum.backed === true", "value": 1}, "value": 0.3}
    layers = [{"mark": "bar", "encoding": bar}]
    if frame["ci_low"].notna().any():
        layers.append({"mark": {"type": "rule", "strokeWidth": 2},
                       "encoding": {**encoding, "y": _field("ci_low"), "y2": {"field": "ci_high"},
                                    "color": {"value": "black"}}})
    return {"title": title, "datasets": {"groups": frame.reset_index(drop=True)}, "data": {"name": "groups"},
            "facet": {"column": _field("group", "nominal", title=None, sort=None,
                                       header={"labelOrient": "bottom", "labelAngle": -30, "labelAlign": "right"})},
            "spec": {"width": max(40, 14 * frame["model"].nunique()), "layer": layers}}


def curve(frame: pd.DataFrame, title: str) -> dict:
    """Activation by turn; a group that is not a turn number is left out."""
    frame = frame.assign(turn=pd.to_numeric(frame["group"], errors="coerce")).dropna(subset=["turn"])
    encoding = {"x": _field("turn", title="turn", axis={"tickMinStep": 1}),
                "color": _field("model", "nominal", title="model")}
    return {"title": title, "datasets": {"turns": frame.reset_index(drop=True)}, "data": {"name": "turns"},
            "layer": [{"mark": {"type": "area", "opacity": 0.15},
                       "encoding": {**encoding, "y": _field("ci_low"), "y2": {"field": "ci_high"}}},
                      {"mark": {"type": "line", "point": True},
                       "encoding": {**encoding, "y": _field("value", title="succeeded by this turn (%)"),
                                    "tooltip": _tooltip("model", "turn", "value")}}]}


def family_title(by: str, task: TaskEntry) -> str:
    """What one breakdown family shows (`by` is a submitted metric's field or a question's name)."""
    if by == "by_turn":
        return f"{task.headline}: by turn (the share of conversations the attack succeeded in by each turn)"
    if by == "class F1":
        return "F1 per class (no CI in the card)"
    if by.endswith(" · class F1"):
        return f"{by.removesuffix(' · class F1')}: F1 per class (no CI in the card)"
    return f"{task.headline} by {by}"


def family_chart(part: pd.DataFrame, by: str, task: TaskEntry, prefix: str = "") -> dict:
    """One breakdown family's chart: activation by turn as a curve, every other family as bars."""
    title = prefix + family_title(by, task)
    return curve(part, title) if by == "by_turn" else bars(part, title)
