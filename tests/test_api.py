"""The openai-chat backend (lm-eval's local-chat-completions) against a real OpenAI-compatible server."""

import json

from benchmark.runner import run


def api_model(server, tiny_model):
    # transformers serve rejects an empty stop list, so give it the chat template's end marker
    return ("model=openai-chat", f"model.base_url={server}", f"model.served_model={tiny_model}",
            "model.api_key_env=null", "model.generation.max_new_tokens=8", "model.generation.until=['<|end|>']")


def test_diasafety_through_the_api(compose, chat_server, tiny_model, data_root):
    card, path = run(compose(*api_model(chat_server, tiny_model), "limit=4"))
    samples = [json.loads(line) for line in open(path.parent / "samples.jsonl")]
    assert card["model"]["backend"] == "local-chat-completions" and card["run"]["model_calls"] == 4
    assert card["run"]["failed"] == 0 and all(isinstance(s["output"], str) and s["error"] is None for s in samples)


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
    # the server is up but has no such model: every request fails after lm-eval's retries
    card, path = run(compose(*api_model(chat_server, tmp_path / "no-such-model"), "limit=2", "model.max_retries=1"))
    samples = [json.loads(line) for line in open(path.parent / "samples.jsonl")]
    assert card["run"]["failed"] == 2 and all(s["error"] and s["prediction"] == "invalid" for s in samples)


def test_no_server_is_one_clear_error(compose, tiny_model, data_root):
    import pytest

    from benchmark import BenchmarkError

    with pytest.raises(BenchmarkError, match="nothing answers at http://127.0.0.1:9/v1/chat/completions"):
        run(compose(*api_model("http://127.0.0.1:9/v1/chat/completions", tiny_model), "limit=2"))
