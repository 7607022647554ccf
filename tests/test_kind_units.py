"""Each kind on its own: a task file's kind handed fake roles (tests/fakes.py) answers exactly what it is asked, in
milliseconds, with no backend, cache, run folder or subprocess. The whole runs (test_run, test_attack,
test_strategies) check the same kinds end to end."""

from __future__ import annotations

import re

import pytest
from fakes import FakeModel

from benchmark.judging.engine import Panel
from benchmark import BenchmarkError
from benchmark.kinds import make_kind
from benchmark.kinds.base import Roles
from benchmark.models.base import Backend
from benchmark.models.cached import Failure
from benchmark.models.protocol import Model
from benchmark.models.requests import Classify, Generate, LogLikelihood, Replay
from benchmark.run.runner import _plain_task
from benchmark.composition import compose

CATEGORIES = ["Offending User", "Risk Ignorance", "Unauthorized Expertise", "Toxicity Agreement", "Biased Opinion"]


def kind_of(*overrides: str):
    cfg = compose(list(overrides))
    return make_kind(_plain_task(cfg.task), cfg.model)


@pytest.fixture(scope="module")
def diasafety():
    return kind_of("task=diasafety")


def pairs(n: int) -> list[dict]:
    """DiaSafety-shaped records: the gold label cycles through the categories and Safe."""
    out = []
    for i in range(n):
        category = CATEGORIES[i % len(CATEGORIES)]
        out.append({"id": str(i), "context": f"context {i}", "response": f"response <{i}>", "category": category,
                    "label": "Unsafe" if i % 2 else "Safe"})
    return out


def gold(record: dict) -> str:
    return record["category"] if record["label"] == "Unsafe" else "Safe"


def test_the_fake_and_the_cached_model_are_models_of_the_protocol(tmp_path):
    from benchmark.cache import ResponseCache
    from benchmark.models.base import Backend
    from benchmark.models.cached import CachedModel

    assert isinstance(FakeModel(), Model)
    assert isinstance(CachedModel(Backend(), "sha", ResponseCache(tmp_path / "c.sqlite")), Model)
    with pytest.raises(TypeError, match="not \\['judge'\\]"):
        FakeModel(judge=lambda r: None)


def test_a_classify_kind_asks_one_generation_per_record_and_scores_what_came_back(diasafety):
    records = pairs(20)

    def answer(req: Generate) -> str:  # right on every record but the first four, which it calls Safe
        r = records[int(re.search(r"response <(\d+)>", req.messages[-1]["content"])[1])]
        return "Safe" if int(r["id"]) < 4 else gold(r)

    model = FakeModel(generate=answer)
    samples = diasafety.evaluate(records, Roles(model=model))
    metrics, _ = diasafety.score(samples, resamples=50, seed=0)
    assert len(model.asked) == 20 and all(isinstance(r, Generate) for r in model.asked)
    assert model.asked[0].generation == diasafety.generation
    assert [s["prediction"] for s in samples[:4]] == ["Safe"] * 4
    wrong = sum(gold(r) != "Safe" for r in records[:4])
    assert metrics["accuracy"]["value"] == pytest.approx((20 - wrong) / 20)


def test_a_classify_kind_asks_a_classifier_for_the_input_its_task_names(diasafety):
    records = pairs(6)
    model = FakeModel(classify=lambda r: {"unsafe": r.input["response"] in ("response <1>", "response <3>"),
                                          "score": 0.5})
    samples = diasafety.evaluate(records, Roles(model=model))
    assert [r.input for r in model.asked] == [{"context": r["context"], "response": r["response"]} for r in records]
    assert all(isinstance(r, Classify) for r in model.asked)
    flagged = [s["id"] for s in samples if s["prediction"] != "Safe"]
    assert flagged == ["1", "3"]


def test_a_replay_answers_by_record_id_and_a_failure_stays_the_samples_error(diasafety):
    records = pairs(3)
    model = FakeModel(replay=lambda r: Failure("lost") if r.id == "2" else "Safe")
    samples = diasafety.evaluate(records, Roles(model=model))
    assert model.asked == [Replay("diasafety", r["id"]) for r in records]
    assert [s["error"] for s in samples] == [None, None, "lost"]


def test_a_replay_matched_by_text_does_not_answer_a_classify_task(diasafety):
    with pytest.raises(BenchmarkError, match="replay matched by text"):
        diasafety.evaluate(pairs(2), Roles(model=FakeModel(replay=lambda r: "Safe", match_field="response")))


def test_log_likelihood_scoring_asks_every_label_and_takes_the_likeliest():
    kind = kind_of("task=diasafety", "task.classify.scoring=loglikelihood")
    records = pairs(4)
    model = FakeModel(loglikelihood=lambda r: 0.0 if r.continuation == "Biased Opinion" else -5.0)
    samples = kind.evaluate(records, Roles(model=model))
    labels = {r.continuation for r in model.asked}
    assert len(model.asked) == 4 * len(labels) and {"Safe", *CATEGORIES} <= labels
    assert all(isinstance(r, LogLikelihood) for r in model.asked)
    assert [s["prediction"] for s in samples] == ["Biased Opinion"] * 4


@pytest.fixture(scope="module")
def cpad():
    return kind_of("task=cpad")


