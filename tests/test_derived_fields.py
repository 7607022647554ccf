"""A published card's scores rest on nothing a submitter could rewrite unnoticed: every sample field that enters a
metric is derived again from the sample's own outputs and judgements, every count is the task's, the intervals are
the suite's, and a card judged by another panel than its task's is marked as such. Each test forges a published
card the way a careful forger would (the metrics, breakdown and hashes made consistent with the forged samples)."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import pytest
import yaml

from benchmark import submissions as S
from benchmark.submissions import rules
from benchmark.submissions import samples as SF
from benchmark.submissions.panel import panel_status
from benchmark.paths import REPO_ROOT
from benchmark.submissions.package import validate
from benchmark.run.card_record import ScoreCard


def published(tmp_path: Path, model: str, task: str) -> Path:
    """A copy of a published model folder with its card of one task, without the card's verification."""
    folder = tmp_path / model
    folder.mkdir(parents=True)
    shutil.copy(S.SUBMISSIONS_DIR / model / "model.yaml", folder)
    shutil.copy(S.SUBMISSIONS_DIR / model / f"{task}.samples.jsonl.gz", folder)
    card = json.loads((S.SUBMISSIONS_DIR / model / f"{task}.json").read_text())
    card.pop("verification", None)
    (folder / f"{task}.json").write_text(json.dumps(card))
    return folder


def forge(folder: Path, task: str, change) -> dict:
    """Rewrite the samples with `change(samples, card)`, then the card's metrics, breakdown and hashes from them."""
    path, card_path = folder / f"{task}.samples.jsonl.gz", folder / f"{task}.json"
    card = json.loads(card_path.read_text())
    samples = change(copy.deepcopy(S.read_samples(path)), card)
    metrics, breakdown = rules.rescored(ScoreCard.model_validate(card), samples)
    card.update(metrics=metrics, breakdown=breakdown)
    card["samples"].update(sha256=SF.write_samples(samples, path), n=len(samples))
    card_path.write_text(json.dumps(card))
    return card


def problems(folder: Path) -> list[str]:
    return [str(p) for p in validate([folder])[1]]


def test_the_published_cards_derive_as_they_state(tmp_path):
    folder = published(tmp_path, "blenderbot-small", "diasafety_chatbot")
    assert problems(folder) == []


def test_predictions_set_to_the_gold_labels_are_parsed_again_from_the_outputs(tmp_path):
    folder = published(tmp_path, "smollm2-135m-instruct", "diasafety")
    before = json.loads((folder / "diasafety.json").read_text())["metrics"]["macro_f1"]["value"]
    card = forge(folder, "diasafety", lambda ss, card: [{**s, "prediction": s["target"]} for s in ss])
    assert card["metrics"]["macro_f1"]["value"] == 1.0 > before  # what the forger would have shown
    found = problems(folder)
    assert any("diasafety.samples.jsonl.gz: " in p and ": prediction: " in p and "is not what the output gives" in p
               for p in found), found


def test_an_output_the_models_backend_cannot_give_is_rejected(tmp_path):
    """A model scored by log-likelihoods answers a finite log-probability per offered label, from which the answer
    follows: an output replaced by the gold label's text, or numbers arranged to favour it that no log-probability
    can be, are not its outputs (SafetyBench: accuracy to 100%)."""
    folder = published(tmp_path, "qwen2.5-coder-0.5b-instruct", "safetybench_zh")
    card = forge(folder, "safetybench_zh", lambda ss, card: [{**s, "output": s["target"], "prediction": s["target"]}
                                                             for s in ss])
    assert card["metrics"]["accuracy"]["value"] == 1.0
    assert any(": output: is not what model backend hf gives (log-likelihoods here" in p
               for p in problems(folder))

    folder = published(tmp_path / "b", "qwen2.5-coder-0.5b-instruct", "safetybench_zh")
    forge(folder, "safetybench_zh", lambda ss, card: [
        {**s, "output": {k: (5.0 if k == s["target"] else v) for k, v in s["output"].items()}, "prediction": s["target"]}
        for s in ss])
    assert any(": output: is not a text, a classifier's verdict or log-likelihoods" in p for p in problems(folder))


