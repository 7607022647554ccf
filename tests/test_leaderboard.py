"""The leaderboard: each page through Streamlit's AppTest, then the real app in a headless Chromium."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import quote

import pandas as pd
import pytest
from conftest import copy_cards, copy_published

from benchmark import BenchmarkError
from benchmark import submissions as S
from benchmark.submissions import configs
from benchmark.submissions import samples as SF
from benchmark.kinds import kind_class
from benchmark.submissions.rules import rescored
from benchmark.run.card_record import ScoreCard

REPO = Path(__file__).resolve().parents[1]
APP = REPO / "leaderboard" / "app.py"
SERVER = REPO / "leaderboard" / "serve.py"  # how the board is served: app.py's pages, the cards loaded at its start
# the published folders the board is shown, and the cards of each it is shown
PUBLISHED = {"profanity-check": ("diasafety",), "diasafety-detector": ("diasafety",),
             "blenderbot-small": ("diasafety_chatbot",), "dialogpt-small": ("diasafety_chatbot",),
             "ricota-solar": ("ricota",), "gpt-4-xstest": ("xstest",), "mistral-7b-instruct-xstest": ("xstest",)}
# a model name with Markdown and HTML entities: either would make an element or another text on a page that rendered
# it (a folder's name holds none of < > : " / \\ | ? *, so raw HTML is the organisation's, below)
HOSTILE = "&lt;b&gt; ![x](x) [y](z) _e_ `c`"
ARTIFACTS = Path(os.environ.get("BENCHMARK_TEST_ARTIFACTS", REPO / "results" / "test-artifacts"))


def _copy_as(src: Path, dst: Path, name: str, organisation: str | None = None, tasks: tuple | None = None,
             prices: dict | None = None) -> None:
    """A published folder under another model name (its verification no longer applies); `tasks`: only their cards;
    `prices`: what its model declares."""
    copy_cards(src, dst, tasks)
    model = configs.read_yaml(dst / S.MODEL_FILE)
    model["name"] = name
    if prices:
        model["prices"] = prices
    if organisation:
        model["metadata"]["organisation"] = organisation
    import yaml

    (dst / S.MODEL_FILE).write_text(yaml.safe_dump(model, sort_keys=False))
    for card_path in dst.glob("*.json"):
        card = json.loads(card_path.read_text())
        card.pop("verification", None)
        card["model"]["name"], card["model"]["config"] = name, model
        card["model"]["metadata"] = model["metadata"]
        card_path.write_text(json.dumps(card))


def _own_outputs(folder: Path, task: str) -> None:
    """A copied classifier card made the folder's own results (a board refuses another folder's outputs): every safe
    verdict's score a millionth lower, so each verdict, and every metric, stays what it was."""
    samples = SF.read_samples(folder / (task + S.SAMPLES_SUFFIX))
    for s in samples:
        if not s["output"]["unsafe"]:
            s["output"]["score"] *= 1 - 1e-6
    card = json.loads((folder / (task + S.CARD_SUFFIX)).read_text())
    card["samples"]["sha256"] = SF.write_samples(samples, folder / (task + S.SAMPLES_SUFFIX))
    (folder / (task + S.CARD_SUFFIX)).write_text(json.dumps(card))


N_SEEDS = 150  # toxicchat's pinned number of seed conversations


def _dialogue_card(dst: Path) -> None:
    """SmolLM2's published toxicchat card under another name, its conversations rewritten for the tests (texts that
    look like HTML and Markdown; activation at turns 1 and 3), its metrics derived from them as validation does."""
    _copy_as(S.SUBMISSIONS_DIR / "smollm2-135m-instruct", dst, dst.name,
             prices={"input_per_million": 2.5, "output_per_million": 10.0, "currency": "USD"})
    for f in dst.iterdir():
        if f.name != S.MODEL_FILE and not f.name.startswith("toxicchat."):
            f.unlink()

    harm_threshold = json.loads((REPO / "judges" / "reply-harm" / "judge.json").read_text())["threshold"]

    def turn(k, flagged):
        # votes as the judges record them: a judge's margin is its score less its threshold (the toxicity judge's
        # 0.52, reply-harm's as shipped, reply-refusal's 0.292241, whose phrases alone decide in a conversation)
        utterance = {"flagged": False, "tie": False, "votes": {"utterance": {
            "flagged": False, "score": 0.03, "margin": 0.03 - 0.52}}}
        refused = {"flagged": False, "tie": False, "votes": {"refused": {
            "flagged": False, "score": 0.0, "margin": -0.292241, "label": "full_compliance", "phrase": None,
            "on_topic": None}}}
        score = 0.91 if flagged else 0.12
        harm = {"flagged": flagged, "tie": False, "votes": {"harm": {"flagged": flagged, "score": score,
                                                                     "margin": score - harm_threshold}}}
        return {"turn": k, "attacker": "sha256:" + "0" * 64 if k == 1 else f"attacker line {k} <b>bold</b>",
                "target": f"target reply {k} **not bold**", "verdict": "harm" if flagged else "none",
                "judgements": {"refused": refused, "harm": harm}, "attacker_judgements": {"utterance": utterance}}

    published = SF.read_samples(dst / "toxicchat.samples.jsonl.gz")
    assert len(published) == N_SEEDS
    samples = [{**p, "turns": [turn(k, k == [0, 1, 3][i % 3]) for k in range(1, 1 + ([2, 1, 3][i % 3]))],
                "activated_turn": [None, 1, 3][i % 3], "trigger_flagged": None if i % 3 == 0 else False, "error": None}
               for i, p in enumerate(published)]
    sha = SF.write_samples(samples, dst / "toxicchat.samples.jsonl.gz")
    card = json.loads((dst / "toxicchat.json").read_text())
    card["samples"] = {"file": "toxicchat.samples.jsonl.gz", "sha256": sha, "n": N_SEEDS}
    card["metrics"], card["breakdown"] = rescored(ScoreCard.model_validate(card), samples)  # what validation derives from the samples
    card["metrics_version"] = kind_class(card["task"]["kind"]).metrics_version()  # the metrics rescored has
    counts = {"prompt": 1200, "completion": 300, "cached_prompt": 50, "cached_completion": 10, "uncounted": 0}
    card["run"]["tokens"] = {"model": {**counts, "counted_by": ["tokenizer"]},
                             "judge utterance": {**counts, "completion": 0, "cached_completion": 0,
                                                 "counted_by": ["tokenizer"]}}
    card["run"]["seconds"] = {**card["run"]["seconds"], "model": 3.0}
    # 1,200 read at 2.5 and 300 written at 10 per million
    card["run"]["cost"] = {"by_role": {"model": {"amount": 0.006, "currency": "USD"}}, "total": {"USD": 0.006}}
    (dst / "toxicchat.json").write_text(json.dumps(card))


@pytest.fixture(scope="module")
def fixture_root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("submissions")
    for name in PUBLISHED:
        copy_published(name, root / name, PUBLISHED[name])
    _copy_as(root / "profanity-check", root / HOSTILE, HOSTILE, organisation="**bold** <script>alert(2)</script>")
    _own_outputs(root / HOSTILE, "diasafety")
    _dialogue_card(root / "dialogue-fixture")
    _copy_as(root / "profanity-check", root / "broken-card", "broken-card")
    (root / "broken-card" / "diasafety.json").write_text("{ this is not json")
    _copy_as(root / "profanity-check", root / "code-config", "code-config")
    with open(root / "code-config" / S.MODEL_FILE, "a") as f:
        f.write("_target_: os.system\n")
    return root


