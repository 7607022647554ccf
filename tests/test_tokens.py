"""Tokens read and written per role on every card, counted by the model's tokenizer or the server's `usage`; cached
answers counted apart; the cost at a model's declared prices; budgets that stop a run cleanly and resume."""

from __future__ import annotations

import json

import pytest

from benchmark.runner import run


def per_record(sample: dict, model) -> int:
    """The tokens one sample's request read and wrote, by the model's tokenizer."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model)
    prompt = tok.apply_chat_template(sample["prompt"], add_generation_prompt=True, tokenize=False)
    return len(tok(prompt, add_special_tokens=False)["input_ids"]) + len(
        tok(sample["output"], add_special_tokens=False)["input_ids"])


def test_a_local_model_counts_its_tokens_with_its_tokenizer_and_cached_answers_apart(compose, tiny_model, data_root,
                                                                                    tmp_path):
    from transformers import AutoTokenizer

    overrides = ("model=hf", f"model.pretrained={tiny_model}", "limit=3", "model.generation.max_new_tokens=8",
                 f"cache_dir={tmp_path / 'cache'}")
    card, path = run(compose(*overrides, f"output_dir={tmp_path / 'first'}"))
    tokens = card["run"]["tokens"]["model"]
    samples = [json.loads(line) for line in (path.parent / "samples.jsonl").read_text().splitlines()]
    tok = AutoTokenizer.from_pretrained(tiny_model)
    prompts = sum(len(tok(tok.apply_chat_template(s["prompt"], add_generation_prompt=True, tokenize=False),
                          add_special_tokens=False)["input_ids"]) for s in samples)
    completions = sum(len(tok(s["output"], add_special_tokens=False)["input_ids"]) for s in samples)
    assert tokens["prompt"] == prompts > 0 and tokens["completion"] == completions
    assert tokens["counted_by"] == ["tokenizer"] and tokens["cached_prompt"] == 0 and tokens["uncounted"] == 0
    assert "cost" not in card["run"]  # no prices declared

    again, _ = run(compose(*overrides, f"output_dir={tmp_path / 'second'}"))  # a new folder: every answer cached
    cached = again["run"]["tokens"]["model"]
    assert again["run"]["model_calls"] == 0 and (cached["prompt"], cached["completion"]) == (0, 0)
    assert (cached["cached_prompt"], cached["cached_completion"]) == (prompts, completions)


def test_a_budget_stops_the_run_keeps_its_samples_and_a_higher_one_resumes_with_no_repeated_call(
        compose, tiny_model, data_root, tmp_path):
    from benchmark import BenchmarkError

    overrides = ("model=hf", f"model.pretrained={tiny_model}", "limit=4", "chunk_size=1",
                 "model.generation.max_new_tokens=8", f"cache_dir={tmp_path / 'cache'}", f"output_dir={tmp_path / 'run'}")
    # each record's tokens, from a run with a cache of its own (counted as the first test shows)
    _, probe = run(compose(*overrides[:-2], f"cache_dir={tmp_path / 'probe-cache'}", f"output_dir={tmp_path / 'probe'}"))
    each = [per_record(s, tiny_model) for s in map(json.loads, (probe.parent / "samples.jsonl").read_text().splitlines())]
    limit = sum(each[:2]) + 1
    # the rule: before each later chunk, stop when what is spent, plus a chunk at the spending per record so far, passes
    answered = next(k for k in range(1, 5) if k == 4 or sum(each[:k]) * (k + 1) / k > limit)
    assert 0 < answered < 4
    with pytest.raises(BenchmarkError) as stopped:
        run(compose(*overrides, f"budget.tokens={limit}"))
    message = str(stopped.value)
    assert message.startswith(f"budget.tokens={limit} reached: {answered} of 4 records answered")
    assert "Rerun the same command with a higher budget.tokens" in message
    samples = (tmp_path / "run" / "samples.jsonl").read_text().splitlines()
    assert len(samples) == answered and not (tmp_path / "run" / "scorecard.json").exists()

    card, _ = run(compose(*overrides, "budget.tokens=1000000"))
    assert card["run"]["resumed"] == answered and card["run"]["model_calls"] == 4 - answered  # the others, once each
    assert card["run"]["cache_hits"] == 0


def test_a_cost_budget_needs_declared_prices(compose, tiny_model, data_root, tmp_path):
    from benchmark import BenchmarkError

    with pytest.raises(BenchmarkError, match=r"budget.cost=1.0: no model of this run declares its prices"):
        run(compose("model=hf", f"model.pretrained={tiny_model}", "limit=1", "budget.cost=1.0",
                    f"output_dir={tmp_path / 'run'}"))
    with pytest.raises(BenchmarkError, match=r"model hf: model.prices.output_per_million=None; declare both prices"):
        run(compose("model=hf", f"model.pretrained={tiny_model}", "limit=1", "model.prices.input_per_million=1",
                    f"output_dir={tmp_path / 'run2'}"))
