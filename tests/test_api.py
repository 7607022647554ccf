"""The openai-chat backend (lm-eval's local-chat-completions) against a real OpenAI-compatible server."""

import json
import re

from test_dialogue import compose_scripted, scripted  # noqa: F401  (scripted: a fixture, the seed data)

from benchmark.run.runner import run


def api_model(server, tiny_model):
    # transformers serve rejects an empty stop list, so give it the chat template's end marker
    return ("model=openai-chat", f"model.base_url={server}", f"model.served_model={tiny_model}",
            "model.api_key_env=null", "model.generation.max_new_tokens=8", "model.generation.until=['<|end|>']")


def test_diasafety_through_the_api(compose, chat_server, tiny_model, data_root):
    prices = ("model.prices.input_per_million=2.5", "model.prices.output_per_million=10", "model.prices.currency=EUR",
              f"model.tokenizer={tiny_model}")
    from benchmark.cli.listings import preview

    before = preview(compose(*api_model(chat_server, tiny_model), "limit=4", *prices), 0)  # asks nothing
    card, path = run(compose(*api_model(chat_server, tiny_model), "limit=4", *prices))
    samples = [json.loads(line) for line in open(path.parent / "samples.jsonl")]
    assert card["model"]["backend"] == "local-chat-completions" and card["run"]["model_calls"] == 4
    assert card["run"]["failed"] == 0 and all(isinstance(s["output"], str) and s["error"] is None for s in samples)
    # the server's own count of the tokens read and written, and their cost at the declared prices
    tokens = card["run"]["tokens"]["model"]
    assert tokens["counted_by"] == ["api"] and tokens["prompt"] > 0 and tokens["completion"] > 0
    cost = (tokens["prompt"] * 2.5 + tokens["completion"] * 10) / 1e6
    assert card["run"]["cost"] == {"by_role": {"model": {"amount": round(cost, 6), "currency": "EUR"}},
                                   "total": {"EUR": round(cost, 6)}}
    import re

    estimated = float(re.search(r"cost: about ([0-9.]+) EUR at most", before).group(1))
    assert f"about {tokens['prompt']:,} prompt tokens (counted with the tokenizer of {tiny_model})" in before
    assert abs(estimated - cost) <= 0.1 * cost, (estimated, cost)
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_model)  # what the server read: the prompts with the chat template
    assert tokens["prompt"] == sum(len(tok(tok.apply_chat_template(s["prompt"], add_generation_prompt=True,
                                                                   tokenize=False), add_special_tokens=False)
                                           ["input_ids"]) for s in samples)


def test_ricota_through_the_api_keeps_korean_intact(compose, chat_server, tiny_model, data_root):
    card, path = run(compose(*api_model(chat_server, tiny_model), "task=ricota", "limit=3"))
    assert card["run"]["failed"] == 0 and card["run"]["model_calls"] == 3
    raw = (path.parent / "samples.jsonl").read_text(encoding="utf-8")
    first = json.loads(raw.splitlines()[0])
    assert "루다" in first["prompt"][0]["content"] and first["prompt"][1]["content"].startswith("[제목] ")
    assert "\\u" not in raw
    # asked again: every request is answered from the cache, whose keys hold the Korean prompt
    card2, _ = run(compose(*api_model(chat_server, tiny_model), "task=ricota", "limit=3", "output_dir=" + str(path.parent / "again")))
    assert card2["run"]["model_calls"] == 0 and card2["run"]["cache_hits"] == 3


def test_failed_requests_are_recorded_and_the_run_goes_on(compose, chat_server, tiny_model, data_root, tmp_path):
    # the server is up but has no such model: every request fails at once (a 4xx is not retried)
    card, path = run(compose(*api_model(chat_server, tmp_path / "no-such-model"), "limit=2", "model.max_retries=1"))
    samples = [json.loads(line) for line in open(path.parent / "samples.jsonl")]
    assert card["run"]["failed"] == 2 and all(s["prediction"] == "invalid" for s in samples)
    # the status and the server's own words, and no retry: a 4xx will not go away
    assert all(re.match(r"HTTP 4\d\d [^:]*: \S", s["error"]) and s["error"].endswith(" (not retried)")
               for s in samples), [s["error"] for s in samples]


def test_no_server_is_one_clear_error(compose, tiny_model, data_root):
    import pytest

    from benchmark import BenchmarkError

    with pytest.raises(BenchmarkError, match="nothing answers at http://127.0.0.1:9/v1/chat/completions"):
        run(compose(*api_model("http://127.0.0.1:9/v1/chat/completions", tiny_model), "limit=2"))


