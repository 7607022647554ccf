"""SafetyBench's Chinese subset: answers joined from their own file, 2 to 4 options a question, log-likelihoods of
the offered letters only, a letter a question does not offer read as invalid, scored by hand on a scripted model."""

from __future__ import annotations

import json

import pytest
from conftest import data_path
from fakes import FakeModel

from benchmark import BenchmarkError
from benchmark.kinds import make_kind
from benchmark.kinds.base import Roles
from benchmark.run.runner import _plain_task
from benchmark.composition import compose

QUESTIONS = [  # id, category, options, answer (0 -> A)
    (0, "Offensiveness", ["是。", "否。"], 1),
    (1, "Offensiveness", ["是。", "否。"], 0),
    (2, "Mental Health", ["甲", "乙", "丙", "丁"], 3),
    (3, "Mental Health", ["甲", "乙", "丙"], 2),
]


@pytest.fixture
def safetybench_root(tmp_path):
    """The two files in SafetyBench's layout, of our own: the questions, and the answers by id."""
    (tmp_path / "safetybench").mkdir()
    rows = [{"id": i, "category": c, "options": o, "question": f"问题 {i}"} for i, c, o, _ in QUESTIONS]
    answers = {str(i): {"category": c, "answer": a} for i, c, _, a in QUESTIONS}
    (tmp_path / "safetybench" / "test_zh_subset.json").write_text(json.dumps(rows, ensure_ascii=False), "utf-8")
    (tmp_path / "safetybench" / "test_answers_zh.json").write_text(json.dumps(answers), "utf-8")
    return tmp_path


def kind_and_records(root, *overrides):
    from benchmark.data import load_records

    cfg = compose(["task=safetybench_zh", f"data_root={root}", *overrides])
    task = _plain_task(cfg.task)
    return make_kind(task, cfg.model), load_records(task, str(root))


def test_the_answers_join_the_questions_by_id_and_a_question_without_one_is_malformed(safetybench_root):
    kind, records = kind_and_records(safetybench_root)
    assert [(r["id"], r["answer"], r["n_options"]) for r in records.items] == [
        ("0", 1, "2"), ("1", 0, "2"), ("2", 3, "4"), ("3", 2, "3")]
    assert [kind.targets(r)[None] for r in records.items] == ["B", "A", "D", "C"]
    assert "(C) 丙\n" in kind.messages(records.items[3])[0]["content"]
    answers = safetybench_root / "safetybench" / "test_answers_zh.json"
    answers.write_text(json.dumps({"0": {"answer": 1}}))
    _, records = kind_and_records(safetybench_root)
    assert [m["id"] for m in records.malformed] == ["1", "2", "3"]
    assert "missing field(s) ['answer']" in records.malformed[0]["error"]
    answers.write_text("[1, 2]")
    with pytest.raises(BenchmarkError, match="data.join: .* must hold one JSON object"):
        kind_and_records(safetybench_root)


def test_log_likelihoods_rank_only_the_letters_a_question_offers(safetybench_root):
    kind, records = kind_and_records(safetybench_root)
    # D is the likeliest letter everywhere; A next: a two- or three-option question must answer A
    model = FakeModel(loglikelihood=lambda r: {"D": -1.0, "A": -2.0}.get(r.continuation, -5.0))
    samples = kind.evaluate(records.items, Roles(model=model))
    assert [r.continuation for r in model.asked] == ["A", "B", "A", "B", "A", "B", "C", "D", "A", "B", "C"]
    assert model.not_asked == 4 * 4 - 11
    assert [s["prediction"] for s in samples] == ["A", "A", "D", "A"]
    metrics, breakdown = kind.score(samples, resamples=50, seed=0)
    # right on question 1 (A) and 2 (D): 2 of 4; Offensiveness 1 of 2, Mental Health 1 of 2
    assert metrics["accuracy"]["value"] == pytest.approx(0.5) and metrics["invalid_rate"]["value"] == 0
    assert breakdown["by_category"]["Offensiveness"]["accuracy"] == pytest.approx(0.5)
    assert breakdown["by_n_options"]["4"]["accuracy"] == 1.0


def test_a_generated_letter_the_question_does_not_offer_is_invalid_also_when_checked_without_the_data(
        safetybench_root):
    kind, records = kind_and_records(safetybench_root, "model=smollm2-135m-instruct", "model.scoring=generate")
    said = {"0": "答案是B", "1": "(C)", "2": "D", "3": "我不知道"}
    samples = kind.evaluate(records.items, Roles(model=FakeModel(
        generate=lambda r: said[r.messages[0]["content"].split("问题 ")[1][0]])))
    assert [s["prediction"] for s in samples] == ["B", "invalid", "D", "invalid"]
    metrics, _ = kind.score(samples, resamples=50, seed=0)
    assert metrics["accuracy"]["value"] == pytest.approx(0.5) and metrics["invalid_rate"]["value"] == 0.5
    # a published sample keeps no input: its group says how many letters the question offered
    packaged = [{k: v for k, v in s.items() if k != "input"} for s in samples]
    assert all(kind.derivation_problems(s) == [] for s in packaged)
    forged = {**packaged[1], "prediction": "C"}
    assert kind.derivation_problems(forged)[0][0] == "prediction"


def test_the_released_subset_is_the_pinned_one(compose, data_root, tmp_path):
    from benchmark.data import load_records

    data_path("safetybench", "test_zh_subset.json")
    cfg = compose("task=safetybench_zh")
    records = load_records(_plain_task(cfg.task), str(data_root))
    assert len(records.items) == 2100 and not records.malformed
    assert records.sha256 == cfg.task.pinned.sha256
    assert {r["n_options"] for r in records.items} == {"2", "3", "4"}
