"""The public leaderboard's pages: `streamlit run leaderboard/serve.py` serves them with the cards loaded as soon as
the server starts; `streamlit run leaderboard/app.py` serves them alone. The cards come from cards.py.

It reads only `submissions/` (or $BENCHMARK_SUBMISSIONS) and the task definitions in `tasks/`: no model, no GPU, no
network. Every card passes the full checks of `python -m benchmark.submit validate` (its metrics derived again from
its samples) before it is shown; their results are kept by the content checked (submissions/checked.py, in
$BENCHMARK_CHECKS or the suite's cache folder), so a server checks a card once, and again only when the card, its
samples, its model config, its task or the suite changes. A card that fails a check, or that a table cannot hold,
is listed with its reason and left out; a samples file
that cannot be read is reported in the sample browser. Submitted text is shown only through elements that display
it as text, or escaped by `esc` (on one line) where an element renders Markdown; a file a card names is read
only from inside the card's folder. The app listens on 127.0.0.1 unless told otherwise (.streamlit/config.toml
beside it).
"""

from __future__ import annotations

import itertools
import json
import os
import re
import sys
from pathlib import Path
from urllib.parse import quote, urlencode

import pandas as pd
import streamlit as st

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
for path in (REPO / "src", HERE):  # run from a checkout without installing the package (a hosted app)
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

import charts as C  # noqa: E402
import tables as T  # noqa: E402
from cards import kept, runs_root, submissions_root  # noqa: E402

from benchmark import BenchmarkError  # noqa: E402
from benchmark import submissions as S  # noqa: E402
from benchmark.files import inside  # noqa: E402
from benchmark.submissions.summary import MODEL_KINDS  # noqa: E402

PAGES = ["Overview", "Tasks", "Models", "Submit"]
PAGE_SIZE = 50