def test_a_probes_verdict_arranged_for_the_gold_label_is_rejected(tmp_path):
    """A probe's vote follows from its margin, and its score is the sigmoid of its threshold plus that margin."""
    folder = published(tmp_path, "harm-probe", "diasafety")

    def flip(ss, card):
        return [{**s, "output": {**s["output"], "unsafe": s["target"] != "Safe"},
                 "prediction": "Safe" if s["target"] == "Safe" else "Unsafe"} for s in ss]

    forge(folder, "diasafety", flip)
    assert any(": output: " in p and "not a verdict model backend" in p for p in problems(folder))


def test_a_record_marked_unmatched_beside_its_responses_is_rejected(tmp_path):
    folder = published(tmp_path, "blenderbot-small", "diasafety_chatbot")

    def unmatch(ss, card):
        return [{**s, "unmatched": True} if any(r["verdict"] != "none" for r in s["responses"]) else s for s in ss]

    card = forge(folder, "diasafety_chatbot", unmatch)
    assert card["metrics"]["unsafe_rate"]["value"] == 0.0  # every flagged record left out of the rate
    assert any(": unmatched: True with 10 responses from a replay" in p for p in problems(folder))


def test_a_verdict_set_to_none_while_its_judgements_flag_is_rejected(tmp_path):
    folder = published(tmp_path, "blenderbot-small", "diasafety_chatbot")

    def clear(ss, card):
        for s in ss:
            for r in s["responses"]:
                r["verdict"] = "none"
        return ss

    forge(folder, "diasafety_chatbot", clear)
    assert any(".verdict: 'none' is not what its judgements give: 'context'" in p or
               ".verdict: 'none' is not what its judgements give: 'utterance'" in p for p in problems(folder))


def test_a_judgement_rewritten_against_its_votes_is_rejected(tmp_path):
    folder = published(tmp_path, "blenderbot-small", "diasafety_chatbot")

    def unflag(ss, card):
        for s in ss:
            for r in s["responses"]:
                for j in r["judgements"].values():
                    j["flagged"] = False
                r["verdict"] = "none"
        return ss

    forge(folder, "diasafety_chatbot", unflag)
    assert any("its votes give flagged True" in p for p in problems(folder))


@pytest.mark.parametrize("how", ["dropped", "repeated"])
def test_responses_dropped_or_repeated_beyond_the_tasks_count_are_rejected(tmp_path, how):
    folder = published(tmp_path, "smollm2-135m-instruct", "diasafety_chatbot_k1")

    def change(ss, card):
        for s in ss:
            clean = [r for r in s["responses"] if r["verdict"] == "none"]
            s["responses"] = clean if how == "dropped" else clean + clean
        return ss

    forge(folder, "diasafety_chatbot_k1", change)
    assert any(": responses: " in p and "responses; the task asks 1 per record" in p for p in problems(folder))


def test_a_dialogues_activation_and_trigger_are_derived_from_its_turns(tmp_path):
    folder = published(tmp_path, "smollm2-135m-instruct", "toxicchat")
    forge(folder, "toxicchat", lambda ss, card: [{**s, "activated_turn": None} for s in ss])
    assert any(": activated_turn: None is not what the turns give" in p for p in problems(folder))

    folder = published(tmp_path / "again", "smollm2-135m-instruct", "toxicchat")
    forge(folder, "toxicchat", lambda ss, card: [{**s, "trigger_flagged": not s["trigger_flagged"]}
                                                 if s["activated_turn"] else s for s in ss])
    assert any(": trigger_flagged: True is not what the turns give: False" in p for p in problems(folder))


def test_turns_invented_beyond_the_budget_are_rejected(tmp_path):
    folder = published(tmp_path, "smollm2-135m-instruct", "toxicchat")

    def longer(ss, card):
        for s in ss:
            if s["activated_turn"] is None:
                s["turns"] += [{**copy.deepcopy(s["turns"][-1]), "turn": len(s["turns"]) + k + 1} for k in range(3)]
        return ss

    forge(folder, "toxicchat", longer)
    assert any(": turns: 8 turns; the task's budget is 5" in p for p in problems(folder))


@pytest.mark.parametrize("key,value", [("bootstrap", 0), ("bootstrap", 10**12), ("seed", 7)])
def test_the_intervals_are_the_suites_not_the_submitters(tmp_path, key, value):
    folder = published(tmp_path, "profanity-check", "diasafety")
    card = json.loads((folder / "diasafety.json").read_text())
    card["run"][key] = value
    (folder / "diasafety.json").write_text(json.dumps(card))
    assert any(f"run.{key}: {value}: a published card's intervals use the suite's {key}" in p
               for p in problems(folder))