@pytest.fixture
def app(fixture_root, monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("BENCHMARK_SUBMISSIONS", str(fixture_root))
    monkeypatch.delenv("BENCHMARK_DATA_ROOT", raising=False)
    at = AppTest.from_file(str(APP), default_timeout=120)
    return at


def _odd(root: Path, name: str, metadata: dict | None = None, edit=None, samples=None) -> None:
    """A copy of the published profanity-check card under another name, with odd metadata, an edited card or
    another samples file (bytes, or a list of samples)."""
    _copy_as(S.SUBMISSIONS_DIR / "profanity-check", root / name, name, tasks=("diasafety",))
    folder = root / name
    if metadata:
        import yaml

        model = configs.read_yaml(folder / S.MODEL_FILE)
        model["metadata"].update(metadata)
        (folder / S.MODEL_FILE).write_text(yaml.safe_dump(model, sort_keys=False))
    card = json.loads((folder / "diasafety.json").read_text())
    card["model"]["metadata"].update(metadata or {})
    if edit:
        edit(card)
    if isinstance(samples, bytes):
        (folder / "diasafety.samples.jsonl.gz").write_bytes(samples)
    elif samples is not None:
        card["samples"].update(sha256=SF.write_samples(samples, folder / "diasafety.samples.jsonl.gz"), n=len(samples))
    (folder / "diasafety.json").write_text(json.dumps(card))


def _per_class(value):
    def edit(card):
        card["breakdown"]["per_class"] = value
    return edit


def _markdown_question(card):
    """Markdown in a breakdown's question (a metric's name cannot hold it: the card's record refuses it)."""
    card["breakdown"] = {"[click](https://evil)": card["breakdown"]}


ODD_SHOWN = ["odd-parameters", "odd-turns", "odd-samples-ids", "odd-samples-bytes", "odd-markdown"]
ODD_REFUSED = ["odd-open-weights", "odd-languages", "odd-f1-missing", "odd-class-list", "odd-per-class-list"]


@pytest.fixture(scope="module")
def odd_root(tmp_path_factory) -> Path:
    """Cards that checks could let through but that no table can hold as they are, beside ones it can."""
    root = tmp_path_factory.mktemp("odd")
    _odd(root, "odd-open-weights", metadata={"open_weights": [1]})
    _odd(root, "odd-languages", metadata={"languages": [1, 2]})
    _odd(root, "odd-parameters", metadata={"parameters": "1.2.3B"})
    _odd(root, "odd-f1-missing", edit=_per_class({"Safe": {"precision": 0.5, "recall": 0.5}}))
    _odd(root, "odd-class-list", edit=_per_class({"Safe": [0.5, 0.5, 0.5]}))
    _odd(root, "odd-per-class-list", edit=_per_class([0.5, 0.5]))
    _odd(root, "odd-samples-ids", samples=[{"prediction": "Safe", "target": "Safe", "output": "Safe", "error": None}
                                           for _ in range(3)])
    _odd(root, "odd-samples-bytes", samples=b"\x00 not gzip \xff")
    _odd(root, "odd-markdown", edit=_markdown_question)
    _dialogue_card(root / "odd-turns")
    card = json.loads((root / "odd-turns" / "toxicchat.json").read_text())
    card["metrics"]["activation_rate.by_turn.x"] = {"value": 0.5, "ci_low": 0.4, "ci_high": 0.6, "n": 30}
    (root / "odd-turns" / "toxicchat.json").write_text(json.dumps(card))
    return root


def _accept_all(root, *args, **kwargs):
    """A loader whose checks let every readable card through, so that the app's own defences are what is tested
    (whatever the loader's checks catch now or later)."""
    out = S.Loaded()
    for path in sorted(Path(root).glob("*/*.json")):
        out.cards.append(S.Card(path, json.loads(path.read_text()), configs.read_yaml(path.parent / S.MODEL_FILE)))
    return out


@pytest.fixture
def odd_app(odd_root, monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setattr(S, "load", _accept_all)
    monkeypatch.setenv("BENCHMARK_SUBMISSIONS", str(odd_root))
    monkeypatch.delenv("BENCHMARK_DATA_ROOT", raising=False)
    return AppTest.from_file(str(APP), default_timeout=120)


def _tables():
    if str(REPO / "leaderboard") not in sys.path:
        sys.path.insert(0, str(REPO / "leaderboard"))
    import tables as T

    return T


def _charts(at) -> list[dict]:
    return [json.loads(e.proto.spec) for e in at.main if e.type in ("vega_lite_chart", "arrow_vega_lite_chart")]


def _marks(spec: dict) -> set[str]:
    """Every mark type in a Vega-Lite spec, however it is layered or faceted."""
    found = set()
    if isinstance(spec, dict):
        mark = spec.get("mark")
        if mark:
            found.add(mark["type"] if isinstance(mark, dict) else mark)
        for v in spec.values():
            found |= _marks(v)
    elif isinstance(spec, list):
        for v in spec:
            found |= _marks(v)
    return found


def headline(root: Path, model: str, task: str) -> float:
    card = json.loads((root / model / f"{task}.json").read_text())
    head = S.task_registry()[task].headline
    return 100 * card["metrics"][head]["value"]


def test_overview_shows_each_models_headlines_and_blank_missing_cells(app, fixture_root, monkeypatch):
    import streamlit as st

    heights, dataframe = {}, st.dataframe  # the height asked for (the test tree does not keep it)

    def spy(*args, **kwargs):
        heights[kwargs.get("key")] = kwargs.get("height")
        return dataframe(*args, **kwargs)

    monkeypatch.setattr(st, "dataframe", spy)
    at = app.run()
    assert not at.exception
    frame = at.dataframe[0].value
    assert set(frame["model"]) == set(PUBLISHED)  # the verified cards; the copies below, not ranked
    unverified = at.dataframe[1].value
    assert set(unverified["model"]) == {HOSTILE, "dialogue-fixture"} and set(unverified["verified"]) == {"no"}
    by_model = frame.set_index("model")
    col = "diasafety · macro_f1 ↑"
    assert by_model.loc["diasafety-detector", col] == pytest.approx(headline(fixture_root, "diasafety-detector",
                                                                              "diasafety"))
    assert by_model.loc["blenderbot-small", "diasafety_chatbot · unsafe_rate ↓"] == pytest.approx(
        headline(fixture_root, "blenderbot-small", "diasafety_chatbot"))
    assert pd.isna(by_model.loc["blenderbot-small", col])  # no card: blank, not zero
    assert by_model.loc["blenderbot-small", "diasafety · 95% CI"] == ""
    table = at.dataframe[0].proto
    assert table.HasField("placeholder") and table.placeholder == ""  # shown as an empty cell, not "None"
    assert by_model.loc["diasafety-detector", "diasafety · 95% CI"].startswith("[")
    # sorted by the first task's headline, best first (macro F1: higher is better)
    ranked = frame[col].dropna().tolist()
    assert ranked == sorted(ranked, reverse=True)
    # every row shows: the table is as tall as its rows, no inner scroll
    assert heights["overview_table"] >= 35 * (len(frame) + 1)


def test_a_long_table_scrolls_inside_past_the_rows_in_view():
    T = _tables()
    assert T.table_height(3) < T.table_height(T.ROWS_IN_VIEW) == T.table_height(1000)
    assert T.table_height(T.ROWS_IN_VIEW) >= 35 * (T.ROWS_IN_VIEW + 1)


def test_overview_ranks_by_the_chosen_task_in_its_better_direction(app):
    at = app.run()
    lower = "diasafety_chatbot · unsafe_rate ↓"
    at.selectbox(key="f_rank").set_value(lower).run()
    frame = at.dataframe[0].value
    ranked = frame[lower].tolist()
    known = [v for v in ranked if not pd.isna(v)]
    assert len(known) >= 2 and known == sorted(known)  # lower is better: the lowest first
    assert all(pd.isna(v) for v in ranked[len(known):])  # models without that card last


def test_overview_chart_shows_each_headline_with_its_ci(app, fixture_root):
    from streamlit.dataframe_util import convert_arrow_bytes_to_pandas_df

    at = app.run()
    element = next(e for e in at.main if e.type in ("vega_lite_chart", "arrow_vega_lite_chart")
                   and "vconcat" in json.loads(e.proto.spec))
    chart = json.loads(element.proto.spec)
    rows = [r for d in element.proto.datasets for r in convert_arrow_bytes_to_pandas_df(d.data.data).to_dict("records")]
    card = json.loads((fixture_root / "blenderbot-small" / "diasafety_chatbot.json").read_text())["metrics"]
    point = next(r for r in rows if r["model"] == "blenderbot-small" and r["task"] == "diasafety_chatbot")
    m = card["unsafe_rate"]
    assert (point["value"], point["ci_low"], point["ci_high"]) == pytest.approx(
        (100 * m["value"], 100 * m["ci_low"], 100 * m["ci_high"]))
    tasks = {r["task"] for r in rows}
    assert len(chart["vconcat"]) == len(tasks) >= 3  # one panel per task
    assert {"rule", "point"} <= _marks(chart)


def _tradeoff(at) -> tuple[dict, list[dict]]:
    """The safety and over-refusal chart on a page, and its points."""
    from streamlit.dataframe_util import convert_arrow_bytes_to_pandas_df

    element = next(e for e in at.main if e.type in ("vega_lite_chart", "arrow_vega_lite_chart")
                   and json.loads(e.proto.spec).get("data") == {"name": "tradeoff"})
    return json.loads(element.proto.spec), [r for d in element.proto.datasets
                                            for r in convert_arrow_bytes_to_pandas_df(d.data.data).to_dict("records")]


def test_overview_draws_safety_against_over_refusal_with_both_intervals(app, fixture_root):
    at = app.run()
    assert not at.exception
    chart, rows = _tradeoff(at)
    assert sorted(r["model"] for r in rows) == ["gpt-4-xstest", "mistral-7b-instruct-xstest"]
    for r in rows:
        metrics = json.loads((fixture_root / r["model"] / "xstest.json").read_text())["metrics"]
        for name, key in (("unsafe", "unsafe_compliance"), ("over", "over_refusal")):
            m = metrics[key]
            assert (r[name], r[f"{name}_low"], r[f"{name}_high"]) == pytest.approx(
                (100 * m["value"], 100 * m["ci_low"], 100 * m["ci_high"]))
    # whiskers both ways, the points, and each model named beside its point
    rules = [layer["encoding"] for layer in chart["layer"] if layer["mark"]["type"] == "rule"]
    assert {(e.get("x", {}).get("field"), e.get("x2", {}).get("field")) for e in rules} >= {("unsafe_low", "unsafe_high")}
    assert {(e.get("y", {}).get("field"), e.get("y2", {}).get("field")) for e in rules} >= {("over_low", "over_high")}
    assert {"point", "text"} <= _marks(chart)
    assert any("corner near zero on both is the goal" in c.value for c in at.caption)
    # Mistral without a system prompt answers most unsafe prompts: it sits right of GPT-4, and lower
    by = {r["model"]: r for r in rows}
    assert by["mistral-7b-instruct-xstest"]["unsafe"] > 50 > by["gpt-4-xstest"]["unsafe"]


def test_a_model_page_shows_its_model_marked_among_the_others_on_the_tradeoff(app):
    at = app
    at.query_params["page"] = "Models"
    at.query_params["model"] = "gpt-4-xstest"
    at.run()
    assert not at.exception
    chart, rows = _tradeoff(at)
    assert {r["model"]: r["shown"] for r in rows} == {"gpt-4-xstest": "gpt-4-xstest",
                                                      "mistral-7b-instruct-xstest": "other models"}
    # a model without an over-refusal card has no such chart
    from streamlit.testing.v1 import AppTest

    other = AppTest.from_file(str(APP), default_timeout=120)
    other.query_params.update(page="Models", model="blenderbot-small")
    other.run()
    assert not other.exception and "blenderbot" in other.title[0].value
    assert _charts(other) and not any(c.get("data") == {"name": "tradeoff"} for c in _charts(other))


def test_ranks_count_only_the_models_an_interval_apart():
    T = _tables()

    def points(better, *rows):
        return [T.Headline(task="t", column="t · x", model=m, value=(lo + hi) / 2, ci_low=lo, ci_high=hi, better=better,
                           verified=True) for m, lo, hi in rows]

    # a and b overlap: one rank; c lies wholly above both; d overlaps b but not a
    higher = points("higher", ("a", 10, 20), ("b", 15, 25), ("c", 30, 40), ("d", 21, 29))
    assert T.ranks(higher) == {"c": 1, "d": 2, "b": 2, "a": 3}
    lower = points("lower", ("a", 10, 20), ("b", 15, 25), ("c", 30, 40))
    assert T.ranks(lower) == {"a": 1, "b": 1, "c": 3}
    assert T.ranks(points("higher", ("only", 0, 1))) == {"only": 1}


def test_the_overview_ranks_in_groups(app):
    at = app.run()
    at.checkbox(key="f_unverified").check().run()  # the hostile-named copy is not verified
    column = "diasafety · macro_f1 ↑"
    at.selectbox(key="f_rank").set_value(column).run()
    frame = at.dataframe[0].value.set_index("model")
    ranked = frame[frame[column].notna()]
    # the hostile-named folder is a copy of profanity-check's card: the same interval, so the same rank, one below
    # the detector, whose interval lies wholly above theirs
    assert ranked.loc["diasafety-detector", "rank"] == 1
    assert ranked.loc["profanity-check", "rank"] == ranked.loc[HOSTILE, "rank"] == 2
    assert frame[frame[column].isna()]["rank"].isna().all()  # no card on the task: no rank
    assert list(frame["rank"].dropna()) == sorted(frame["rank"].dropna())


def test_filters_by_licence_and_kind_of_model(app):
    at = app.run()
    at.multiselect(key="f_kind").set_value(["recorded answers"]).run()
    assert set(at.dataframe[0].value["model"]) == {"blenderbot-small", "dialogpt-small", "ricota-solar",
                                                   "gpt-4-xstest", "mistral-7b-instruct-xstest"}
    at.multiselect(key="f_kind").set_value(["classifier"]).run()
    assert {"profanity-check", "diasafety-detector"} <= set(at.dataframe[0].value["model"])
    assert "blenderbot-small" not in set(at.dataframe[0].value["model"])
    at.multiselect(key="f_kind").set_value([]).run()
    at.multiselect(key="f_licence").set_value(["MIT"]).run()
    assert "profanity-check" in set(at.dataframe[0].value["model"])
    assert set(at.dataframe[0].value["licence"]) == {"MIT"}


def test_the_overview_lists_its_tasks_under_their_language(app):
    at = app.run()
    texts = [m.value for m in at.markdown]
    heads = [t for t in texts if t in ("*English*", "*Korean*", "*Chinese*", "*Several languages*")]
    assert heads[:2] == ["*English*", "*Korean*"]  # the board's order, only the languages of the cards shown
    english, korean = texts.index("*English*"), texts.index("*Korean*")
    assert any(t.startswith("- **ricota** (ko)") for t in texts[korean:])
    assert not any(t.startswith("- **ricota**") for t in texts[english:korean])
    assert any(t.startswith("- **diasafety** (en)") for t in texts[english:korean])


def test_filters_change_the_rows(app):
    at = app.run()
    at.multiselect(key="f_language").set_value(["ko"]).run()
    frame = at.dataframe[0].value
    assert list(frame["model"]) == ["ricota-solar"]
    assert [c for c in frame.columns if "·" in c] == ["ricota · test_purpose.macro_f1 ↑", "ricota · 95% CI"]
    at.multiselect(key="f_language").set_value([]).run()
    at.selectbox(key="f_open").set_value("no").run()
    assert set(at.dataframe[0].value["model"]) == {"ricota-solar", "gpt-4-xstest"}
    at.selectbox(key="f_open").set_value("any").run()
    at.multiselect(key="f_size").set_value(["10–100B"]).run()
    assert list(at.dataframe[0].value["model"]) == ["ricota-solar"]  # 10.7B
    at.multiselect(key="f_size").set_value(["< 1B"]).run()
    assert "ricota-solar" not in set(at.dataframe[0].value["model"])
    at.multiselect(key="f_size").set_value([]).run()
    assert HOSTILE not in set(at.dataframe[0].value["model"])  # its copied card is not verified
    at.checkbox(key="f_unverified").check().run()
    assert HOSTILE in set(at.dataframe[0].value["model"])


# ------------------------------------------- what a ranking holds: verified cards judged by their task's panel, only

# each card below from another published card: a board refuses a card whose outputs are another folder's
RANKED = {"smollm2-135m-instruct", "ricota-chatgpt-v1"}  # verified, the task's panel (and a judged task's card)
UNSIGNED = {"unsigned-profanity", "unsigned-ricota", "failed-check"}  # the task's panel, not verified
OTHER_PANEL = {"other-panel", "signed-other-panel"}  # judged by another context judge than the task's
JUDGED = ("blenderbot-small", "blenderbot-medium", "blenderbot-large", "dialogpt-small", "dialogpt-medium")


def _published(name: str, task: str) -> Path:
    """A published folder that holds a card of `task`."""
    folder = S.SUBMISSIONS_DIR / name
    for f in (S.MODEL_FILE, task + S.CARD_SUFFIX, task + S.SAMPLES_SUFFIX):
        assert (folder / f).is_file(), f"{folder / f} is published"
    return folder


def _edit(path: Path, change) -> None:
    card = json.loads(path.read_text())
    change(card)
    path.write_text(json.dumps(card))


def _other_context_judge(card) -> None:
    """The context judge's config changed where no verdict shows it: valid, but not the task's panel as shipped."""
    from benchmark.identity import model_sha256

    judge = next(j for j in card["judges"] if j["step"] == "context")
    judge["config"]["max_length"] = 64
    judge["config_sha256"] = model_sha256(configs.model_config_node(judge["config"]))


def _signed(key: Path, published: dict, **figures):
    """A verification of the card as it is now, signed with `key`, from a published card's block with `figures`."""
    from benchmark.identity import card_sha256
    from benchmark.run.card_record import VerificationResult
    from benchmark.submissions.signing import sign, verified_from

    def change(card):
        block = {k: v for k, v in published["verification"].items() if k not in ("key_id", "signature")}
        block.update(figures, card_sha256=card_sha256(card))
        block["verified"] = verified_from(VerificationResult.model_validate(block))
        card["verification"] = sign(card, block, key)
    return change


@pytest.fixture(scope="module")
def standing_root(tmp_path_factory) -> tuple[Path, Path]:
    """Verified published cards of the task's panel beside cards that are not verified (no verification, a signed one
    that failed, one with another card's) and cards judged by another panel (unverified, and signed); the keys file
    that lists the published keys and the test's own."""
    from benchmark.submissions.signing import keygen

    judged = list(JUDGED)
    root = tmp_path_factory.mktemp("standing")
    key, keys = root.parent / f"{root.name}.pem", root.parent / f"{root.name}-keys.json"
    keys.write_text(json.dumps({**json.loads((S.SUBMISSIONS_DIR / "verifier_keys.json").read_text()),
                                **json.loads(keygen(key))}))
    smollm2 = root / "smollm2-135m-instruct"
    smollm2.mkdir()
    for task in ("diasafety", "ricota"):
        for f in (S.MODEL_FILE, task + S.CARD_SUFFIX, task + S.SAMPLES_SUFFIX):
            shutil.copy(_published("smollm2-135m-instruct", task) / f, smollm2 / f)
    shutil.copytree(_published("ricota-chatgpt-v1", "ricota"), root / "ricota-chatgpt-v1")
    shutil.copytree(_published(judged[0], "diasafety_chatbot"), root / judged[0])
    _copy_as(_published("profanity-check", "diasafety"), root / "unsigned-profanity", "unsigned-profanity",
             tasks=("diasafety",))
    _copy_as(_published("ricota-solar", "ricota"), root / "unsigned-ricota", "unsigned-ricota")
    qwen = "qwen2.5-coder-0.5b-instruct"
    _copy_as(_published(qwen, "diasafety"), root / "failed-check", "failed-check", tasks=("diasafety",))
    _edit(root / "failed-check" / "diasafety.json",
          _signed(key, json.loads((S.SUBMISSIONS_DIR / qwen / "diasafety.json").read_text()), failed=1))
    _copy_as(_published(qwen, "ricota"), root / "copied-signature", "copied-signature", tasks=("ricota",))
    published = json.loads((S.SUBMISSIONS_DIR / qwen / "ricota.json").read_text())
    _edit(root / "copied-signature" / "ricota.json", lambda card: card.update(verification=published["verification"]))
    for name, source in zip(sorted(OTHER_PANEL), judged[1:]):
        _copy_as(_published(source, "diasafety_chatbot"), root / name, name)
        _edit(root / name / "diasafety_chatbot.json", _other_context_judge)
    source = json.loads((S.SUBMISSIONS_DIR / judged[2] / "diasafety_chatbot.json").read_text())
    _edit(root / "signed-other-panel" / "diasafety_chatbot.json", _signed(key, source))
    return root, keys


@pytest.fixture
def standing_app(standing_root, monkeypatch):
    from streamlit.testing.v1 import AppTest

    root, keys = standing_root
    monkeypatch.setenv("BENCHMARK_VERIFIER_KEYS", str(keys))  # the test's key signs too, as a listed one would
    monkeypatch.setenv("BENCHMARK_SUBMISSIONS", str(root))
    monkeypatch.delenv("BENCHMARK_DATA_ROOT", raising=False)
    return AppTest.from_file(str(APP), default_timeout=120)


@pytest.fixture
def keyed(monkeypatch) -> dict:
    """The tables the last run of a page drew, by their keys (the test tree does not keep a table's key): each as a
    DataFrame."""
    import streamlit as st
    from pandas.io.formats.style import Styler

    drawn, dataframe, page_config = {}, st.dataframe, st.set_page_config

    def spy(data=None, *args, **kwargs):
        drawn[kwargs.get("key")] = data.data if isinstance(data, Styler) else data
        return dataframe(data, *args, **kwargs)

    def run_starts(*args, **kwargs):  # the first call of every run of the app
        drawn.clear()
        return page_config(*args, **kwargs)

    monkeypatch.setattr(st, "dataframe", spy)
    monkeypatch.setattr(st, "set_page_config", run_starts)
    return drawn


def _judged(standing_root) -> str:
    """The folder of the verified card of the judged task, of the task's panel."""
    return next(name for name in JUDGED if (standing_root[0] / name).is_dir())


def test_the_board_splits_cards_into_ranked_unverified_and_non_standard(standing_root, monkeypatch):
    T = _tables()
    root, keys = standing_root
    monkeypatch.setenv("BENCHMARK_VERIFIER_KEYS", str(keys))
    loaded = S.load(root, thorough=True)
    assert {Path(p.path).relative_to(root).parts[0] for p in loaded.rejected} == {"copied-signature"}
    assert any(p.field == "verification" for p in loaded.rejected)  # a block not its own
    split = T.standing(loaded.cards)
    assert {c.summary.model for c in split.ranked} == RANKED | {_judged(standing_root)}
    assert all(c.summary.verified and c.panel is None for c in split.ranked)
    assert {c.summary.model for c in split.unverified} == UNSIGNED
    assert {c.summary.model for c in split.nonstandard} == OTHER_PANEL
    assert {c.summary.model: c.summary.verified for c in split.nonstandard} == {"other-panel": False,
                                                                                "signed-other-panel": True}
    asked = T.standing(loaded.cards, with_unverified=True)
    assert {c.summary.model for c in asked.ranked} == RANKED | UNSIGNED | {_judged(standing_root)}
    assert not asked.unverified and asked.nonstandard == split.nonstandard  # another panel: never ranked
    apart = T.apart_frame(split.unverified)
    assert list(apart["model"]) == sorted(UNSIGNED) and set(apart["verified"]) == {"no"}  # by name, not by score
    marked = T.overview(asked.ranked, S.task_registry()).set_index("model")
    assert marked.loc["unsigned-profanity", "not verified"] == "diasafety"
    assert marked.loc["smollm2-135m-instruct", "not verified"] == ""
    assert "not verified" not in T.overview(split.ranked, S.task_registry()).columns


def test_the_overview_ranks_only_verified_cards_of_the_tasks_panel(standing_app, standing_root, keyed):
    at = standing_app.run()
    assert not at.exception
    assert not at.checkbox(key="f_unverified").value  # off unless asked
    ranked = keyed.get("overview_table")
    assert set(ranked["model"]) == RANKED | {_judged(standing_root)}
    assert "not verified" not in ranked.columns and not any("not verified" in w.value for w in at.warning)
    unverified = keyed.get("unverified_table")
    assert list(unverified["model"]) == sorted(UNSIGNED) and set(unverified["verified"]) == {"no"}
    nonstandard = keyed.get("nonstandard_table").set_index("model")
    assert set(nonstandard.index) == OTHER_PANEL
    assert nonstandard["panel"].str.startswith("judge context: 'diasafety-detector' is not the task's").all()
    assert nonstandard.loc["signed-other-panel", "verified"] == "yes"  # verified, and still not ranked
    notes = [m.value for m in at.markdown]
    assert any(n.startswith("**Not verified, not ranked**") for n in notes), notes
    assert any(n.startswith("**Run with a non-standard panel, not ranked**") for n in notes), notes
    shown = json.dumps([d.value.to_dict("list") for d in at.dataframe], default=str)
    assert "copied-signature" not in shown  # rejected: in no table
    assert any(t.value.startswith(f"copied-signature{os.sep}ricota.json: verification: ")
               for t in at.sidebar.text)
    chart = next(e for e in at.main if e.type in ("vega_lite_chart", "arrow_vega_lite_chart"))
    from streamlit.dataframe_util import convert_arrow_bytes_to_pandas_df

    points = {r["model"] for d in chart.proto.datasets for r in convert_arrow_bytes_to_pandas_df(d.data.data)
              .to_dict("records")}
    assert points == set(ranked["model"])
    at.selectbox(key="f_rank").set_value("diasafety · macro_f1 ↑").run()
    ranks = keyed.get("overview_table").set_index("model")["rank"]
    assert list(ranks.dropna().index) == ["smollm2-135m-instruct"]  # the only verified card on the task


def test_the_tasks_page_ranks_only_verified_cards_of_the_tasks_panel(standing_app, standing_root, keyed):
    judged = _judged(standing_root)
    at = standing_app
    at.query_params["page"] = "Tasks"
    at.query_params["task"] = "diasafety_chatbot"
    at.run()
    assert not at.exception and not at.checkbox(key="task_unverified").value
    assert list(keyed.get("task_table")["model"]) == [judged]
    apart = keyed.get("task_nonstandard_table")
    assert list(apart["model"]) == sorted(OTHER_PANEL) and list(apart["verified"]) == ["no", "yes"]
    assert apart["panel"].str.startswith("judge context: ").all()
    breakdowns = [d.value for d in at.dataframe if "group" in d.value.columns]
    assert breakdowns and all(set(b["model"]) == {judged} for b in breakdowns)  # drawn for the ranked cards only
    at.sidebar.radio(key="page").set_value("Tasks").run()
    at.selectbox(key="task_pick").set_value("diasafety").run()
    assert not at.exception
    assert list(keyed.get("task_table")["model"]) == ["smollm2-135m-instruct"]
    unverified = keyed.get("task_unverified_table")
    assert list(unverified["model"]) == ["failed-check", "unsigned-profanity"] and set(unverified["verified"]) == {"no"}
    assert keyed.get("task_nonstandard_table") is None


def test_asking_for_unverified_cards_ranks_them_marked(standing_app, standing_root, keyed):
    at = standing_app.run()
    at.checkbox(key="f_unverified").check().run()
    at.selectbox(key="f_rank").set_value("diasafety · macro_f1 ↑").run()
    assert not at.exception
    frame = keyed.get("overview_table").set_index("model")
    assert set(frame.index) == RANKED | UNSIGNED | {_judged(standing_root)}  # another panel: still apart
    assert set(keyed.get("nonstandard_table")["model"]) == OTHER_PANEL and keyed.get("unverified_table") is None
    assert list(frame.columns[:2]) == ["rank", "not verified"]
    assert frame.loc["unsigned-profanity", "not verified"] == frame.loc["failed-check", "not verified"] == "diasafety"
    assert frame.loc["unsigned-ricota", "not verified"] == "ricota"
    assert (frame.loc[sorted(RANKED), "not verified"] == "").all()
    assert any("not verified" in w.value for w in at.warning)
    ranks = frame["rank"].dropna()
    assert set(ranks.index) == {"smollm2-135m-instruct", "unsigned-profanity", "failed-check"}
    assert list(frame.index[:len(ranks)]) == list(ranks.sort_values(kind="stable").index)  # ranked together
    chart = json.loads(next(e for e in at.main if e.type in ("vega_lite_chart", "arrow_vega_lite_chart")).proto.spec)
    assert all(p["layer"][1]["encoding"]["color"]["field"] == "card" for p in chart["vconcat"])

    at.sidebar.radio(key="page").set_value("Tasks").run()
    at.selectbox(key="task_pick").set_value("diasafety").run()
    at.checkbox(key="task_unverified").check().run()
    assert not at.exception
    table = keyed.get("task_table").set_index("model")
    assert table["verified"].to_dict() == {"smollm2-135m-instruct": "yes",
                                           "failed-check": "no", "unsigned-profanity": "no"}
    assert any("not verified" in w.value or '"no"' in w.value for w in at.warning)
    assert keyed.get("task_unverified_table") is None


def test_a_run_is_never_verified_on_the_viewer_and_is_ranked_marked(tmp_path, monkeypatch, keyed):
    """The viewer does not check your runs: a verification block in one (here a published card's) marks nothing."""
    from streamlit.testing.v1 import AppTest

    published = json.loads((S.SUBMISSIONS_DIR / "profanity-check" / "diasafety.json").read_text())
    _run_folder(tmp_path / "runs", "signed", lambda card, folder: card.update(verification=published["verification"]))
    monkeypatch.setenv("BENCHMARK_RUNS", str(tmp_path / "runs"))
    at = AppTest.from_file(str(APP), default_timeout=120).run()
    assert not at.exception and at.checkbox(key="f_unverified").value  # your own runs: ranked unless asked not to
    frame = keyed.get("overview_table").set_index("model")
    assert frame.loc["profanity-check [signed]", "not verified"] == "diasafety"
    assert frame.loc["profanity-check [signed]", "verified"] == 0
    at.checkbox(key="f_unverified").uncheck().run()
    assert keyed.get("overview_table") is None
    assert list(keyed.get("unverified_table")["model"]) == ["profanity-check [signed]"]


def test_malformed_cards_are_listed_and_the_page_still_renders(app):
    at = app.run()
    assert not at.exception and len(at.dataframe) >= 1
    rejected = [t.value for t in at.sidebar.text]
    assert any("broken-card" in r and "not a readable JSON score card" in r for r in rejected), rejected
    assert any("code-config" in r and "_target_" in r for r in rejected), rejected
    assert any("problem(s) with submitted cards" in w.value for w in at.warning)


def test_html_in_a_model_name_is_shown_as_text(app):
    at = app.run()
    assert HOSTILE in set(at.dataframe[1].value["model"])  # a dataframe cell is text (its card: not verified)
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(APP), default_timeout=120)  # a new session, opened by a link to the model's page
    at.query_params["page"] = "Models"
    at.query_params["model"] = HOSTILE
    at.run()
    assert not at.exception
    title = at.title[0].value
    # Markdown shows a backslash-escaped character as itself: no tag can form
    assert title == r"Model: \&lt;b\&gt; \!\[x\]\(x\) \[y\]\(z\) \_e\_ \`c\`"
    assert not re.search(r"(?<!\\)[&\[\]()!_`]", title)
    assert "<script>" in at.dataframe[0].value["organisation"].iloc[0]  # shown as text in a cell


def test_task_page_table_and_breakdown_charts(app, fixture_root):
    at = app.run()
    at.sidebar.radio(key="page").set_value("Tasks").run()
    at.selectbox(key="task_pick").set_value("diasafety_chatbot").run()
    assert not at.exception
    frame = at.dataframe[0].value.set_index("model")
    assert set(frame.index) == {"blenderbot-small", "dialogpt-small"}
    assert frame.loc["dialogpt-small", "unsafe_rate"] == pytest.approx(
        headline(fixture_root, "dialogpt-small", "diasafety_chatbot"))
    charts = [e for e in at.main if e.type in ("vega_lite_chart", "arrow_vega_lite_chart")]
    assert charts, [e.type for e in at.main]
    tables = at.dataframe[1:]
    per_category = tables[0].value
    assert set(per_category["group"]) == {"biased_opinion", "offending_user", "risk_ignorance",
                                          "toxicity_agreement", "unauthorized_expertise"}
    assert per_category["ci_low"].notna().all()


def test_dialogue_task_page_draws_activation_by_turn(app):
    at = app.run()
    at.sidebar.radio(key="page").set_value("Tasks").run()
    at.selectbox(key="task_pick").set_value("toxicchat").run()
    at.checkbox(key="task_unverified").check().run()  # the fixture's card is not verified
    assert not at.exception
    at_1, at_3 = len(range(1, N_SEEDS, 3)), len(range(2, N_SEEDS, 3))  # conversations activated at turns 1 and 3
    assert at.dataframe[0].value.set_index("model").loc["dialogue-fixture", "activation_rate"] == pytest.approx(
        100 * (at_1 + at_3) / N_SEEDS)
    assert any(e.type in ("vega_lite_chart", "arrow_vega_lite_chart") for e in at.main)
    by_turn = at.dataframe[1].value
    assert by_turn["group"].tolist() == ["1", "2", "3", "4", "5"]
    assert by_turn["value"].tolist() == pytest.approx([100 * k / N_SEEDS for k in
                                                       (at_1, at_1, at_1 + at_3, at_1 + at_3, at_1 + at_3)])


def test_model_page_draws_activation_by_turn_as_a_curve(app):
    at = app
    at.query_params["page"] = "Models"
    at.query_params["model"] = "dialogue-fixture"
    at.run()
    assert not at.exception
    charts = _charts(at)
    assert len(charts) == 1 and "facet" not in charts[0], charts  # one curve, not a panel of bars per turn
    assert {"line", "area"} <= _marks(charts[0]) and "bar" not in _marks(charts[0])
    spent = next(d.value for d in at.dataframe if "role" in d.value.columns)  # the card's tokens, per role
    assert spent["role"].tolist() == ["model", "judge utterance"]
    assert spent["prompt tokens"].tolist() == [1200, 1200] and spent["cached tokens"].tolist() == [60, 50]
    assert spent["tokens/s"].tolist()[0] == 500.0 and spent["cost"].tolist() == ["0.0060 USD", ""]


def test_cards_no_table_can_hold_are_rejected_and_the_rest_show(odd_app):
    at = odd_app.run()
    at.checkbox(key="f_unverified").check().run()  # the odd cards are copies: not verified
    assert not at.exception
    assert set(at.dataframe[0].value["model"]) == set(ODD_SHOWN)
    rejected = [t.value for t in at.sidebar.text]
    for name in ODD_REFUSED:
        assert any(r.startswith(f"{name}{os.sep}diasafety.json: cannot be shown: ") for r in rejected), (name, rejected)
    assert len(rejected) == len(ODD_REFUSED)
    frame = at.dataframe[0].value.set_index("model")
    assert frame.loc["odd-parameters", "size"] == "unknown" and frame.loc["odd-parameters", "parameters"] == "1.2.3B"
    at.sidebar.radio(key="page").set_value("Tasks").run()
    at.selectbox(key="task_pick").set_value("diasafety").run()
    assert not at.exception
    assert "odd-markdown" in set(at.dataframe[0].value["model"])
    for name in ODD_SHOWN:
        at.sidebar.radio(key="page").set_value("Models").run()
        at.selectbox(key="model_pick").set_value(name).run()
        assert not at.exception, name


def test_a_folder_with_a_card_no_table_can_hold_shows_none_of_its_cards(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    _copy_as(S.SUBMISSIONS_DIR / "smollm2-135m-instruct", tmp_path / "four-cards", "four-cards")
    card = json.loads((tmp_path / "four-cards" / "diasafety.json").read_text())
    card["breakdown"]["per_class"] = [0.5, 0.5]
    (tmp_path / "four-cards" / "diasafety.json").write_text(json.dumps(card))
    _copy_as(S.SUBMISSIONS_DIR / "profanity-check", tmp_path / "one-card", "one-card", tasks=("diasafety",))
    monkeypatch.setattr(S, "load", _accept_all)
    monkeypatch.setenv("BENCHMARK_SUBMISSIONS", str(tmp_path))
    monkeypatch.delenv("BENCHMARK_DATA_ROOT", raising=False)
    at = AppTest.from_file(str(APP), default_timeout=120).run()
    assert not at.exception
    assert list(at.dataframe[0].value["model"]) == ["one-card"]
    rejected = [t.value for t in at.sidebar.text]
    assert len(rejected) == 2 and rejected[0].startswith(f"four-cards{os.sep}diasafety.json: cannot be shown: ")
    others = len(list((tmp_path / "four-cards").glob("*.json"))) - 1  # SmolLM2's published cards, less the broken one
    assert rejected[1] == f"four-cards: {others} other card(s) not shown: a card of this folder cannot be shown"


def test_activation_curve_leaves_out_turns_that_are_not_numbers(odd_app):
    at = odd_app
    at.query_params["page"] = "Tasks"
    at.query_params["task"] = "toxicchat"
    at.run()
    at.checkbox(key="task_unverified").check().run()  # breakdowns are drawn for the ranked cards
    assert not at.exception
    assert at.dataframe[1].value["group"].tolist() == ["1", "2", "3", "4", "5", "x"]  # the table shows every row
    assert any("line" in _marks(c) for c in _charts(at))


def test_sample_browser_reports_an_unreadable_samples_file(odd_app):
    at = odd_app
    at.query_params["page"] = "Models"
    at.query_params["model"] = "odd-samples-bytes"
    at.run()
    assert not at.exception
    errors = [e.value.replace("\\", "") for e in at.error]
    assert len(errors) == 1 and errors[0].startswith("The samples file diasafety.samples.jsonl.gz cannot be read: ")
    assert os.environ["BENCHMARK_SUBMISSIONS"] not in errors[0]  # named within the submissions folder


def test_sample_browser_takes_samples_without_ids(odd_app, monkeypatch):
    import gzip

    def lenient(path):  # a reader that lets a sample without an id through
        with gzip.open(path, "rt", encoding="utf-8") as f:
            return [json.loads(line) for line in f if line.strip()]

    monkeypatch.setattr(S, "read_samples", lenient)
    at = odd_app
    at.query_params["page"] = "Models"
    at.query_params["model"] = "odd-samples-ids"
    at.run()
    assert not at.exception and not at.error
    samples = at.dataframe[-1].value
    assert samples["id"].tolist() == ["", "", ""] and samples["prediction"].tolist() == ['"Safe"'] * 3


def test_a_failing_load_is_shown_and_the_page_still_renders(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    def broken(*args, **kwargs):
        raise RuntimeError("the loader broke on **this**")

    monkeypatch.setattr(S, "load", broken)
    monkeypatch.setenv("BENCHMARK_SUBMISSIONS", str(tmp_path))
    at = AppTest.from_file(str(APP), default_timeout=120).run()
    assert not at.exception
    errors = [e.value for e in at.error]
    assert len(errors) == 1 and errors[0].startswith("The score cards could not be loaded from ")
    assert errors[0].endswith(r"RuntimeError\: the loader broke on \*\*this\*\*")  # the message, as text
    assert at.title[0].value.startswith("Safety leaderboard") and any("No score card" in i.value for i in at.info)
    at.sidebar.radio(key="page").set_value("Tasks").run()
    assert not at.exception and at.title[0].value.startswith("Task: ")


def test_expander_labels_escape_submitted_metric_names(odd_app):
    at = odd_app
    at.query_params["page"] = "Tasks"
    at.query_params["task"] = "diasafety"
    at.run()
    at.checkbox(key="task_unverified").check().run()  # breakdowns are drawn for the ranked cards
    assert not at.exception
    labels = [e.label for e in at.main.get("expander")]
    mine = [label for label in labels if "click" in label]
    # Markdown shows a backslash-escaped character as itself: no link can form
    assert mine == [r"table\: \[click\]\(https\://evil\)\: F1 per class \(no CI in the card\)"], labels
    assert not any(re.search(r"(?<!\\)[\[\]()<>*_]", label) for label in labels), labels


def test_model_page_sample_browser_hides_texts_until_asked(app):
    at = app.run()
    at.sidebar.radio(key="page").set_value("Models").run()
    at.selectbox(key="model_pick").set_value("blenderbot-small").run()
    assert not at.exception
    assert any("Content warning" in w.value for w in at.warning)
    samples = at.dataframe[-1].value
    assert "outputs" not in samples.columns and len(samples) == 50
    at.toggle(key="show_texts").set_value(True).run()
    samples = at.dataframe[-1].value
    answered = samples["verdicts"] != ""  # contexts the published generations do not cover have no response
    assert answered.sum() > 10 and samples.loc[answered, "outputs"].str.len().gt(0).all()
    assert "input" not in samples.columns  # no local data: ids only


def test_sample_browser_joins_the_texts_from_a_local_data_copy(app, data_root, monkeypatch):
    monkeypatch.setenv("BENCHMARK_DATA_ROOT", str(data_root))
    at = app
    at.query_params["page"] = "Models"
    at.query_params["model"] = "diasafety-detector"
    at.run()
    at.toggle(key="show_texts").set_value(True).run()
    assert not at.exception
    samples = at.dataframe[-1].value
    records = json.loads((data_root / "diasafety" / "test.json").read_text())
    first = json.loads(samples["input"].iloc[0])
    assert samples["id"].iloc[0] == "0" and first["context"] == records[0]["context"]


def test_model_page_shows_a_conversation_turn_by_turn(app, fixture_root):
    third = SF.read_samples(fixture_root / "dialogue-fixture" / "toxicchat.samples.jsonl.gz")[2]["id"]  # 3 turns
    at = app
    at.query_params["page"] = "Models"
    at.query_params["model"] = "dialogue-fixture"
    at.run()
    assert not at.chat_message  # texts hidden until asked
    at.toggle(key="show_texts").set_value(True).run()
    at.selectbox(key="conversation").set_value(third).run()
    assert not at.exception
    messages = at.chat_message
    assert [m.name for m in messages] == ["user", "assistant"] * 3  # attacker, target, turn by turn
    texts = [m.text[0].value for m in messages]
    assert texts[2:4] == ["attacker line 2 <b>bold</b>", "target reply 2 **not bold**"]  # as text, not HTML
    captions = [m.caption[0].value for m in messages]
    assert "seed sentence" in captions[0] and "not flagged" in captions[1]
    assert "flagged by harm" in captions[5] and "harm: flagged (0.91)" in captions[5].replace("\\", "")
    assert any("flagged at turn 3" in c.value.replace("\\", "") for c in at.caption)


def test_submit_page_is_the_submission_guide(app):
    at = app.run()
    at.sidebar.radio(key="page").set_value("Submit").run()
    text = "\n".join(m.value for m in at.markdown)
    guide = (REPO / "docs" / "submitting.md").read_text()
    assert "python -m benchmark.submit validate" in text and text.strip() in guide
    assert "What a signed card guarantees" in text


def test_csv_download_holds_the_table(fixture_root):
    T = _tables()

    cards = S.load(fixture_root).cards
    frame = T.overview(cards, S.task_registry())
    back = pd.read_csv(pd.io.common.BytesIO(T.to_csv(frame)))
    assert list(back.columns) == list(frame.columns)
    assert back["diasafety · macro_f1 ↑"].tolist() == pytest.approx(frame["diasafety · macro_f1 ↑"].tolist(),
                                                                     nan_ok=True)


def test_csv_cells_cannot_start_a_formula():
    T = _tables()
    frame = pd.DataFrame({"=cmd|' /C calc'!A0": ["=HYPERLINK(\"http://x\")", "+1", "-2", "@SUM(A1)", "\tx", "a=b", ""],
                          "value": [-1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]})
    back = pd.read_csv(pd.io.common.BytesIO(T.to_csv(frame)), keep_default_na=False)
    assert list(back.columns) == ["'=cmd|' /C calc'!A0", "value"]
    assert back.iloc[:, 0].tolist() == ["'=HYPERLINK(\"http://x\")", "'+1", "'-2", "'@SUM(A1)", "'\tx", "a=b", ""]
    assert back["value"].tolist() == [-1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]  # numbers stay numbers
    assert T.to_csv(pd.DataFrame({"a": ["\rx"]})) == b"a\n'\rx\n"  # a carriage return would end the row on read


def test_parameters_that_are_not_a_size_are_unknown():
    T = _tables()
    assert T.parse_size("1.2.3B") is None and T.size_bucket("1.2.3B") == "unknown"
    assert T.parse_size("6.2B") == pytest.approx(6.2) and T.parse_size("<1M") == pytest.approx(1e-3)


def test_a_task_table_says_whether_each_model_reads_the_tasks_language(tmp_path):
    T = _tables()
    copy_published("profanity-check", tmp_path / "profanity-check", ("diasafety", "kosbi"))
    copy_published("ricota-solar", tmp_path / "ricota-solar", ("ricota",))
    cards = S.load(tmp_path).cards

    def column(task):
        frame = T.task_frame([c for c in cards if c.summary.task == task], task).set_index("model")
        return frame["reads the task's language"].to_dict()

    # the English classifier's row on a Korean task is a baseline that cannot read it; a Korean model's row reads it
    assert column("kosbi")["profanity-check"] == "no: reads en"
    assert column("ricota") == {"ricota-solar": "yes"}
    assert column("diasafety")["profanity-check"] == "yes"


def test_class_f1_of_every_question(fixture_root):
    T = _tables()
    registry = S.task_registry()
    cards = {c.card["model"]["name"]: c for c in S.load(fixture_root).cards}
    ricota = cards["ricota-solar"]
    frame = T.breakdown([ricota], registry["ricota"])
    assert frame["by"].unique().tolist() == ["conversation_type · class F1", "test_purpose · class F1"]
    for question in ("conversation_type", "test_purpose"):
        per_class = ricota.card["breakdown"][question]["per_class"]
        part = frame[frame["by"] == f"{question} · class F1"]
        assert part["group"].tolist() == list(per_class)
        assert part["value"].tolist() == pytest.approx([100 * v["f1"] for v in per_class.values()])
    single = T.breakdown([cards["diasafety-detector"]], registry["diasafety"])
    per_class = cards["diasafety-detector"].card["breakdown"]["per_class"]
    assert single.loc[single["by"] == "class F1", "group"].tolist() == list(per_class)


def test_a_language_bar_its_judges_cannot_back_is_faint_and_says_why(tmp_path):
    """MultiJail's per-language rates on the board carry their judges' figures in that language: a bar where the
    harm judge is noise (Korean) or was never measured (Swahili) is drawn faint, the table says why."""
    T = _tables()
    import charts as C

    copy_published("qwen2.5-coder-1.5b-instruct", tmp_path / "qwen2.5-coder-1.5b-instruct", ("multijail_en_zh_ko_sw",))
    card = next(c for c in S.load(tmp_path).cards if c.summary.task == "multijail_en_zh_ko_sw")
    task = S.task_registry()["multijail_en_zh_ko_sw"]
    frame = T.breakdown([card], task)
    languages = frame[frame["by"] == "language"].set_index("group")["judging"]
    assert languages["en"].startswith("measured:") and languages["ko"].startswith("noise:")
    assert languages["sw"].startswith("not measured:")
    spec = C.family_chart(frame[frame["by"] == "language"], "language", task)
    bar = next(layer for layer in spec["spec"]["layer"] if layer["mark"] == "bar")["encoding"]
    assert bar["opacity"]["condition"] == {"test": "datum.backed === true", "value": 1} and bar["opacity"]["value"] < 1
    backed = frame[frame["by"] == "language"].set_index("group")["backed"]
    assert backed.to_dict() == {"en": True, "ko": False, "sw": False, "zh": False}
    assert {"field": "judging", "type": "nominal"}.items() <= next(
        t for t in bar["tooltip"] if t["field"] == "judging").items()
    # a family with no such figures (the prompts' source) and another kind's breakdown have no column for them
    assert frame[frame["by"] == "source"]["judging"].isna().all()
    assert not {"judging", "backed"} & set(T.breakdown([card], S.task_registry()["ricota"]).columns)
    # the headline averages those languages: the ranking names them beside the model, its card row too
    copy_published("smollm2-135m-instruct", tmp_path / "smollm2-135m-instruct", ("diasafety",))
    cards = S.load(tmp_path).cards
    overview = T.overview(cards, S.task_registry()).set_index("model")
    assert overview.loc["qwen2.5-coder-1.5b-instruct", T.UNBACKED] == "multijail_en_zh_ko_sw: ko, sw, zh"
    assert overview.loc["smollm2-135m-instruct", T.UNBACKED] == ""
    assert T.model_row(card, task)[T.UNBACKED] == "ko, sw, zh"
    from benchmark.submissions.summary import Summary
    assert Summary.from_json(json.loads(json.dumps(card.summary.to_json()))) == card.summary  # as a board keeps it
    backed_only = [c for c in cards if c.summary.task == "diasafety"]
    assert T.UNBACKED not in T.overview(backed_only, S.task_registry()).columns


def test_the_hosted_app_needs_only_its_requirements(tmp_path):
    """Run as a host would run it: no torch, lm-eval or datasets is imported, and every package that the app's code
    and the suite modules it loads import is installed by leaderboard/requirements.txt. On published cards of each
    kind (classify, attack with its over-refusal trade-off, dialogue_attack), not all of them: loading every card
    cold took 164 s, and the modules a card loads are its kind's."""
    for name, tasks in {"ricota-solar": ("ricota",),
                        "qwen2.5-coder-1.5b-instruct": ("xstest", "goal_direct_multijail")}.items():
        copy_published(name, tmp_path / name, tasks)
    code = ("import sys; from streamlit.testing.v1 import AppTest; "
            f"at = AppTest.from_file({str(APP)!r}, default_timeout=300).run(); assert not at.exception; "
            "assert any(c.value.startswith('3 score cards') for c in at.sidebar.caption), at.sidebar.caption; "
            "print(' '.join(sorted({m.split('.')[0] for m in sys.modules}))); "
            "print(' '.join(sorted(m.__file__ for n, m in sys.modules.items() "
            "if n.split('.')[0] in ('benchmark', 'tables', 'charts', 'cards') and getattr(m, '__file__', None))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600,
                         env={**os.environ, "BENCHMARK_DATA_ROOT": "", "BENCHMARK_SUBMISSIONS": str(tmp_path)})
    assert out.returncode == 0, out.stderr[-2000:]
    modules_line, files_line = out.stdout.strip().splitlines()[-2:]
    assert {"benchmark.kinds.classify", "benchmark.kinds.attack", "benchmark.kinds.dialogue"} <= {
        ".".join(Path(f).with_suffix("").parts[-3:]) for f in files_line.split()}, "a card of each kind was loaded"
    assert not set(modules_line.split()) & {"torch", "transformers", "lm_eval", "datasets", "sklearn"}

    import ast
    import importlib.metadata as md

    from packaging.requirements import Requirement

    def module_level(tree):
        """The statements a module runs when imported (an import inside a function runs only when it is called:
        the suite imports heavy packages there, in code the app never calls)."""
        todo = list(tree.body)
        while todo:
            node = todo.pop()
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                continue
            yield node
            todo += [n for n in ast.iter_child_nodes(node) if isinstance(n, ast.stmt)]

    imported = set()
    for path in [str(APP), str(SERVER), *files_line.split()]:
        for node in module_level(ast.parse(Path(path).read_text())):
            if isinstance(node, ast.Import):
                imported |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                imported.add(node.module.split(".")[0])
    third_party = imported - set(sys.stdlib_module_names) - {"benchmark", "tables", "charts", "cards", "__future__"}

    def closure(names):
        seen, todo = set(), list(names)
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            seen.add(name)
            for line in md.requires(name) or []:
                req = Requirement(line)
                if req.marker is None or req.marker.evaluate({"extra": ""}):
                    todo.append(req.name.lower().replace("_", "-"))
        return seen

    listed = {Requirement(line).name.lower() for line in
              (REPO / "leaderboard" / "requirements.txt").read_text().splitlines() if line and line[0].isalnum()}
    installed = closure(listed)
    dists = md.packages_distributions()
    missing = {m for m in third_party
               if not {d.lower().replace("_", "-") for d in dists.get(m, [m])} & installed}
    assert not missing, f"imported by the app's code but not installed by leaderboard/requirements.txt: {missing}"


# --------------------------------------------------------------------------- your own runs, and what any card says


def _run_folder(root: Path, name: str, edit=None) -> Path:
    """A run folder made from the published profanity-check card (its samples beside it), edited by `edit`."""
    folder = root / name
    folder.mkdir(parents=True)
    shutil.copy(S.SUBMISSIONS_DIR / "profanity-check" / "diasafety.samples.jsonl.gz", folder)
    card = json.loads((S.SUBMISSIONS_DIR / "profanity-check" / "diasafety.json").read_text())
    card.pop("verification")
    if edit:
        edit(card, folder)
    (folder / "scorecard.json").write_text(json.dumps(card))
    return folder


SECRET = "a line of a file outside the run folder"


def test_view_never_reads_a_samples_file_outside_the_run_folder(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    outside = tmp_path / "outside" / "secret.jsonl"
    outside.parent.mkdir()
    outside.write_text(json.dumps({"id": "0", "output": SECRET, "prediction": SECRET}) + "\n")
    runs = tmp_path / "runs"

    def names(file):
        return lambda card, folder: card["samples"].update(file=file)

    def linked(card, folder):
        os.symlink(outside, folder / "samples.jsonl")
        card["samples"]["file"] = "samples.jsonl"

    _run_folder(runs, "absolute", names(str(outside)))
    _run_folder(runs, "climbing", names("../../outside/secret.jsonl"))
    _run_folder(runs, "symlinked", linked)
    good = _run_folder(runs, "good")
    loaded, _ = S.load_runs(runs)
    assert [c.path.parent for c in loaded.cards] == [good]
    assert sorted(Path(p.path).parent.name for p in loaded.rejected) == ["absolute", "climbing", "symlinked"]
    assert all("leads outside" in p.message for p in loaded.rejected), loaded.rejected
    leading_out = json.loads((good / "scorecard.json").read_text())
    leading_out["samples"]["file"] = str(outside)
    with pytest.raises(BenchmarkError, match="leads outside"):
        S.Card(good / "scorecard.json", leading_out, {}).samples_path

    monkeypatch.setenv("BENCHMARK_RUNS", str(runs))
    monkeypatch.delenv("BENCHMARK_DATA_ROOT", raising=False)
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.query_params["page"] = "Models"
    at.query_params["model"] = "profanity-check [good]"
    at.run()
    at.toggle(key="show_texts").set_value(True).run()
    assert not at.exception and len(at.dataframe[-1].value) == 50
    assert len(at.sidebar.text) == 3  # the three, listed as rejected
    shown = json.dumps([getattr(e, "value", None) for e in at.main], default=str)
    assert SECRET not in shown


def _hostile_task(card, folder):
    task = card["task"]["config"]
    task.update(name="custom-task", citation="**bold** [a link](https://evil)\n# a heading <b>html</b>",
                version="2 [v](https://evil)\n===")
    card["task"]["name"] = "custom-task"


def test_view_escapes_a_run_cards_task_text(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    def link_breaking(card, folder):
        card["task"]["name"] = card["task"]["config"]["name"] = "t) [x](https://evil"

    runs = tmp_path / "runs"
    _run_folder(runs, "hostile", _hostile_task)
    _run_folder(runs, "link-breaking", link_breaking)
    monkeypatch.setenv("BENCHMARK_RUNS", str(runs))
    at = AppTest.from_file(str(APP), default_timeout=120).run()
    notes = next(m.value for m in at.markdown if "t\\) " in m.value)
    assert notes.endswith("[Task page and definition](?page=Tasks&task=t%29%20%5Bx%5D%28https%3A%2F%2Fevil)"), notes
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.query_params["page"] = "Tasks"
    at.query_params["task"] = "custom-task"
    at.run()
    assert not at.exception and at.title[0].value == r"Task: custom\-task"
    texts = [c.value for c in at.caption] + [m.value for m in at.markdown if "version" in m.value]
    citation = next(t for t in texts if "bold" in t)
    assert citation == r"\*\*bold\*\* \[a link\]\(https\://evil\) \# a heading \<b\>html\</b\>"
    version = next(t for t in texts if "version" in t)
    assert version.endswith(r"version 2 \[v\]\(https\://evil\) ===.")
    for text in (citation, version.rsplit("version", 1)[1]):
        assert "\n" not in text and not re.search(r"(?<!\\)[<>\[\]()*#]", text)


def test_a_task_name_never_leads_the_board_outside_tasks(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    def climbing(card, folder):
        card["task"]["name"] = card["task"]["config"]["name"] = "../conf/config"  # conf/config.yaml exists

    runs = tmp_path / "runs"
    _run_folder(runs, "climbing", climbing)
    monkeypatch.setenv("BENCHMARK_RUNS", str(runs))
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.query_params["page"] = "Tasks"
    at.query_params["task"] = "../conf/config"
    at.run()
    assert not at.exception and at.title[0].value.startswith("Task: ")
    assert not [e.label for e in at.main.get("expander") if "Definition" in e.label]
    assert not at.code  # no file's text


def test_line_breaks_in_samples_stay_on_one_line_in_captions(tmp_path, monkeypatch):
    """A judgement's key is the sample's own: a line break in it must not start a heading or a list in a caption.
    The board refuses such a card (its judgements are not the task's steps); the viewer shows your own runs unchecked."""
    from streamlit.testing.v1 import AppTest

    root = tmp_path / "subs"
    _dialogue_card(root / "dialogue-breaks")
    path = root / "dialogue-breaks" / "toxicchat.samples.jsonl.gz"
    samples = SF.read_samples(path)
    for sample in samples:
        for turn in sample["turns"]:
            turn["judgements"] = {f"utterance\n# a heading\n- a list\n===": v for v in turn["judgements"].values()}
    card = json.loads((root / "dialogue-breaks" / "toxicchat.json").read_text())
    card["samples"]["sha256"] = SF.write_samples(samples, path)
    (root / "dialogue-breaks" / "toxicchat.json").write_text(json.dumps(card))
    assert any("judgements" in p.field for p in S.load(root, thorough=True).rejected)
    run = tmp_path / "runs" / "dialogue-breaks" / "toxicchat" / "r1"
    run.mkdir(parents=True)
    (run / "scorecard.json").write_text(json.dumps(card))
    shutil.copy(path, run / path.name)
    monkeypatch.setenv("BENCHMARK_RUNS", str(tmp_path / "runs"))
    monkeypatch.delenv("BENCHMARK_DATA_ROOT", raising=False)
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.query_params["page"] = "Models"
    at.query_params["model"] = "dialogue-breaks [r1]"
    at.run()
    at.toggle(key="show_texts").set_value(True).run()
    assert not at.exception
    captions = [m.caption[0].value for m in at.chat_message if m.name == "assistant"]
    assert captions and all("utterance \\# a heading \\- a list ===" in c for c in captions), captions
    assert not any("\n" in c for c in captions)


def _listening(port: int) -> set[str]:
    """The local addresses that listen on `port` (Linux: /proc/net/tcp and tcp6)."""
    import ipaddress

    found = set()
    for table, size in (("/proc/net/tcp", 4), ("/proc/net/tcp6", 16)):
        if not Path(table).exists():
            continue
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            address, hex_port = local.split(":")
            if state == "0A" and int(hex_port, 16) == port:  # 0A: LISTEN
                raw = bytes.fromhex(address)
                raw = b"".join(raw[i:i + 4][::-1] for i in range(0, size, 4))  # each 32-bit word is little-endian
                found.add(str(ipaddress.ip_address(raw)))
    return found


@pytest.mark.parametrize("command", ["board", "app", "view"])
def test_the_board_and_the_viewer_listen_on_this_machine_only(command, tmp_path):
    if not Path("/proc/net/tcp").exists():
        pytest.skip("reads the listening sockets from /proc/net (Linux)")
    port = _free_port()
    _run_folder(tmp_path / "runs", "a-run")
    argv = ([sys.executable, "-m", "streamlit", "run", str(SERVER if command == "board" else APP), "--server.port",
             str(port), "--server.headless", "true", "--browser.gatherUsageStats", "false"] if command != "view" else
            [sys.executable, "-m", "benchmark", "view", str(tmp_path / "runs"), "--port", str(port), "--no-browser"])
    env = {k: v for k, v in os.environ.items() if not k.startswith("STREAMLIT_")}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), *filter(None, [env.get("PYTHONPATH")])])  # this checkout
    with open(tmp_path / "server.log", "w") as log:
        server = subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT,
                                  start_new_session=True)
    try:
        deadline = time.time() + 60
        while time.time() < deadline and not _listening(port):
            time.sleep(0.2)
        assert _listening(port) == {"127.0.0.1"}, (tmp_path / "server.log").read_text()[-2000:]
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)


def test_view_serves_publicly_only_when_asked(tmp_path, monkeypatch, capsys):
    from benchmark.cli import tools

    _run_folder(tmp_path / "runs", "a-run")
    commands = []
    monkeypatch.setattr(tools.subprocess, "call", lambda command, env: commands.append(command) or 0)
    assert tools.view([str(tmp_path / "runs"), "--no-browser"]) == 0
    assert tools.view([str(tmp_path / "runs"), "--address", "0.0.0.0", "--port", "8600"]) == 0
    addresses = [c[c.index("--server.address") + 1] for c in commands]
    assert addresses == ["127.0.0.1", "0.0.0.0"]
    assert "http://0.0.0.0:8600" in capsys.readouterr().out


# ------------------------------------------------------------------------------------------------ a real browser


def _chromium():
    for driver in ("/usr/bin/chromedriver", shutil.which("chromedriver")):
        if driver and Path(driver).exists():
            return driver
    pytest.skip("chromium-driver is not installed (apt-get install -y chromium chromium-driver)")


def headless_chromium(driver_path: str):
    """Chromium as the tests drive it: headless, no sandbox (root), no background connections (no network)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service


    options = webdriver.ChromeOptions()
    for arg in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--window-size=1400,1000"):
        options.add_argument(arg)
    return webdriver.Chrome(service=Service(driver_path), options=options)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def served(argv_for_port, log_path: Path, **popen):
    """A Streamlit server started by argv_for_port(port), and headless Chromium to drive it: (browser, port).
    Both are stopped on the way out; the server's output is in log_path."""
    driver_path = _chromium()
    port = _free_port()
    log = open(log_path, "w")
    # its own process group: a command that starts Streamlit as a child (python -m benchmark view) is stopped whole
    server = subprocess.Popen(argv_for_port(port), stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                              **popen)
    browser = None
    try:
        deadline = time.time() + 60
        while time.time() < deadline:  # the server is up when its port answers
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.2)
        browser = headless_chromium(driver_path)
        yield browser, port
    finally:
        if browser is not None:
            browser.quit()
        with contextlib.suppress(ProcessLookupError):  # the group may have ended already
            os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
        log.close()


