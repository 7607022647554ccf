"""Check results kept by content (submissions/checked.py): found again for the same bytes only."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import copy_published

from benchmark import submissions as S
from benchmark.submissions import rules
from benchmark.submissions.checked import CheckStore

APP = Path(__file__).resolve().parents[1] / "leaderboard" / "app.py"


def _published(root: Path, name: str = "profanity-check", as_name: str | None = None) -> Path:
    folder = root / (as_name or name)
    copy_published(name, folder)
    if as_name:
        import yaml

        model = yaml.safe_load((folder / S.MODEL_FILE).read_text())
        model["name"] = as_name
        (folder / S.MODEL_FILE).write_text(yaml.safe_dump(model, sort_keys=False))
        for path in folder.glob("*.json"):
            card = json.loads(path.read_text())
            card.pop("verification", None)
            card["model"]["name"], card["model"]["config"] = as_name, model
            path.write_text(json.dumps(card))
    return folder


def _counting(monkeypatch, module, name: str) -> list:
    calls, real = [], getattr(module, name)

    def counted(*args, **kwargs):
        calls.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, counted)
    return calls


def test_a_card_is_checked_once_and_again_only_when_its_bytes_change(tmp_path, monkeypatch):
    _published(tmp_path / "subs")
    store_path = tmp_path / "checks.sqlite"
    checks = _counting(monkeypatch, S.loading, "check_card")
    first = S.load(tmp_path / "subs", thorough=True, store=CheckStore(store_path))
    assert len(first.cards) == 1 and not first.rejected and len(checks) == 1
    again = S.load(tmp_path / "subs", thorough=True, store=CheckStore(store_path))  # another process, the same file
    assert [c.card for c in again.cards] == [c.card for c in first.cards] and len(checks) == 1
    assert len(S.load(tmp_path / "subs", thorough=True, store=CheckStore(store_path, fresh=True)).cards) == 1
    assert len(checks) == 2  # fresh: checked again

    # one byte of the samples changed in place: the same size, and the old modification time put back
    samples = tmp_path / "subs" / "profanity-check" / "diasafety.samples.jsonl.gz"
    info, raw = samples.stat(), bytearray(samples.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    samples.write_bytes(bytes(raw))
    os.utime(samples, ns=(info.st_atime_ns, info.st_mtime_ns))
    assert (samples.stat().st_size, samples.stat().st_mtime_ns) == (info.st_size, info.st_mtime_ns)
    forged = S.load(tmp_path / "subs", thorough=True, store=CheckStore(store_path))
    assert not forged.cards and len(checks) == 3
    assert any(p.field == "samples.sha256" for p in forged.rejected), forged.rejected


def test_validate_leaves_the_board_nothing_to_check(tmp_path, monkeypatch):
    from benchmark.submissions.package import validate

    _published(tmp_path / "subs")
    monkeypatch.setenv("BENCHMARK_CHECKS", str(tmp_path / "checks.sqlite"))
    assert validate([tmp_path / "subs"]) == (1, [])
    checks = _counting(monkeypatch, S.loading, "check_card")
    assert len(S.load(tmp_path / "subs", thorough=True, store=CheckStore()).cards) == 1 and checks == []
    assert validate([tmp_path / "subs"]) == (1, []) and len(checks) == 1  # validate itself always checks


def test_copies_of_one_samples_file_are_scored_once(tmp_path, monkeypatch):
    for name in ("copy-a", "copy-b"):
        _published(tmp_path / "subs", as_name=name)
    scored = _counting(monkeypatch, rules, "_given")
    loaded = S.load(tmp_path / "subs", thorough=True, store=CheckStore(tmp_path / "checks.sqlite"))
    assert {c.card["model"]["name"] for c in loaded.cards} == {"copy-a", "copy-b"} and not loaded.rejected
    assert len(scored) == 1


def test_a_forged_metric_is_rejected_through_the_store_too(tmp_path):
    folder = _published(tmp_path / "subs")
    store = tmp_path / "checks.sqlite"
    assert S.load(tmp_path / "subs", thorough=True, store=CheckStore(store)).cards
    card = json.loads((folder / "diasafety.json").read_text())
    card["metrics"]["macro_f1"]["value"] += 0.05  # what the samples give is kept; the card's claim is compared again
    (folder / "diasafety.json").write_text(json.dumps(card))
    forged = S.load(tmp_path / "subs", thorough=True, store=CheckStore(store))
    assert not forged.cards
    assert any(p.field == "metrics.macro_f1" and "is not what the samples give" in p.message for p in forged.rejected)


def test_the_board_checks_a_card_changed_after_it_started(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    folder = _published(tmp_path / "subs")
    monkeypatch.setenv("BENCHMARK_SUBMISSIONS", str(tmp_path / "subs"))
    monkeypatch.setenv("BENCHMARK_CHECKS", str(tmp_path / "checks.sqlite"))
    at = AppTest.from_file(str(APP), default_timeout=120).run()
    assert not at.exception and list(at.dataframe[0].value["model"]) == ["profanity-check"]
    card = json.loads((folder / "diasafety.json").read_text())
    card["metrics"]["macro_f1"]["value"] = 0.99
    (folder / "diasafety.json").write_text(json.dumps(card))
    at.run()
    assert not at.exception
    assert not at.dataframe or "profanity-check" not in set(at.dataframe[0].value["model"])
    rejected = [t.value for t in at.sidebar.text]
    assert any("metrics.macro_f1" in r and "is not what the samples give" in r for r in rejected), rejected


def test_a_server_made_ready_draws_its_first_page_without_loading_and_checks_a_card_changed_after(tmp_path,
                                                                                                   monkeypatch):
    """serve.py loads the cards as soon as it starts (cards.warm): the first page is drawn from that load, and a
    card changed on disk after the server started is checked again, and rejected when forged."""
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    folder = _published(tmp_path / "subs")
    monkeypatch.setenv("BENCHMARK_SUBMISSIONS", str(tmp_path / "subs"))
    monkeypatch.setenv("BENCHMARK_CHECKS", str(tmp_path / "checks.sqlite"))
    monkeypatch.syspath_prepend(str(APP.parent))
    import cards

    st.cache_resource.clear()  # a new server process
    loads = _counting(monkeypatch, S, "load")
    cards.warm()
    assert len(loads) == 1
    at = AppTest.from_file(str(APP), default_timeout=120).run()
    assert not at.exception and list(at.dataframe[0].value["model"]) == ["profanity-check"]
    assert len(loads) == 1  # the first page: the server's load, not another

    card = json.loads((folder / "diasafety.json").read_text())
    card["metrics"]["macro_f1"]["value"] = 0.99
    (folder / "diasafety.json").write_text(json.dumps(card))
    at.run()
    assert len(loads) == 2 and not at.exception
    assert not at.dataframe or "profanity-check" not in set(at.dataframe[0].value["model"])
    assert any("metrics.macro_f1" in t.value and "is not what the samples give" in t.value for t in at.sidebar.text)


def test_a_board_with_results_kept_reads_no_card_whole_until_a_page_shows_it(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    _published(tmp_path / "subs")
    _published(tmp_path / "subs", "smollm2-135m-instruct", "second-model")
    monkeypatch.setenv("BENCHMARK_SUBMISSIONS", str(tmp_path / "subs"))
    monkeypatch.setenv("BENCHMARK_CHECKS", str(tmp_path / "checks.sqlite"))
    first = AppTest.from_file(str(APP), default_timeout=120).run()
    assert not first.exception
    shown = first.dataframe[0].value
    import streamlit as st

    st.cache_resource.clear()  # a new server process: the results on disk only
    read = _counting(monkeypatch, S.card, "card_bytes")  # a page reading a card, and the loader (below) alike
    monkeypatch.setattr(S.loading, "card_bytes", S.card.card_bytes)
    again = AppTest.from_file(str(APP), default_timeout=120).run()
    assert not again.exception and again.dataframe[0].value.equals(shown)
    assert read == []  # the overview from the kept summaries: no card file read


    models = AppTest.from_file(str(APP), default_timeout=120)
    models.query_params["page"] = "Models"
    models.query_params["model"] = "second-model"
    models.run()
    assert not models.exception and models.title[0].value == "Model: second\\-model"
    assert sorted(p.name for p in read) == sorted(p.name for p in (tmp_path / "subs" / "second-model").glob("*.json"))
    # its cards read whole now, and only its


def test_a_card_read_after_its_check_must_be_the_bytes_checked(tmp_path):
    from benchmark import BenchmarkError

    folder = _published(tmp_path / "subs")
    store_path = tmp_path / "checks.sqlite"
    S.load(tmp_path / "subs", thorough=True, store=CheckStore(store_path))
    [card] = S.load(tmp_path / "subs", thorough=True, store=CheckStore(store_path)).cards
    assert card.summary.model == "profanity-check" and "card" not in card.__dict__  # not read yet
    raw = json.loads((folder / "diasafety.json").read_text())
    raw["metrics"]["macro_f1"]["value"] = 0.99
    (folder / "diasafety.json").write_text(json.dumps(raw))
    with pytest.raises(BenchmarkError, match="changed since it was checked"):
        card.card


def test_a_folder_keeps_one_result_however_often_it_changes(tmp_path):
    import sqlite3

    folder = _published(tmp_path / "subs")
    store_path = tmp_path / "checks.sqlite"
    for value in (0.5, 0.6, 0.7):  # each a change that is checked again (and rejected: the samples say otherwise)
        card = json.loads((folder / "diasafety.json").read_text())
        card["metrics"]["macro_f1"]["value"] = value
        (folder / "diasafety.json").write_text(json.dumps(card))
        loaded = S.load(tmp_path / "subs", thorough=True, store=CheckStore(store_path))
        assert any("metrics.macro_f1" in str(p) for p in loaded.rejected)
    rows = sqlite3.connect(store_path).execute("SELECT key FROM folders").fetchall()
    assert sorted(k.split(" ")[0] for (k,) in rows) == ["folder", "root"]  # one slot each, the newest result


@pytest.mark.parametrize("damage", ["not a database", "a folder"])
def test_a_store_that_cannot_be_opened_names_its_file(tmp_path, damage):
    from benchmark import BenchmarkError

    path = tmp_path / "checks.sqlite"
    if damage == "not a database":
        path.write_bytes(b"not a database" * 100)
    else:
        path.mkdir()  # a folder where the file should be
    with pytest.raises(BenchmarkError, match=f"check store {path}"):
        CheckStore(path)