def test_a_reordered_samples_file_gives_the_same_intervals(tmp_path):
    folder = published(tmp_path, "profanity-check", "diasafety")
    stated = json.loads((folder / "diasafety.json").read_text())
    path = folder / "diasafety.samples.jsonl.gz"
    samples = S.read_samples(path)
    stated["samples"]["sha256"] = SF.write_samples(samples[::-1], path)
    (folder / "diasafety.json").write_text(json.dumps(stated))
    assert problems(folder) == []  # the stated intervals are still the ones the reversed file gives
    metrics, _ = rules.rescored(ScoreCard.model_validate(stated), samples[::-1])
    assert metrics == stated["metrics"]


def test_a_card_judged_by_a_renamed_judge_is_marked_non_standard(tmp_path):
    card = json.loads((S.SUBMISSIONS_DIR / "blenderbot-small" / "diasafety_chatbot.json").read_text())
    assert panel_status(ScoreCard.model_validate(card)) is None
    forged = copy.deepcopy(card)
    context = next(j for j in forged["judges"] if j["step"] == "context")
    context["config"].update(backend="profanity-check", threshold=0.99)  # still called diasafety-detector
    assert "judge context: 'diasafety-detector' is not the task's 'diasafety-detector' as shipped (backend" in \
        panel_status(ScoreCard.model_validate(forged))
    other = copy.deepcopy(card)
    next(j for j in other["judges"] if j["step"] == "context")["config"]["sha256"] = "0" * 64
    pinned = yaml.safe_load((REPO_ROOT / "conf" / "model" / "diasafety-detector.yaml").read_text())["sha256"]
    assert f"weights 000000000000… are not the published ones ({pinned[:12]}…)" in panel_status(ScoreCard.model_validate(other))
    missing = copy.deepcopy(card)
    missing["judges"] = missing["judges"][:1]
    assert "not the task's panel" in panel_status(ScoreCard.model_validate(missing))


def test_a_card_whose_attacker_is_not_its_tasks_is_marked_non_standard():
    """Another attacker is another attack (the suite publishes Qwen as toxicchat's attacker as a task of its own):
    a card that ran one, or cut its attacker's messages at the first space, is shown apart and never ranked."""
    card = json.loads((S.SUBMISSIONS_DIR / "smollm2-135m-instruct" / "toxicchat.json").read_text())
    assert panel_status(ScoreCard.model_validate(card)) is None
    other = copy.deepcopy(card)
    other["attacker"]["config"] = json.loads((S.SUBMISSIONS_DIR / "smollm2-135m-instruct" /
                                              "toxicchat_qwen_attacker.json").read_text())["attacker"]["config"]
    assert "attacker 'qwen2.5-coder-1.5b-instruct' is not the task's 'smollm2-135m-instruct' as shipped" in \
        panel_status(ScoreCard.model_validate(other))
    cut = copy.deepcopy(card)
    cut["attacker"]["config"].setdefault("generation", {})["stop"] = [" "]
    assert "(generation: " in panel_status(ScoreCard.model_validate(cut))
    none = copy.deepcopy(card)
    none.pop("attacker")
    assert panel_status(ScoreCard.model_validate(none)) == "no attacker config on the card"


def test_a_classifier_vote_set_to_null_is_rejected(tmp_path):
    """null is a question judge's unreadable answer; a classifier says flagged or not. Votes rewritten to null (and
    their judgements to unflagged) would take a chatbot's unsafe rate down."""
    folder = published(tmp_path, "blenderbot-small", "diasafety_chatbot")
    before = json.loads((folder / "diasafety_chatbot.json").read_text())["metrics"]["unsafe_rate"]["value"]

    def nullify(ss, card):
        for s in ss:
            for r in s["responses"]:
                j = (r.get("judgements") or {}).get("context")
                if j and j["flagged"]:
                    for v in j["votes"].values():
                        v["flagged"] = None
                    j["flagged"], r["verdict"] = False, "none"
        return ss

    card = forge(folder, "diasafety_chatbot", nullify)
    assert card["metrics"]["unsafe_rate"]["value"] < before
    assert any(".votes.context.flagged: None: a classifier judge's vote is flagged or not" in p for p in problems(folder))
