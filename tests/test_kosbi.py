"""KoSBi: Korean social-bias classification scored on a scripted model with figures computed by hand, the answer
parser on Korean and English answers, a classifier baseline, and the released file as pinned."""

from __future__ import annotations

import json

import pytest
from conftest import data_path
from fakes import FakeModel

from benchmark.kinds import make_kind
from benchmark.kinds.base import Roles
from benchmark.run.runner import _plain_task
from benchmark.composition import compose

CATEGORIES = ["성별", "종교", "나이/세대"]


@pytest.fixture(scope="module")
def kosbi():
    cfg = compose(["task=kosbi"])
    return make_kind(_plain_task(cfg.task), cfg.model)


def pairs() -> list[dict]:
    """Twelve pairs in KoSBi's schema: categories in turn, every other sentence unsafe."""
    return [{"id": str(i), "context": f"맥락 {i}", "sentence": f"문장 <{i}>", "demographic_category": CATEGORIES[i % 3],
             "sentence_label": "unsafe" if i % 2 else "safe"} for i in range(12)]


@pytest.mark.parametrize("answer, label", [
    ("unsafe", "unsafe"), ("Safe.", "safe"), ("The sentence is unsafe.", "unsafe"), ("위험", "unsafe"),
    ("안전합니다.", "safe"), ("이 문장은 안전하지 않습니다.", "unsafe"), ("위험하지 않습니다", "safe"),
    ("잘 모르겠습니다", "invalid"),
])
def test_answers_in_english_and_korean_are_read_as_their_label(kosbi, answer, label):
    assert kosbi._answers(answer) == {None: label}


def test_a_scripted_model_scores_as_counted_by_hand_per_demographic_category(kosbi):
    records = pairs()

    def answer(request) -> str:  # says unsafe for pairs 0-5 and safe for 6-11
        i = int(request.messages[-1]["content"].split("<")[1].split(">")[0])
        return "unsafe" if i < 6 else "safe"

    samples = kosbi.evaluate(records, Roles(model=FakeModel(generate=answer)))
    assert "문장 <3>" in samples[3]["prompt"][-1]["content"] and "맥락 3" in samples[3]["prompt"][-1]["content"]
    metrics, breakdown = kosbi.score(samples, resamples=50, seed=0)
    # unsafe gold: 1 3 5 7 9 11; said unsafe: 0-5. unsafe: tp 3 (1 3 5), fp 3 (0 2 4), fn 3 (7 9 11): F1 0.5;
    # safe: tp 3 (6 8 10), fp 3, fn 3: F1 0.5
    assert metrics["accuracy"]["value"] == pytest.approx(6 / 12)
    assert metrics["macro_f1"]["value"] == pytest.approx(0.5)
    assert metrics["invalid_rate"]["value"] == 0
    # 성별 holds pairs 0 3 6 9: said unsafe 0 3, gold unsafe 3 9: right on 3 and 6
    by = breakdown["by_demographic_category"]["성별"]
    assert by["n"] == 4 and by["accuracy"] == pytest.approx(0.5)


def test_macro_f1_per_demographic_category_is_a_metric_with_its_interval(kosbi):
    # says unsafe for pairs 3 and 9 only: both 성별 pairs whose gold label is unsafe
    model = FakeModel(generate=lambda r: "unsafe" if "문장 <3>" in str(r.messages) or "문장 <9>" in str(r.messages)
                      else "safe")
    metrics, _ = kosbi.score(kosbi.evaluate(pairs(), Roles(model=model)), resamples=200, seed=0)
    # 성별 (0 3 6 9): every pair right, macro F1 1.0. 종교 (1 4 7 10): all said safe; safe tp 2 (4 10), fp 2 (1 7):
    # F1 2/3, unsafe F1 0: macro 1/3. 나이/세대 (2 5 8 11) the same
    assert metrics["macro_f1.demographic_category.성별"]["value"] == pytest.approx(1.0)
    assert metrics["macro_f1.demographic_category.종교"]["value"] == pytest.approx(1 / 3)
    assert metrics["macro_f1.demographic_category.나이_세대"]["value"] == pytest.approx(1 / 3)
    religion = metrics["macro_f1.demographic_category.종교"]
    assert religion["n"] == 4 and religion["ci_low"] <= 1 / 3 <= religion["ci_high"] and religion["ci_low"] < religion["ci_high"]
    cfg = compose(["task=kosbi", "task.classify.group_macro_f1=false"])  # off: accuracy per group only
    plain = make_kind(_plain_task(cfg.task), cfg.model)
    assert not any(name.startswith("macro_f1.") for name in
                   plain.score(plain.evaluate(pairs(), Roles(model=model)), resamples=0, seed=0)[0])


def test_a_classifier_reads_the_sentence_as_the_response_to_its_context(kosbi):
    records = pairs()
    model = FakeModel(classify=lambda r: {"unsafe": r.input["response"] in ("문장 <1>", "문장 <3>"), "score": 0.0})
    samples = kosbi.evaluate(records, Roles(model=model))
    assert model.asked[1].input == {"context": "맥락 1", "response": "문장 <1>"}
    assert [s["prediction"] for s in samples[:4]] == ["safe", "unsafe", "safe", "unsafe"]


def test_the_released_test_split_is_the_pinned_one(compose, data_root, tmp_path):
    from benchmark.run.runner import run

    data_path("kosbi", "kosbi_test.json")
    card, path = run(compose("model=profanity-check", "task=kosbi", f"output_dir={tmp_path / 'out'}"))
    assert card["dataset"]["n"] == 3423 and card["dataset"]["sha256_matches_task"] is True
    assert set(card["breakdown"]["by_demographic_category"]) >= {"성별", "종교", "전과"}
    raw = (path.parent / "samples.jsonl").read_text(encoding="utf-8")
    assert "\\u" not in raw and json.loads(raw.splitlines()[0])["target"] in ("safe", "unsafe")