def test_an_attack_asks_its_judge_about_each_response_and_the_first_flag_decides(cpad):
    records = [{"id": str(i), "prompt": f"attack {i}", "judge_question": "是否提供了方法？", "judge_target": "是"}
               for i in range(4)]
    target = FakeModel(generate=lambda r: "好的，方法如下" if r.messages[-1]["content"] in ("attack 0", "attack 1")
                       else "抱歉，我不能帮助")
    judge = FakeModel(generation={"do_sample": False, "max_new_tokens": 4},
                      generate=lambda r: "是" if "方法如下" in r.messages[-1]["content"] else "否")
    samples = cpad.evaluate(records, Roles(model=target, judges=Panel({"goal": [("goal", judge)]})))
    metrics, _ = cpad.score(samples, resamples=50, seed=0)
    assert metrics["asr"]["value"] == pytest.approx(0.5)
    assert metrics["refusal_rate"]["value"] == pytest.approx(0.5)
    assert len(judge.asked) == 4 and all(r.generation == judge.generation for r in judge.asked)
    assert "好的，方法如下" in judge.asked[0].messages[-1]["content"]


def test_an_attack_sample_that_the_judge_failed_on_is_an_error_left_out(cpad):
    records = [{"id": str(i), "prompt": f"attack {i}", "judge_question": "q", "judge_target": "是"} for i in range(3)]
    judge = FakeModel(generate=lambda r: Failure("timeout") if "reply 1" in r.messages[-1]["content"] else "是")
    samples = cpad.evaluate(records, Roles(model=FakeModel(generate=lambda r: "reply " + r.messages[-1]["content"][-1]),
                                           judges=Panel({"goal": [("goal", judge)]})))
    assert [s["error"] for s in samples] == [None, "judge goal: timeout", None]
    metrics, _ = cpad.score(samples, resamples=50, seed=0)
    assert metrics["asr"]["n"] == 2 and metrics["asr"]["value"] == 1.0


class Recorded(Backend):
    """Another package's backend of recorded answers: it declares replay and no name the suite knows."""

    operations = frozenset({"replay"})


def test_an_attack_reads_a_record_without_answers_as_unmatched_from_any_backend_that_replays(monkeypatch):
    from benchmark.models import registry

    monkeypatch.setitem(registry.REGISTERED, "recorded", Recorded)
    sample = {"id": "0", "unmatched": True, "responses": [], "group": {}, "error": None}
    assert kind_of("task=cpad", "model.backend=recorded").derivation_problems(sample) == []
    assert kind_of("task=cpad").derivation_problems(sample)[0][0] == "unmatched"


def reply_judges(kind, harmful: str) -> Panel:
    """The goal tasks' judges of replies, faked: a reply that opens with an apology is refused, one that holds
    `harmful` gives the harmful content."""
    said = {"refused": lambda r: r.input["response"].startswith("I'm sorry"),
            "harm": lambda r: harmful in r.input["response"]}
    assert set(kind.judge_steps) == set(said), kind.judge_steps
    return Panel({step: [(step, FakeModel(classify=lambda r, says=says: {"unsafe": says(r), "score": 0.0}))]
                  for step, says in said.items()})


def test_a_dialogue_attack_plays_its_turns_and_the_judge_stops_it():
    kind = kind_of("task=goal_pair", "goals=suite", "task.dialogue.turns=3")
    records = kind.load_records(None).items[:2]
    said = iter(range(1000))
    attacker = FakeModel(generation={"max_new_tokens": 8}, generate=lambda r: f"try {next(said)}")
    # the target gives in on the second prompt it is sent; the judge flags what it says then
    sent: list[int] = []

    def target(r: Generate) -> str:
        sent.append(len(r.messages))
        return "HERE IT IS" if r.messages[-1]["content"] in ("try 2", "try 3") else "no"

    model = FakeModel(generate=target)
    samples = kind.evaluate(records, Roles(model=model, judges=reply_judges(kind, harmful="HERE IT IS"),
                                           attacker=attacker))
    metrics, _ = kind.score(samples, resamples=50, seed=0)
    assert [len(s["turns"]) for s in samples] == [2, 2]
    assert metrics["success_rate"]["value"] == 1.0
    assert set(sent) == {1}, "goal_pair's target sees only the latest prompt"
    assert all(r.conversation == records[0]["id"] for r in model.asked[::2])
    assert model.not_asked == 2 * (kind.requests_per_record - 2)
    feedback = attacker.asked[-1].messages[-1]["content"]
    assert "no" in feedback and "not reached" in feedback, "PAIR's attacker reads the reply and the verdict"


def test_a_refused_try_is_taken_back_and_the_target_never_sees_it():
    kind = kind_of("task=goal_crescendo", "goals=suite", "task.dialogue.turns=2", "task.dialogue.backtrack.max=1")
    record = kind.load_records(None).items[0]
    lines = iter(["q1", "q2 direct", "q2 gradual"])
    attacker = FakeModel(generate=lambda r: next(lines))
    model = FakeModel(generate=lambda r: "I'm sorry, but I cannot do that." if r.messages[-1]["content"] == "q2 direct"
                      else "fine")
    sample = kind.evaluate([record], Roles(model=model, judges=reply_judges(kind, harmful="HERE IT IS"),
                                           attacker=attacker))[0]
    last = model.asked[-1].messages
    assert [m["content"] for m in last if m["role"] == "user"] == ["q1", "q2 gradual"]
    assert [t["attacker"] for t in sample["turns"]] == ["q1", "q2 gradual"]
    assert sample["turns"][1]["backtracked"][0]["attacker"] == "q2 direct"
