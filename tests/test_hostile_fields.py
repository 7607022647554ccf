"""Validation, verify's card hash and the board never fail with a traceback on a card: every string field of a
published card given a lone surrogate, a NUL, a BiDi override or a megabyte of text, every number NaN, ±infinity,
null or 1e308, one field at a time. Each variant is refused with a reason, or accepted and then hashed and laid out
in every table of the board. CI takes every 47th field; `-m slow` takes them all."""

from __future__ import annotations

import json
import sys

import pytest
from conftest import REPO
from test_derived_fields import published

from benchmark import submissions as S
from benchmark.submissions.package import validate
from benchmark.identity import card_sha256

MODEL, TASK = "profanity-check", "diasafety"
# raw JSON text for each: a lone surrogate and non-numbers as JSON spells them, which json.dumps would not write
TEXTS = {"surrogate": '"\\ud83d"', "nul": '"a\\u0000b"', "bidi": '"\\u202egnp.exe"', "megabyte": json.dumps("x" * 2**20)}
NUMBERS = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity", "null": "null", "huge": "1e308"}
MARK = "__HOSTILE__"


def leaves(node, path=()):
    """(path, value) of every string and number in a card, dicts and lists walked in order."""
    if isinstance(node, dict):
        for k, v in node.items():
            yield from leaves(v, path + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from leaves(v, path + (i,))
    elif isinstance(node, str) or (isinstance(node, (int, float)) and not isinstance(node, bool)):
        yield path, node


def card() -> dict:
    return json.loads((S.SUBMISSIONS_DIR / MODEL / f"{TASK}.json").read_text())


def cases(every: int):
    found = list(leaves(card()))
    for i, (path, value) in enumerate(found):
        if i % every == 0:
            for name, raw in (TEXTS if isinstance(value, str) else NUMBERS).items():
                yield pytest.param(path, raw, id=f"{'.'.join(map(str, path))[:60]}={name}")


def with_raw(card: dict, path: tuple, raw: str) -> str:
    """The card's JSON text with the field at `path` replaced by the raw JSON text `raw`."""
    node = card
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = MARK
    text = json.dumps(card)
    assert text.count(json.dumps(MARK)) == 1
    return text.replace(json.dumps(MARK), raw)


def check(tmp_path, path, raw):
    folder = published(tmp_path, MODEL, TASK)
    (folder / f"{TASK}.json").write_text(with_raw(card(), path, raw), encoding="utf-8", errors="surrogatepass")
    valid, problems = validate([folder])  # never raises
    if problems:
        assert all(str(p).strip() for p in problems)
        return
    accepted = json.loads((folder / f"{TASK}.json").read_text(encoding="utf-8"))
    card_sha256(accepted)  # what verify hashes and signs
    sys.path.insert(0, str(REPO / "leaderboard"))
    import cards as board
    import tables as T

    loaded = S.load(tmp_path, thorough=True)
    assert loaded.cards, [str(p) for p in loaded.rejected]
    board.showable(loaded.cards, S.task_registry())
    T.tradeoff(loaded.cards, S.task_registry())


@pytest.mark.parametrize("path, raw", list(cases(every=47)))
def test_a_hostile_value_is_refused_or_shown(tmp_path, path, raw):
    check(tmp_path, path, raw)


@pytest.mark.slow
@pytest.mark.parametrize("path, raw", list(cases(every=1)))
def test_every_field_with_every_hostile_value(tmp_path, path, raw):
    check(tmp_path, path, raw)
