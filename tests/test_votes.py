"""Who answered and who voted: forgeries built from published cards, each refused. A role is keyed by what it is,
never by a name the card writes; a vote's flag is what its judge's rule gives from its score or margin; every
judgement's voters are exactly the card's judges of that step; a classifier's verdict holds only its backend's
fields; a judge entry's step type and prompt hash are the task's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import copy_published
from test_submissions import SEED, problems_of

from benchmark import submissions as S
from benchmark.submissions import rules
from benchmark.submissions import samples as SF
from benchmark.submissions.verify import roles
from benchmark.run.card_record import ScoreCard

CHATBOT = "blenderbot-small"  # a published replay judged in two steps: profanity-check, then the detector


def _copy(tmp_path: Path, name: str, card_name: str) -> Path:
    dst = tmp_path / "submissions" / name
    copy_published(name, dst, (card_name.split(".")[0],))
    card = json.loads((dst / card_name).read_text())
    card.pop("verification", None)
    (dst / card_name).write_text(json.dumps(card))
    return dst


def _forge(folder: Path, task: str, change) -> None:
    """Rewrite the samples with `change` and make the card consistent with them as a careful forger would: the
    samples' hash, the metrics and the breakdown recomputed from the forged samples."""
    path, card_path = folder / f"{task}.samples.jsonl.gz", folder / f"{task}.json"
    card = json.loads(card_path.read_text())
    samples = change(S.read_samples(path), card)
    metrics, breakdown = rules.rescored(ScoreCard.model_validate(card), samples)
    card.update(metrics=metrics, breakdown=breakdown)
    card["samples"].update(sha256=SF.write_samples(samples, path), n=len(samples))
    card_path.write_text(json.dumps(card))


def _flagged_by_context(samples):
    """(sample, response) for every response the context step flagged."""
    return [(s, r) for s in samples for r in s["responses"] if r["verdict"] == "context"]


@pytest.fixture
def chatbot(tmp_path) -> Path:
    return _copy(tmp_path, CHATBOT, "diasafety_chatbot.json")


def test_the_published_chatbot_card_is_valid(chatbot):
    assert problems_of(chatbot) == []


def test_a_vote_that_contradicts_its_own_margin_is_refused(chatbot):
    def cleared(samples, card):
        for _, r in _flagged_by_context(samples):
            r["judgements"]["context"]["votes"]["context"]["flagged"] = False
            r["judgements"]["context"]["flagged"] = False
            r["verdict"] = "none"
        return samples

    _forge(chatbot, "diasafety_chatbot", cleared)
    found = problems_of(chatbot)
    assert any("responses.2.judgements.context.votes.context: unsafe False with margin 0.5198" in p
               for p in found), found[:5]


def test_a_vote_from_a_voter_not_on_the_panel_is_refused(chatbot):
    def tied(samples, card):  # one more "no" makes every flag a tie, which the tie rule clears
        for _, r in _flagged_by_context(samples):
            judgement = r["judgements"]["context"]
            judgement["votes"]["ghost"] = {"flagged": False, "score": 0.0, "margin": -1.0}
            judgement.update(flagged=False, tie=True)
            r["verdict"] = "none"
        return samples

    _forge(chatbot, "diasafety_chatbot", tied)
    found = problems_of(chatbot)
    assert any("judgements.context.votes: voters ['context', 'ghost']: the card's judges of step context are "
               "['context'] ('ghost' is none of them)" in p for p in found), found[:5]


def test_a_field_a_vote_never_records_is_refused(chatbot):
    def padded(samples, card):
        samples[0]["responses"][0]["judgements"]["utterance"]["votes"]["utterance"]["override"] = True
        return samples

    _forge(chatbot, "diasafety_chatbot", padded)
    assert any("0: responses.0.judgements.utterance.votes.utterance: holds 'override', which no vote records" in p
               for p in problems_of(chatbot))


