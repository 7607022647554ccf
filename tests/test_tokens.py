"""Tokens read and written per role on every card, counted by the model's tokenizer or the server's `usage`; cached
answers counted apart; the cost at a model's declared prices; budgets that stop a run cleanly and resume."""

from __future__ import annotations

import json

import pytest

from benchmark.run.runner import run


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


def _estimates(compose, overrides) -> list[int]:
    """Each planned record's estimated tokens, in order: what `preview` counts (estimate.py)."""
    from benchmark.run.estimate import per_record
    from benchmark.run.runner import plan

    p = plan(compose(*overrides), pin=False)
    found, how = per_record(p)
    assert how.startswith("counted with the tokenizer of ")
    return [found[r["id"]].tokens for r in p.items]


def test_a_fresh_run_with_a_tiny_budget_asks_nothing(compose, tiny_model, data_root, tmp_path, monkeypatch):
    from benchmark import BenchmarkError
    from benchmark.models.hf import HF

    overrides = ("model=hf", f"model.pretrained={tiny_model}", "limit=4", "model.generation.max_new_tokens=8",
                 f"cache_dir={tmp_path / 'cache'}", f"output_dir={tmp_path / 'run'}")
    first = _estimates(compose, overrides)[0]

    def never(*args, **kwargs):
        raise AssertionError("the model was asked")

    monkeypatch.setattr(HF, "generate", never)
    with pytest.raises(BenchmarkError) as stopped:
        run(compose(*overrides, "budget.tokens=1"))
    assert str(stopped.value).startswith("budget.tokens=1 reached: 0 of 4 records answered (their samples are kept "
                                         f"in {tmp_path / 'run' / 'samples.jsonl'}), 0 tokens spent, and the next "
                                         f"record would take about {first:,} more")
    assert (tmp_path / "run" / "samples.jsonl").read_text() == ""


def test_a_budget_of_two_and_a_half_chunks_answers_what_fits_and_a_higher_one_resumes_asking_nothing_twice(
        compose, tiny_model, data_root, tmp_path):
    from benchmark import BenchmarkError

    overrides = ("model=hf", f"model.pretrained={tiny_model}", "limit=8", "chunk_size=2",
                 "model.generation.max_new_tokens=8", f"cache_dir={tmp_path / 'cache'}", f"output_dir={tmp_path / 'run'}")
    each = _estimates(compose, overrides)
    limit = sum(each[:5]) + each[5] // 2  # chunks 1 and 2 whole, and half of chunk 3
    with pytest.raises(BenchmarkError) as stopped:
        run(compose(*overrides, f"budget.tokens={limit}"))
    assert str(stopped.value).startswith(f"budget.tokens={limit} reached: 5 of 8 records answered")
    assert "Rerun the same command with a higher budget.tokens" in str(stopped.value)
    samples = [json.loads(line) for line in (tmp_path / "run" / "samples.jsonl").read_text().splitlines()]
    assert len(samples) == 5 and not (tmp_path / "run" / "scorecard.json").exists()
    spent = json.loads((tmp_path / "run" / "spent.json").read_text())
    assert spent["records"] == 5 and spent["tokens"] == sum(per_record(s, tiny_model) for s in samples) <= limit

    card, _ = run(compose(*overrides, "budget.tokens=1000000"))
    assert card["run"]["resumed"] == 5 and card["run"]["model_calls"] == 3 and card["run"]["cache_hits"] == 0
    assert card["run"]["budget"] == {"tokens": 1000000, "cost": None, "spent_tokens": spent["tokens"] + sum(
        per_record(s, tiny_model) for s in map(json.loads, (tmp_path / "run" / "samples.jsonl").read_text(
        ).splitlines()[5:])), "spent_cost": 0.0, "currency": None, "exceeded": False, "cannot_stop": []}


