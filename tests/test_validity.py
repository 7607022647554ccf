"""A classifier judge's agreement with human labels (conf/judge_validation.yaml), measured as it judges and recorded
on the card's judge entries."""

from __future__ import annotations

import json

from test_attack import chatbot_root, replay_run  # noqa: F401  (chatbot_root: a fixture)

from benchmark.cache import ResponseCache
from benchmark.models import load_backend
from benchmark.models.cached import CachedModel
from benchmark.schema import DataConfig, ValidationSet
from benchmark.validity import measure


def test_precision_recall_and_specificity_by_hand(compose, tmp_path):
    rows = [{"text": t, "toxic": y} for t, y in [("you idiot", 1), ("idiot", 1), ("hello", 1), ("idiot friend", 0),
                                                   ("fine", 0), ("nice", 0), ("good", 0)]]
    (tmp_path / "labelled.json").write_text(json.dumps(rows))
    vs = ValidationSet(name="mine", data=DataConfig(path="labelled.json"), input={"response": "{{ text }}"},
                       unsafe="{{ toxic == 1 }}")
    judge_cfg = compose("model.name=kw", "model.backend=keywords", "model.phrases=[idiot]").model
    cache = ResponseCache(tmp_path / "cache.sqlite")
    judge = CachedModel(load_backend(judge_cfg, False), "kw-sha", cache, judge_cfg)
    got = measure(judge, str(tmp_path), 200, 1, [vs])["mine"]
    # flagged: the three with "idiot"; two of them toxic: precision 2/3, recall 2/3, specificity 3/4
    assert got["n"] == 7 and got["unsafe"] == round(3 / 7, 4) and got["sha256_matches"] is None
    assert abs(got["precision"]["value"] - 2 / 3) < 1e-9 and abs(got["recall"]["value"] - 2 / 3) < 1e-9
    assert got["specificity"]["value"] == 0.75 and abs(got["f1"]["value"] - 2 / 3) < 1e-9
    assert got["f1"]["ci_low"] <= got["f1"]["value"] <= got["f1"]["ci_high"]
    again = CachedModel(judge.backend, "kw-sha", cache, judge_cfg)
    assert measure(again, str(tmp_path), 200, 1, [vs])["mine"] == got and again.calls == 0 and again.hits == 7
    assert measure(again, str(tmp_path / "elsewhere"), 200, 1, [vs]) == {
        "mine": "not measured: labelled.json is not under data_root"}


def test_the_card_carries_each_judges_measured_quality(compose, chatbot_root):  # noqa: F811
    card, path = replay_run(compose, chatbot_root)
    for judge in card["judges"]:
        diasafety = judge["measured"]["diasafety"]
        assert diasafety["n"] == 12 and diasafety["sha256_matches"] is False  # the fixture, not the released split
        assert set(diasafety) >= {"precision", "recall", "specificity", "f1", "macro_f1"}
        assert judge["measured"]["toxic_chat"].startswith("not measured: ")
    assert card["run"]["judge_calls"] == {"utterance": 6, "context": 16}  # measuring is not judging
    # judges.json lost: the finished run measures its judges again, from the cache, and asks no model
    (path.parent / "judges.json").unlink()
    again, _ = replay_run(compose, chatbot_root)
    assert again["judges"] == card["judges"] and again["run"]["model_calls"] == 0
    assert again["run"]["judge_calls"] == {"utterance": 0, "context": 0}


def test_measuring_can_be_left_out_and_done_later(compose, chatbot_root):  # noqa: F811
    card, _ = replay_run(compose, chatbot_root, "judge_validity=false")
    assert {j["measured"] for j in card["judges"]} == {"not measured: the run said judge_validity=false"}
    again, _ = replay_run(compose, chatbot_root)  # the same run folder, now asked to measure: no model is asked
    assert all(isinstance(j["measured"], dict) for j in again["judges"]) and again["run"]["model_calls"] == 0
