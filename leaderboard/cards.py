"""The board's score cards: which folder it shows, and the cards loaded from it once per process and change (kept by
Streamlit's cache_resource, for every visitor), each checked by the suite, and tried against every table a page
builds. `warm` loads them as soon as a server starts (serve.py)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import streamlit as st

import tables as T
from benchmark import submissions as S
from benchmark.submissions.checked import CheckStore
from benchmark.submissions.checked import key as checked_key

HERE = Path(__file__).resolve().parent
BOARD_CODE = ("app.py", "cards.py", "tables.py")  # what decides whether a card can be shown, beside the suite


def submissions_root() -> Path:
    return Path(os.environ.get("BENCHMARK_SUBMISSIONS") or S.SUBMISSIONS_DIR)


def runs_root() -> Path | None:
    """Your own run folders (python -m benchmark view): shown instead of the published cards."""
    return Path(os.environ["BENCHMARK_RUNS"]) if os.environ.get("BENCHMARK_RUNS") else None


def _signature(root: Path, name: str | None = None) -> str:
    """Changes whenever a file under root (with `name`: a file of that name) does: the key that keeps the cached load
    fresh. A digest, not the list: Streamlit hashes a cached function's arguments on every rerun."""
    h = hashlib.sha256()
    todo = [str(root)] if root.is_dir() else []
    while todo:
        with os.scandir(todo.pop()) as found:
            entries = sorted(found, key=lambda e: e.name)
        for e in entries:
            if e.is_dir(follow_symlinks=False):
                todo.append(e.path)
            elif e.is_file() and (name is None or e.name == name):
                info = e.stat()
                h.update(f"{e.path}\0{info.st_mtime_ns}\0{info.st_ctime_ns}\0{info.st_size}\n".encode(
                    "utf-8", "surrogateescape"))
    return h.hexdigest()


def showable(cards: list, registry: dict) -> None:
    """Builds every table the pages build from these cards; raises what a page would."""
    T.models_frame(cards)
    T.overview(cards, registry)
    T.apart_frame(cards)
    for name in sorted({c.summary.task for c in cards}):
        on_task = [c for c in cards if c.summary.task == name]
        T.task_frame(on_task, name)
        T.breakdown(on_task, registry[name])
    for c in cards:
        T.model_row(c, registry[c.summary.task])


def board_fingerprint() -> str:
    """The board's own code: what decides whether a card can be shown, beside the suite's checks."""
    return hashlib.sha256(b"".join((HERE / name).read_bytes() for name in BOARD_CODE)).hexdigest()


# a resource, not data: the same objects on every rerun (copying a thousand cards would cost each rerun a second);
# the pages only read them
@st.cache_resource(show_spinner="Loading score cards…", max_entries=2)
def load(root: str, signature: str, _state=None) -> tuple[list, list[str], dict]:
    """The cards that pass every check and that every page can show; the reasons for the others.

    A card known to be showable (the same bytes shown by the same board code before, kept in the check store) is
    not tried again, so a board of thousands of cards reads none of them whole until a page shows one."""
    if runs_root() is not None:
        loaded, registry = S.load_runs(Path(root))
        cards, rejected = loaded.cards, [str(p) for p in loaded.rejected]
        cards = showable_cards(cards, cards, registry, rejected)
    else:
        store = CheckStore()
        try:
            registry = store.registry()
            loaded = S.load(Path(root), thorough=True, data_root=os.environ.get("BENCHMARK_DATA_ROOT"), store=store,
                            state=_state)
            cards, rejected = loaded.cards, [str(p) for p in loaded.rejected]
            board = board_fingerprint()
            every = checked_key("shown", root, signature, board)  # these very files, shown before by this code
            if not store.shown(every):
                keys = {id(c): checked_key("shown", c.check_key, board) for c in cards if c.check_key is not None}
                new = [c for c in cards if id(c) not in keys or not store.shown(keys[id(c)])]
                cards = showable_cards(cards, new, registry, rejected)
                for c in set(map(id, new)) & set(map(id, cards)) & set(keys):
                    store.keep_shown(keys[c])
                if len(cards) == len(loaded.cards):
                    store.keep_shown(every)
            store.save()
        finally:
            store.close()
    return cards, [r.replace(str(Path(root)) + os.sep, "") for r in rejected], registry


def showable_cards(cards: list, new: list, registry: dict, rejected: list[str]) -> list:
    """The cards every page can show, the `new` ones tried: all at once, and only when that fails each on its own
    (a thousand cards at once take a small part of the time they take one by one). A folder with a card that cannot
    be shown shows none (a folder is one submission). The reasons go to `rejected`."""
    try:
        showable(new, registry)
        return cards
    except Exception:
        pass
    failed = set()
    for card in new:
        try:
            showable([card], registry)
        except Exception as e:  # a card the checks let through that a table cannot hold
            rejected.append(f"{card.path}: cannot be shown: {type(e).__name__}: {e}")
            failed.add(card.path)
    folders = {path.parent for path in failed}
    for folder in sorted(folders):
        others = sum(c.path.parent == folder and c.path not in failed for c in cards)
        if others:
            rejected.append(f"{folder}: {others} other card(s) not shown: a card of this folder cannot be shown")
    return [c for c in cards if c.path.parent not in folders]


def kept(root: Path) -> tuple[list, list[str], dict]:
    """`load` for this folder as it is now: the call every visitor's page makes, answered from the cache while the
    folder is unchanged."""
    # run folders: only a finished (re)written card changes what is shown; a run in progress, the response cache
    # and sweep logs churn beside them
    if root == runs_root():
        return load(str(root), _signature(root, "scorecard.json"))
    state = S.RootState.of(root)  # read once: the cache's key, and what the loader looks at
    return load(str(root), state.digest, state)


def warm() -> None:
    """What a server does as soon as it starts: import what the pages draw with (the tables bring pandas, half a
    second alone) and load the cards, so that a visitor after a restart finds them loaded. A failure is left for the
    page, which reports it."""
    import charts  # noqa: F401

    try:
        kept(runs_root() or submissions_root())
    except Exception:
        pass