def test_a_run_past_its_budget_says_so_on_its_card(compose, tiny_model, data_root, tmp_path, monkeypatch):
    import benchmark.run.runner
    from benchmark.run.estimate import Estimate

    def too_low(p):  # an estimate that misses: every record said to cost one token
        return {r["id"]: Estimate(1, 0) for r in p.items}, "a test's"

    monkeypatch.setattr(benchmark.run.runner, "per_record", too_low)
    card, _ = run(compose("model=hf", f"model.pretrained={tiny_model}", "limit=2", "model.generation.max_new_tokens=8",
                          "budget.tokens=5", f"output_dir={tmp_path / 'run'}"))
    budget = card["run"]["budget"]
    assert budget["exceeded"] is True and budget["spent_tokens"] > 5 == budget["tokens"]
    assert budget["spent_tokens"] == card["run"]["tokens"]["model"]["prompt"] + card["run"]["tokens"]["model"][
        "completion"]


def test_a_budget_names_the_roles_it_cannot_stop(tmp_path, data_root):
    from conftest import run_cli

    proc = run_cli("limit=10", "budget.tokens=1", f"output_dir={tmp_path / 'run'}", f"cache_dir={tmp_path / 'c'}",
                   cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    line = "budget.tokens: model profanity-check (profanity-check) counts no tokens; the budget cannot stop it"
    assert f"warning: {line}\n" in proc.stderr
    card = json.loads((tmp_path / "run" / "scorecard.json").read_text())
    assert card["run"]["budget"]["cannot_stop"] == [line] and card["run"]["model_calls"] == 10


def test_a_cost_budget_names_a_counting_role_without_prices(compose, tiny_model, tmp_path):
    from benchmark.run.budget import Budget
    from benchmark.models.base import Backend
    from benchmark.models.cached import CachedModel

    class Counting(Backend):  # counts its tokens (its own usage), as a local or API model does
        def usage(self, requests, answers):
            return []

    cfg = compose("model=hf", f"model.pretrained={tiny_model}", "budget.cost=1.0", "model.prices.input_per_million=1",
                  "model.prices.output_per_million=2")
    judge = compose("model=smollm2-135m-instruct").model
    roles = {"model": (CachedModel(Counting(), "m", None), cfg.model),
             "judge goal": (CachedModel(Counting(), "j", None), judge)}
    assert Budget(cfg, tmp_path, roles).cannot_stop == (
        "budget.cost: judge goal smollm2-135m-instruct declares no prices; the budget cannot stop it",)


def test_a_cost_budget_needs_declared_prices(compose, tiny_model, data_root, tmp_path):
    from benchmark import BenchmarkError

    with pytest.raises(BenchmarkError, match=r"budget.cost=1.0: no model of this run declares its prices"):
        run(compose("model=hf", f"model.pretrained={tiny_model}", "limit=1", "budget.cost=1.0",
                    f"output_dir={tmp_path / 'run'}"))
    with pytest.raises(BenchmarkError, match=r"model hf: model.prices.output_per_million=None; declare both prices"):
        run(compose("model=hf", f"model.pretrained={tiny_model}", "limit=1", "model.prices.input_per_million=1",
                    f"output_dir={tmp_path / 'run2'}"))


def test_a_run_whose_other_roles_count_probes_with_one_record_then_scales(compose, tiny_model, tmp_path):
    from benchmark.run.budget import Budget
    from benchmark.run.estimate import Estimate
    from benchmark.models.base import Backend
    from benchmark.models.cached import CachedModel

    class Counting(Backend):
        def usage(self, requests, answers):
            return []

    cfg = compose("model=hf", f"model.pretrained={tiny_model}", "budget.tokens=1000")
    model, judge = CachedModel(Counting(), "m", None), CachedModel(Counting(), "j", None)
    records = [{"id": str(i)} for i in range(10)]
    budget = Budget(cfg, tmp_path, {"model": (model, cfg.model), "judge x": (judge, cfg.model)},
                    {r["id"]: Estimate(40, 10) for r in records})
    first = budget.fit(records, 0, 10, tmp_path / "samples.jsonl")
    assert first == records[:1]  # the judge's share is not in the model's estimate: one record measures it
    model.tokens.prompt, judge.tokens.prompt = 50, 150  # the record cost 4x its estimate
    budget.done(first)
    # 1000 - 200 spent leaves 800: four more records at 200 each
    assert budget.fit(records[1:], 1, 10, tmp_path / "samples.jsonl") == records[1:5]