def esc(text) -> str:
    """Submitted text inside Markdown, on one line: line breaks and other control characters made spaces (a line
    break would let the text start a heading, a list or a code block of its own), then every Markdown and HTML
    character escaped."""
    flat = re.sub(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+", " ", str(text))
    return re.sub(r"([\\`*_{}\[\]()#+\-.!|<>~$&:])", r"\\\1", flat)


def load_or_report(root: Path) -> tuple[list, list[str], dict]:
    """The cards (cards.kept), or none and an error on the page when loading itself fails (the page still renders)."""
    try:
        return kept(root)
    except Exception as e:
        st.error(esc(f"The score cards could not be loaded from {root}: {type(e).__name__}: {e}"))
    try:
        registry = S.task_registry()
    except Exception as e:
        st.error(esc(f"The task definitions could not be loaded: {type(e).__name__}: {e}"))
        registry = {}
    return [], [], registry


@st.cache_data
def samples(path: str, signature: tuple) -> list[dict]:
    return S.read_samples(Path(path))


@st.cache_data(show_spinner="Joining the data set's texts…")
def inputs(task: dict, data_root: str) -> dict[str, dict]:
    """Record texts by id from a local copy of the data (submissions keep ids and hashes only)."""
    from omegaconf import OmegaConf

    from benchmark.data import load_records

    records = load_records(OmegaConf.create(task), data_root)
    return {r["id"]: {k: v for k, v in r.items() if k != "id"} for r in records.items}


def link(page: str, **params) -> str:
    """A link to a page of the app; the values (submitted names) percent-encoded, so none can end the link."""
    return "?" + urlencode({"page": page, **params}, quote_via=quote)


def breakdown_charts(cards: list, task: S.TaskEntry) -> None:
    frame = T.breakdown(cards, task)
    if frame.empty:
        st.caption("This task's cards carry no breakdown.")
        return
    for by, part in frame.groupby("by", sort=False):
        if "judging" in part.columns and part["judging"].isna().all():
            part = part.drop(columns=["judging", "backed"])
        if "judging" in part.columns:
            st.caption("A faint bar is a rate its judges cannot back: they were not measured in that language, or "
                       "barely tell harmful from safe there (Youden's J under the task's floor; the table gives "
                       "each). Its gap to another language is not a finding either.")
        st.vega_lite_chart(spec=C.family_chart(part, by, task), width="stretch")
        with st.expander(esc(f"table: {C.family_title(by, task)}")):
            st.dataframe(part.drop(columns="by"), hide_index=True, width="stretch")


def overview_page(cards: list, registry: dict) -> None:
    st.title("Your runs" if runs_root() is not None else "Safety leaderboard for conversational models")
    st.caption("Every number is a score card produced by the suite: the value and its bootstrap 95% confidence "
               "interval. Blank: no card for that task.")
    tasks = sorted({c.summary.task for c in cards})
    languages = sorted({registry[t].language for t in tasks})
    licences = sorted({c.summary.metadata.get("license") or "" for c in cards})
    kinds = [k for k in MODEL_KINDS if k in {c.summary.kind for c in cards}]
    f1, f2, f3, f4, f5, f6, f7 = st.columns(7)
    pick_lang = f1.multiselect("Language", languages, key="f_language")
    pick_task = f2.multiselect("Task", tasks, key="f_task")
    pick_size = f3.multiselect("Model size", T.SIZES, key="f_size")
    pick_open = f4.selectbox("Open weights", ["any", "yes", "no"], key="f_open")
    pick_licence = f5.multiselect("Licence", licences, key="f_licence")
    pick_kind = f6.multiselect("Kind of model", kinds, key="f_kind")
    with_unverified = f7.checkbox(
        "Rank unverified cards too", value=runs_root() is not None, key="f_unverified",
        help="Off: only verified cards judged by their task's panel are ranked, the others are listed below the "
             "ranking. On: cards no verifier has signed are ranked too, each one's task named in the column "
             "\"not verified\". A card judged by a non-standard panel is never ranked.")

    shown_tasks = [t for t in tasks if (not pick_lang or registry[t].language in pick_lang)
                   and (not pick_task or t in pick_task)]
    # a card no verifier has re-run, or judged by another panel than its task's, is never ranked beside the verified
    # standard ones unless asked for (and then marked): shown apart, below
    split = T.standing([c for c in cards if c.summary.task in shown_tasks], with_unverified)
    chosen = [c for c in split.ranked if T.model_picked(c.summary, pick_size, pick_open, pick_licence, pick_kind)]
    frame = T.overview(chosen, registry)
    if frame.empty:
        st.info("No score card to rank matches these filters." + (
            " The cards shown apart are listed below." if split.unverified or split.nonstandard else ""))
        apart_tables(split)
        return
    heads = [c for c in frame.columns if c.endswith(("↑", "↓"))]
    points = T.headlines(chosen, registry)
    if heads:
        rank_by = st.selectbox("Rank by", heads, key="f_rank")
        # rank groups: a model's rank counts only the models whose interval lies wholly on the better side of its own
        rank = T.ranks([p for p in points if p.column == rank_by])
        frame.insert(0, "rank", pd.array([rank.get(m) for m in frame["model"]], dtype="Int64"))
        frame = frame.sort_values(["rank", rank_by], ascending=[True, rank_by.endswith("↓")], na_position="last")
    if "not verified" in frame.columns:
        st.warning("Unverified cards are ranked here too: the column \"not verified\" names the tasks "
                   "whose figures in a row come from a card no verifier has re-run and signed.")
    if T.UNBACKED in frame.columns:
        st.caption(f"The column \"{T.UNBACKED}\" names, per task, the languages a row's headline averages whose "
                   "rates its judges cannot back: not measured in that language, or barely telling harmful from "
                   "safe there (Youden's J under the task's floor). The headline is then no finding about those "
                   "languages; the task's page gives the rate in each.")
    figures = heads + [c for c in frame.columns if c.endswith(" · judge F1")]
    st.dataframe(frame, column_config={c: st.column_config.NumberColumn(format="%.1f") for c in figures},
                 hide_index=True, width="stretch", placeholder="",
                 height=T.table_height(len(frame)), key="overview_table")
    st.download_button("Download this table (CSV)", lambda frame=frame: T.to_csv(frame), "leaderboard.csv", "text/csv")
    if points:
        st.vega_lite_chart(spec=C.headline_chart(points), width="content")
    tradeoff_chart(chosen, registry)
    apart_tables(split)
    st.markdown("**What the columns mean** (↑ higher is better, ↓ lower is better; judge F1: the task's judging "
                "procedure against human labels, from the card's own outcome on its labelled set; rank: on the column ranked "
                "by, one plus the number of models whose 95% interval lies wholly on the better side of the model's "
                "own, so models the data cannot tell apart share a rank)")
    for language in sorted({registry[t].language for t in shown_tasks}, key=T.language_order):
        st.markdown(f"*{esc(T.language_name(language))}*")
        for task in (registry[t] for t in shown_tasks if registry[t].language == language):
            note = T.METRIC_NOTES.get(task.headline.rsplit(".", 1)[-1], "")
            st.markdown(f"- **{esc(task.name)}** ({esc(task.language)}): {esc(task.headline)}: {esc(note)}. "
                        f"{esc(task.description)} [Task page and definition]({link('Tasks', task=task.name)})")


UNVERIFIED_NOTE = ("**Not verified, not ranked**: no verifier has re-run and signed these cards (tick \"Rank "
                   "unverified cards too\" to rank them beside the others, marked)")
NONSTANDARD_NOTE = ("**Run with a non-standard panel, not ranked**: their rates come from judges the suite has not "
                    "measured as the task's, or from another attacker than the task's")


def tradeoff_chart(cards: list, registry: dict, highlight: str | None = None) -> None:
    """Safety against over-refusal, from the over-refusal cards among `cards` (none: nothing drawn)."""
    frame = T.tradeoff(cards, registry)
    if frame.empty:
        return
    st.subheader("Safety and over-refusal")
    st.caption(C.TRADEOFF_NOTE)
    st.vega_lite_chart(spec=C.tradeoff_chart(frame, highlight), width="content", key=f"tradeoff_{highlight or ''}")


def apart_tables(split: T.Standing, frame_of=T.apart_frame, key: str = "") -> None:
    """The cards a ranking page shows apart, below its ranking: the unverified ones, then the non-standard ones."""
    for cards, note, name in ((split.unverified, UNVERIFIED_NOTE, "unverified_table"),
                              (split.nonstandard, NONSTANDARD_NOTE, "nonstandard_table")):
        if cards:
            st.markdown(note)
            st.dataframe(frame_of(cards), hide_index=True, width="stretch", placeholder="", key=key + name)


def pick(label: str, names: list[str], param: str, key: str) -> str:
    """A choice that a link can make (?param=value) and that the address keeps."""
    wanted = st.query_params.get(param)
    name = st.selectbox(label, names, index=names.index(wanted) if wanted in names else 0, key=key)
    st.query_params[param] = name
    return name


def task_definition(name: str) -> Path | None:
    """The file tasks/NAME.yaml, if there is one; None for a name that would lead outside tasks/."""
    try:
        path = inside(S.TASKS_DIR, f"{name}.yaml", "task")
    except BenchmarkError:
        return None
    return path if path.is_file() else None


def tasks_page(cards: list, registry: dict) -> None:
    names = sorted({c.summary.task for c in cards}) or sorted(registry)
    if not names:
        st.info("No task definition could be read.")
        return
    name = pick("Task", names, "task", "task_pick")
    task = registry[name]
    arrow = "higher is better" if task.better == "higher" else "lower is better"
    st.title(f"Task: {esc(name)}")
    st.markdown(f"{esc(task.description)}\n\nLanguage **{esc(task.language)}**, kind **{esc(task.kind)}**, headline "
                f"**{esc(task.headline)}** ({arrow}), version {esc(task.version)}.")
    if task.citation:
        st.caption(esc(task.citation))
    definition = task_definition(name)
    if definition is not None:
        with st.expander(esc(f"Definition: tasks/{name}.yaml")):
            st.code(definition.read_text(encoding="utf-8"), language="yaml")
    on_task = [c for c in cards if c.summary.task == name]
    if not on_task:
        st.info("No score card for this task yet.")
        return
    with_unverified = st.checkbox(
        "Rank unverified cards too", value=runs_root() is not None, key="task_unverified",
        help="Off: only verified cards judged by the task's panel are ranked, the others are listed below the "
             "ranking. On: cards no verifier has signed are ranked too, marked \"no\" in the column \"verified\". "
             "A card judged by a non-standard panel is never ranked.")
    split = T.standing(on_task, with_unverified)
    if split.ranked:
        frame = T.task_frame(split.ranked, name).sort_values(task.headline, ascending=task.better == "lower")
        if not all(c.summary.verified for c in split.ranked):
            st.warning("Unverified cards are ranked here too: marked \"no\" in the column \"verified\".")
        st.dataframe(frame.style.format("{:.1f}", subset=task_numbers(frame)), hide_index=True, placeholder="",
                     width="stretch", key="task_table")
        st.download_button("Download this table (CSV)", lambda frame=frame: T.to_csv(frame), f"{name}.csv",
                           "text/csv")
    else:
        st.info("No verified score card judged by the task's panel for this task yet: its cards are listed below.")
    apart_tables(split, lambda apart: task_apart(apart, name), key="task_")
    metrics = dict.fromkeys(m for c in on_task for m in c.record.metrics)
    notes = [f"- **{esc(m)}**: {esc(T.METRIC_NOTES[m])}" for m in metrics if m in T.METRIC_NOTES]
    if notes:
        st.markdown("\n".join(notes))
    if split.ranked and (split.unverified or split.nonstandard):
        st.caption("The breakdowns below draw the ranked cards only; a card shown apart has its own on its model's "
                   "page.")
    if split.ranked:
        breakdown_charts(split.ranked, task)


def task_numbers(frame: pd.DataFrame) -> list[str]:
    """A task table's figures (formatted to one decimal)."""
    return [c for c in frame.columns if c not in ("model", "verified", "n", "reads the task's language",
                                                  "judges on human labels", "panel")
            and not c.endswith("95% CI")]


def task_apart(cards: list, task: str):
    """The task's table of cards shown apart: by model, never by score."""
    frame = T.task_frame(cards, task).sort_values("model", kind="stable")
    return frame.style.format("{:.1f}", subset=task_numbers(frame))


def models_page(cards: list, registry: dict) -> None:
    names = sorted({c.summary.model for c in cards})
    if not names:
        st.info("No model has an accepted score card.")
        return
    name = pick("Model", names, "model", "model_pick")
    mine = [c for c in cards if c.summary.model == name]
    st.title(f"Model: {esc(name)}")
    st.dataframe(T.models_frame(mine).drop(columns="model"), hide_index=True, width="stretch")
    with st.expander("Model config (model.yaml)"):
        st.json(mine[0].model_config, expanded=False)
    rows = [T.model_row(c, registry[c.summary.task]) for c in mine]
    st.dataframe(pd.DataFrame(rows).style.format("{:.1f}", subset=["value"]), hide_index=True,
                 width="stretch", key="model_cards")
    spent = T.tokens_frame(mine)
    st.subheader("Tokens and cost")
    if spent.empty:
        st.caption("These cards were made before runs counted their tokens.")
    else:
        st.caption("Per card and role, as each run counted them: the server's count for an API, the model's "
                   "tokenizer otherwise; cached tokens were answered from the response cache and cost nothing.")
        st.dataframe(spent, hide_index=True, width="stretch", key="model_tokens")
    for c in mine:
        task = registry[c.summary.task]
        families = T.breakdown([c], task).groupby("by", sort=False)
        for by, part in itertools.islice(families, 1):  # the card's first breakdown family, as on the task's page
            st.vega_lite_chart(spec=C.family_chart(part, by, task, prefix=f"{task.name}: "), width="stretch")
    if not T.tradeoff(mine, registry).empty:  # this model's figures among the ranked ones of every other model
        others = [c for c in T.standing(cards).ranked if c.summary.model != name]
        tradeoff_chart(others + mine, registry, highlight=name)
    sample_browser(mine, registry)


def _summary(sample: dict, kind) -> dict:
    """A sample's row, as its task's kind lays it out; a sample whose fields have an unexpected shape gets a row that
    says so."""
    try:
        return kind.sample_row(sample)
    except Exception as e:
        return {"id": _text_id(sample.get("id")), "error": f"this sample cannot be shown: {type(e).__name__}: {e}"}


def _text_id(value) -> str:
    return "" if value is None else str(value)


def sample_browser(mine: list, registry: dict) -> None:
    st.subheader("Samples")
    st.warning("Content warning: these data sets and model outputs contain offensive, hateful and harmful text. "
               "Texts stay hidden until you choose to show them.")
    tasks = [c.summary.task for c in mine]
    name = st.selectbox("Task", tasks, key="sample_task")
    card = mine[tasks.index(name)]
    try:
        from benchmark.kinds import kind_class  # the kinds import numpy and jinja2: only where samples are shown

        kind = kind_class(card.record.task.kind)
        rows = [_summary(s, kind) for s in samples(str(card.samples_path), _file_signature(card.samples_path))]
    except Exception as e:  # a samples file changed since it was checked
        reason = str(e).replace(str(submissions_root()) + os.sep, "")
        st.error(esc(f"The samples file {card.record.samples.file} cannot be read: {type(e).__name__}: {reason}"))
        return
    pages = max(1, -(-len(rows) // PAGE_SIZE))
    page = st.number_input(f"Page (of {pages}, {PAGE_SIZE} samples each)", 1, pages, 1, key="sample_page")
    show = st.toggle("Show texts", value=False, key="show_texts")
    frame = pd.DataFrame(rows[(page - 1) * PAGE_SIZE: page * PAGE_SIZE])
    data_root = os.environ.get("BENCHMARK_DATA_ROOT")
    task = registry[name]
    if show and data_root and task.config.get("data") and runs_root() is None:
        try:
            texts = inputs(task.config, data_root)
            frame.insert(1, "input", [json.dumps(texts.get(i, {}), ensure_ascii=False) for i in frame["id"]])
        except Exception as e:  # the browser still works on ids when the local data cannot be read
            st.caption(esc(f"The data set's texts could not be joined from {data_root}: {e}"))
    elif show:
        st.caption("The data set's own texts are not part of a submission (their licences differ); set "
                   "BENCHMARK_DATA_ROOT to a local copy of the data to see them beside the ids.")
    if show and runs_root() is not None:  # your own runs keep the data's texts in their samples
        shown = {_text_id(x.get("id")): x for x in samples(str(card.samples_path), _file_signature(card.samples_path))}
        frame.insert(1, "input", [json.dumps(kind.own_input(shown.get(i, {})), ensure_ascii=False)
                                  for i in frame["id"]])
    if not show:
        frame = frame.drop(columns=["outputs"], errors="ignore")
    st.dataframe(frame, hide_index=True, width="stretch", key="samples_table")
    if show and kind.transcript({}) is not None and not frame.empty:
        shown = samples(str(card.samples_path), _file_signature(card.samples_path))
        by_id = {_text_id(s.get("id")): s for s in shown}
        conversation = st.selectbox("Conversation", list(frame["id"]), key="conversation")
        transcript(kind, by_id.get(conversation, {}))


def transcript(kind, sample: dict) -> None:
    """A sample's conversation message by message, as its kind tells it; submitted texts as plain text."""
    told = kind.transcript(sample)
    st.caption(esc(told.caption))
    for said in told.said:
        with st.chat_message(said.role):
            st.caption(esc(said.caption))
            st.text(said.text)


def _file_signature(path: Path) -> tuple:
    stat = path.stat()
    return (stat.st_mtime_ns, stat.st_size)


def submit_page() -> None:
    guide = REPO / "docs" / "submitting.md"
    st.markdown(guide.read_text(encoding="utf-8") if guide.is_file() else "See docs/submitting.md.")


def main() -> None:
    st.set_page_config(page_title="Safety leaderboard", layout="wide")
    root = runs_root() or submissions_root()
    cards, rejected, registry = load_or_report(root)
    if runs_root() is not None:
        st.sidebar.info(esc(f"Your runs in {root}: as they were written, not checked as submissions are. A limited "
                            "run says so after its model's name."))
    wanted = st.query_params.get("page", PAGES[0])
    page = st.sidebar.radio("Page", PAGES, index=PAGES.index(wanted) if wanted in PAGES else 0, key="page")
    if page != wanted:
        st.query_params.clear()
    st.query_params["page"] = page
    st.sidebar.caption(f"{len(cards)} score cards from {len({c.summary.model for c in cards})} models")
    if rejected:
        with st.sidebar.expander(f"{len(rejected)} rejected", expanded=False):
            for reason in rejected:
                st.text(reason)
    if page == "Overview":
        overview_page(cards, registry)
        if rejected:
            st.warning(f"{len(rejected)} problem(s) with submitted cards; those cards are not shown (see the sidebar).")
    elif page == "Tasks":
        tasks_page(cards, registry)
    elif page == "Models":
        models_page(cards, registry)
    else:
        submit_page()


main()