def test_in_a_browser(fixture_root, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as EC
    from selenium.webdriver.support.ui import WebDriverWait

    def streamlit(port):
        return [sys.executable, "-m", "streamlit", "run", str(SERVER), "--server.port", str(port), "--server.address",
                "127.0.0.1", "--server.headless", "true", "--browser.gatherUsageStats", "false"]

    with served(streamlit, tmp_path / "streamlit.log",
                env={**os.environ, "BENCHMARK_SUBMISSIONS": str(fixture_root)}) as (browser, port):
        wait = WebDriverWait(browser, 90)
        cells = '[data-testid="stDataFrame"] [role="gridcell"]'

        def table_text(d):
            texts = [c.get_attribute("textContent") for c in d.find_elements(By.CSS_SELECTOR, cells)]
            return texts if "diasafety-detector" in texts else False

        browser.get(f"http://127.0.0.1:{port}/")
        try:
            texts = wait.until(table_text)
        except Exception:  # a fresh server's first page can stay blank: load it once more
            browser.get(f"http://127.0.0.1:{port}/")
            texts = wait.until(table_text)
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        browser.save_screenshot(str(ARTIFACTS / "leaderboard-overview.png"))
        # the safety and over-refusal chart, drawn: its heading, then a chart that holds a drawing
        tradeoff = ("//h3[contains(., 'Safety and over-refusal')]/following::*[@data-testid='stVegaLiteChart'][1]"
                    "//*[local-name()='canvas' or local-name()='svg']")
        chart = wait.until(EC.presence_of_element_located((By.XPATH, tradeoff)))
        browser.execute_script("arguments[0].scrollIntoView();", chart)
        assert chart.size["width"] > 300 and chart.size["height"] > 200
        browser.save_screenshot(str(ARTIFACTS / "leaderboard-tradeoff.png"))
        value = headline(fixture_root, "diasafety-detector", "diasafety")
        row = texts.index("diasafety-detector")
        assert any(abs(float(t) - value) < 1e-6 for t in texts[row:row + 4] if t.replace(".", "").isdigit())
        assert HOSTILE in texts  # as text in a cell
        assert {*PUBLISHED, HOSTILE, "dialogue-fixture"} <= set(texts)  # every row drawn: no inner scroll

        link = wait.until(EC.element_to_be_clickable((By.LINK_TEXT, "Task page and definition")))
        link.click()
        if len(browser.window_handles) > 1:  # Markdown links open in a new tab
            browser.switch_to.window(browser.window_handles[-1])
        wait.until(lambda d: "Task: " in d.find_element(By.TAG_NAME, "h1").text)
        wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, '[data-testid="stVegaLiteChart"]')))
        heading = browser.find_element(By.TAG_NAME, "h1").text
        assert heading.startswith("Task: diasafety")
        browser.save_screenshot(str(ARTIFACTS / "leaderboard-task.png"))

        # the hostile model's page: its name is the title, which Streamlit renders as Markdown
        browser.get(f"http://127.0.0.1:{port}/?page=Models&model={quote(HOSTILE, safe='')}")
        wait.until(lambda d: any("Model: " in h.text for h in d.find_elements(By.TAG_NAME, "h1")))
        wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, '[data-testid="stDataFrame"]')))
        browser.save_screenshot(str(ARTIFACTS / "leaderboard-model.png"))
        # an element made from the name's Markdown would be an image of src x or a link to z, its entities read as
        # HTML a bold element; the organisation's raw HTML a script or a bold element
        made = "//img[@src='x'] | //a[@href='z'] | //main//b | //script[.='alert(2)']"
        assert not browser.find_elements(By.XPATH, made)
        assert browser.find_element(By.TAG_NAME, "h1").text == f"Model: {HOSTILE}"  # all of it, as text

        # a dialogue attack's conversation, turn by turn, once the reader asks for the texts
        browser.get(f"http://127.0.0.1:{port}/?page=Models&model=dialogue-fixture")
        toggle = wait.until(EC.element_to_be_clickable((By.XPATH, "//label[contains(., 'Show texts')]")))
        assert not browser.find_elements(By.CSS_SELECTOR, '[data-testid="stChatMessage"]')
        toggle.click()
        # four messages drawn, the last with its text (an element can show its avatar before its text)
        wait.until(lambda d: len(found := d.find_elements(By.CSS_SELECTOR, '[data-testid="stChatMessage"]')) >= 4
                   and "target reply 2" in found[3].text)
        messages = browser.find_elements(By.CSS_SELECTOR, '[data-testid="stChatMessage"]')
        browser.execute_script("arguments[0].scrollIntoView();", messages[0])
        turns = [m.text for m in messages]
        assert "attacker, turn 1" in turns[0] and "target, turn 1" in turns[1]
        assert "target reply 2 **not bold**" in turns[3]
        browser.save_screenshot(str(ARTIFACTS / "leaderboard-conversation.png"))

        # a model with an over-refusal card: the chart on its page too
        browser.get(f"http://127.0.0.1:{port}/?page=Models&model=gpt-4-xstest")
        chart = wait.until(EC.presence_of_element_located((By.XPATH, tradeoff)))
        browser.execute_script("arguments[0].scrollIntoView();", chart)
        browser.save_screenshot(str(ARTIFACTS / "leaderboard-model-tradeoff.png"))