def test_a_field_injected_into_a_classifiers_output_is_refused(tmp_path):
    folder = _copy(tmp_path, SEED, "diasafety.json")

    def labelled(samples, card):  # the classify kind read a category before the verdict: every prediction right
        for s in samples:
            s["output"]["category"] = s["target"]
            s["prediction"] = s["target"]
        return samples

    _forge(folder, "diasafety", labelled)
    card = json.loads((folder / "diasafety.json").read_text())
    assert card["metrics"]["macro_f1"]["value"] > 0.99  # what the forger would have shown
    found = problems_of(folder)
    assert any(": output: holds 'category'; a verdict of backend profanity-check holds only score, unsafe" in p
               for p in found), found[:5]


def test_a_classifier_verdict_against_its_threshold_is_refused(tmp_path):
    folder = _copy(tmp_path, SEED, "diasafety.json")

    def flipped(samples, card):
        s = next(s for s in samples if s["output"]["unsafe"])
        s["output"]["unsafe"] = False
        s["prediction"] = card["task"]["config"]["classify"]["classifier_labels"]["safe"]
        return samples

    _forge(folder, "diasafety", flipped)
    assert any(": output: unsafe False with score " in p and "against the threshold 0.5: it is True" in p
               for p in problems_of(folder))


def test_a_voter_named_as_another_role_is_refused_and_roles_are_keyed_by_what_they_are(chatbot):
    card = json.loads((chatbot / "diasafety_chatbot.json").read_text())
    card["judges"][0]["voter"] = "model"
    assert set(roles(ScoreCard.model_validate(card))) == {"model", "judge:model", "judge:context", "judge:refused",
                                                              "judge:harm"}
    assert roles(ScoreCard.model_validate(card))["model"] == card["model"]["config"]  # the model stays the model
    (chatbot / "diasafety_chatbot.json").write_text(json.dumps(card))
    found = problems_of(chatbot)
    assert any("judges[0].voter: 'model' is the name of another role" in p for p in found), found[:5]


@pytest.mark.parametrize("field, value", [("step_type", "question"), ("prompt_sha256", "0" * 64)])
def test_a_judge_entrys_step_type_and_prompt_hash_are_the_tasks(chatbot, field, value):
    card = json.loads((chatbot / "diasafety_chatbot.json").read_text())
    card["judges"][1][field] = value
    (chatbot / "diasafety_chatbot.json").write_text(json.dumps(card))
    assert any(f"judges[1].{field}: {value!r} is not step context's: " in p for p in problems_of(chatbot))


# ------------------------------------------------------------------------------------- what the run cost


@pytest.mark.parametrize("change, field, message", [
    (lambda run: run["tokens"].update({"attacker": dict(run["tokens"]["model"])}), "run.tokens.attacker",
     "the card has no role 'attacker'"),
    (lambda run: run["tokens"]["judge utterance"].update(counted_by=["api"], prompt=5), "run.tokens.judge utterance"
     ".counted_by", "['api']: backend profanity-check counts with nothing"),
    (lambda run: run["tokens"]["judge context"].update(counted_by=["api"]), "run.tokens.judge context.counted_by",
     "['api']: backend diasafety-detector counts with tokenizer"),
    (lambda run: run.update(cost={"by_role": {"judge context": {"amount": 0.5, "currency": "USD"}},
                                  "total": {"USD": 0.5}}), "run.cost", "is not what the tokens cost"),
    (lambda run: run.update(cost={"by_role": {"judge context": {"amount": 0.001, "currency": "EUR"}},
                                  "total": {"EUR": 0.001}}), "run.cost", "is not what the tokens cost"),
])
def test_tokens_and_cost_are_what_the_roles_can_count_and_their_prices_give(chatbot, change, field, message):
    path = chatbot / "diasafety_chatbot.json"
    card = json.loads(path.read_text())
    change(card["run"])
    path.write_text(json.dumps(card))
    found = problems_of(chatbot)
    assert any(f"diasafety_chatbot.json: {field}: " in p and message in p for p in found), found[:5]


# ------------------------------------------------------------------------------------- the task's protocol


def test_a_model_config_that_changes_what_a_chatbot_task_measures_is_not_standard(chatbot):
    from benchmark.submissions.panel import protocol_status

    card = json.loads((chatbot / "diasafety_chatbot.json").read_text())
    assert protocol_status(ScoreCard.model_validate(card)) is None
    card["model"]["config"]["generation"]["until"] = [" "]  # every answer cut at its first word
    assert protocol_status(ScoreCard.model_validate(card)) == ("the model's generation.until is [' ']; task diasafety_chatbot runs every model "
                                     "at [] (its protocol fixes do_sample, max_new_tokens, temperature, top_p)")
    card["model"]["config"]["generation"].update(until=[], max_new_tokens=1)  # fixed by the task: it has no effect
    assert protocol_status(ScoreCard.model_validate(card)) is None