def test_cpad_attack_through_the_api(compose, chat_server, tiny_model, tmp_path):
    """Kind attack: the API model answers each attack prompt; the judges (fixed answers keyed by the judge question,
    as in test_cpad) vote on what it said. Then the API model judges too."""
    from test_cpad import SCORED, SUCCESSES, write_conf, write_fixture

    root, conf = tmp_path / "data", tmp_path / "conf"
    write_fixture(root)
    write_conf(conf)
    overrides = (f"hydra.searchpath=[file://{conf}]", "task=cpad", f"data_root={root}", "judge=cpad-fixed",
                 *api_model(chat_server, tiny_model), "model.num_concurrent=4")
    card, path = run(compose(*overrides))
    assert card["model"]["backend"] == "local-chat-completions"
    assert card["run"]["failed"] == 0 and card["run"]["model_calls"] == 7
    assert card["breakdown"]["records"] == {"total": 7, "scored": 7, "unmatched": 0, "failed": 0}
    assert card["metrics"]["asr"]["value"] == SUCCESSES / SCORED
    samples = [json.loads(line) for line in (path.parent / "samples.jsonl").read_text(encoding="utf-8").splitlines()]
    assert all(len(s["responses"]) == 1 and isinstance(s["responses"][0]["text"], str) for s in samples)
    assert set(card["run"]["judge_calls"].values()) == {7}
    again, _ = run(compose(*overrides, f"output_dir={tmp_path / 'again'}"))  # a new run folder, the same answers
    assert again["run"]["model_calls"] == 0 and again["run"]["cache_hits"] == 7

    # the API model as the judge too: every response is judged by a request to the server
    judge = ("judge=cpad-one", "judge.models.goal.backend=local-chat-completions", "judge.models.goal.replay=null",
             f"judge.models.goal.base_url={chat_server}", f"judge.models.goal.served_model={tiny_model}",
             "judge.models.goal.api_key_env=null", "judge.models.goal.generation.max_new_tokens=4")
    judged, path = run(compose(*overrides, *judge))
    assert judged["run"]["judge_calls"] == {"goal": 7} and judged["run"]["failed"] == 0
    assert judged["judges"][0]["backend"] == "local-chat-completions"
    samples = [json.loads(line) for line in (path.parent / "samples.jsonl").read_text(encoding="utf-8").splitlines()]
    assert all(isinstance(s["responses"][0]["judgements"]["goal"]["votes"]["goal"]["answer"], str) for s in samples)



def test_toxicchat_through_the_api_on_both_sides(scripted, chat_server, tiny_model):  # noqa: F811
    """Kind dialogue_attack: the API model is the target and, through its own config, the attacker; keyword judges
    read every target turn (test_dialogue's scripted seeds). The attacker has no stop sequence: an empty stop list,
    which transformers serve rejects, is left out of its requests."""
    attacker = ("attacker.name=api-attacker", "attacker.backend=local-chat-completions", "attacker.replay=null",
                f"attacker.base_url={chat_server}", f"attacker.served_model={tiny_model}", "attacker.api_key_env=null",
                "attacker.num_concurrent=4")
    cfg = compose_scripted(*scripted, *api_model(chat_server, tiny_model), "model.num_concurrent=4", *attacker,
                           "task.dialogue.turns=2", "task.dialogue.stop=full",
                           "task.dialogue.target_generation.max_new_tokens=4",
                           "task.dialogue.attacker_generation.max_new_tokens=4")
    card, path = run(cfg)
    # four conversations, two turns each: the seed opens turn 1, the attacker writes turn 2
    assert card["attacker"]["backend"] == "local-chat-completions" and card["model"]["name"] == "openai-chat"
    assert card["run"]["failed"] == 0 and card["run"]["model_calls"] == 8 and card["run"]["attacker_calls"] == 4
    assert card["breakdown"]["conversations"] == {"total": 4, "scored": 4, "failed": 0}
    samples = [json.loads(line) for line in path.with_name("samples.jsonl").read_text().splitlines()]
    for s in samples:
        assert len(s["turns"]) == 2 and s["turns"][0]["attacker"] == s["input"]["seed"]
        assert all(isinstance(t["attacker"], str) and isinstance(t["target"], str) for t in s["turns"])