def test_no_published_card_is_off_its_tasks_protocol():
    from benchmark.submissions.panel import protocol_status

    cards = [json.loads(p.read_text()) for p in S.SUBMISSIONS_DIR.glob("*/*.json")]
    assert cards and [c["model"]["name"] for c in cards if protocol_status(ScoreCard.model_validate(c))] == []


# ------------------------------------------------------------------------------------- smaller


def test_a_field_a_response_never_holds_is_refused(chatbot):
    def padded(samples, card):
        samples[0]["responses"][0]["safe_after_all"] = True
        return samples

    _forge(chatbot, "diasafety_chatbot", padded)
    assert any("0: responses[0].safe_after_all: is not a field of a response" in p for p in problems_of(chatbot))


def test_judging_validation_as_any_other_string_is_refused(chatbot):
    path = chatbot / "diasafety_chatbot.json"
    card = json.loads(path.read_text())
    card["judging_validation"] = "corrected: 0.1%"
    path.write_text(json.dumps(card))
    assert any("judging_validation: 'corrected: 0.1%': the judges' outcome on their labelled set, or 'not measured"
               in p for p in problems_of(chatbot))


@pytest.mark.parametrize("key, value", [("batch_size", 10**300), ("threshold", float("inf")), ("timeout", -5),
                                        ("generation.max_new_tokens", 10**9)])
def test_numbers_in_a_submitted_config_are_bounded(key, value):
    from benchmark.submissions.configs import check_model_config

    config = {"name": "m", "backend": "profanity-check", "generation": {}}
    where = config
    *parents, last = key.split(".")
    for part in parents:
        where = where.setdefault(part, {})
    where[last] = value
    found = check_model_config(config, "model.yaml")
    assert len(found) == 1 and found[0].field == key and ": use a number from " in found[0].message, found


@pytest.mark.parametrize("key, value", [("weights_sha256", "0" * 64), ("evaluation", {"fine_macro_f1": 0.99})])
def test_a_trained_judges_recorded_facts_are_its_artifacts(chatbot, key, value):
    card = json.loads((chatbot / "diasafety_chatbot.json").read_text())
    card["judges"][1][key] = value
    (chatbot / "diasafety_chatbot.json").write_text(json.dumps(card))
    assert any(f"judges[1].{key}: " in p and "is not what its artifact records" in p for p in problems_of(chatbot))


def test_a_voter_name_with_a_line_break_at_its_end_is_refused(chatbot):
    """A name rule reads the whole name: "context\n" is not the voter "context" (a `$` would let it pass)."""
    path = chatbot / "diasafety_chatbot.json"
    card = json.loads(path.read_text())
    next(j for j in card["judges"] if j["step"] == "context")["voter"] = "context\n"
    path.write_text(json.dumps(card))
    found = problems_of(chatbot)
    assert any("diasafety_chatbot.json: judges[1].voter: 'context\\n': letters, digits" in p for p in found), found[:5]


def test_a_cards_check_makes_each_judges_rule_once_not_once_per_vote(tmp_path, monkeypatch):
    """A card holds hundreds or thousands of one judge's votes: the rule that checks them, which reads the judge's
    config (reply-refusal's settings and phrases, its manifest), is made once per judge and applied to every vote."""
    from benchmark.models.refusal import ReplyRefusal

    folder = _copy(tmp_path, "gpt-4-xstest", "xstest.json")
    made, real = [], ReplyRefusal.verdict_rule.__func__
    monkeypatch.setattr(ReplyRefusal, "verdict_rule",
                        classmethod(lambda cls, cfg: made.append(cfg.name) or real(cls, cfg)))
    assert problems_of(folder) == []
    votes = [v for s in S.read_samples(folder / "xstest.samples.jsonl.gz") for r in s["responses"]
             for j in r["judgements"].values() for v in j["votes"].values()]
    assert len(votes) >= 450 and made == ["reply-refusal"]
