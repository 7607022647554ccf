"""What a run's records would cost the model under test before it is asked: each record's prompt tokens (counted
with the model's tokenizer where one loads without the weights, else by length) and at most max_new_tokens per
answer, as many times as the task asks the model per record. `preview=N` prints the sum; a budget projects each
chunk from it (budget.py)."""

from __future__ import annotations

from dataclasses import dataclass

from ..models.chat import prompt_text
from ..models.registry import model_kind
from ..models.weights import locate
from .scorecard import declared_prices

CHARS_PER_TOKEN = 4  # where no tokenizer is at hand: about right for English, low for Chinese and Korean


@dataclass(frozen=True)
class Estimate:
    """One record's requests to the model under test: the tokens they read, and the most they may write."""

    prompt: int
    completion: int

    @property
    def tokens(self) -> int:
        return self.prompt + self.completion

    def cost(self, prices) -> float:
        """At the model's declared prices (ModelConfig.prices, per million tokens)."""
        return (self.prompt * prices.input_per_million + self.completion * prices.output_per_million) / 1e6


def counter(model_cfg):
    """A function messages -> prompt tokens, and how it counts: the model's tokenizer where one loads without the
    weights (a language model's backend: hf, vllm, llama-cpp; an API model that names its `tokenizer`), else characters / CHARS_PER_TOKEN."""
    source = model_cfg.tokenizer
    if source is None and model_kind(model_cfg.backend) == "LLM" and model_cfg.pretrained:
        source = model_cfg.pretrained
    if source is not None:
        try:
            path = locate(model_cfg) if source == model_cfg.pretrained else source  # weights not here: no import

            from transformers import AutoTokenizer

            kwargs = {"gguf_file": model_cfg.gguf_file} if model_cfg.gguf_file and source == model_cfg.pretrained else {}
            tok = AutoTokenizer.from_pretrained(path, **kwargs)

            def templated(messages, add_generation_prompt):
                return tok.apply_chat_template(messages, add_generation_prompt=add_generation_prompt, tokenize=False)

            def count(messages: list[dict]) -> int:
                text = prompt_text(model_cfg, messages, templated, bool(model_cfg.chat_template and tok.chat_template))
                return len(tok(text, add_special_tokens=False)["input_ids"])

            return count, f"counted with the tokenizer of {source}"
        except Exception as e:  # no tokenizer here: say so, and estimate by length
            why = f"the tokenizer of {source} did not load ({type(e).__name__})"
    else:
        why = "no tokenizer named (model.tokenizer)"
    return (lambda messages: sum(len(m["content"]) for m in messages) // CHARS_PER_TOKEN + 1,
            f"about {CHARS_PER_TOKEN} characters per token: {why}")


def per_record(p) -> tuple[dict[str, Estimate], str]:
    """{record id: its Estimate} over a plan's records (runner.Plan), and how the prompts were counted. A record's
    first request to the model stands for each of its requests (later turns of a conversation read more)."""
    count, how = counter(p.cfg.model)
    times = p.kind.requests_per_record
    most = (p.kind.max_new_tokens or p.cfg.model.generation.max_new_tokens) * times
    out = {}
    for record in p.items:
        first = next((r for who, r in p.kind.preview(record) if who.startswith("the model") and isinstance(r, list)),
                     None)
        out[record["id"]] = Estimate(count(first) * times if first is not None else 0, most)
    return out, how


def summary(p) -> list[str]:
    """The estimate for the whole run, in the lines `preview` prints: tokens, and cost at the declared prices."""
    estimates, how = per_record(p)
    prompt = sum(e.prompt for e in estimates.values())
    most = sum(e.completion for e in estimates.values())
    each = p.kind.max_new_tokens or p.cfg.model.generation.max_new_tokens
    lines = ["== estimate for the whole run (the model under test; cached answers would cost nothing)",
             f"{len(p.items)} records x {p.kind.requests_per_record} request(s): about {prompt:,} prompt tokens "
             f"({how}), at most {most:,} completion tokens (max_new_tokens {each} each)"]
    prices = declared_prices(p.cfg.model)
    if prices is not None:
        low = prompt * prices.input_per_million / 1e6
        lines.append(f"cost: about {low + most * prices.output_per_million / 1e6:.6f} {prices.currency} at most "
                     f"({low:.6f} for the prompts; model.prices)")
    return lines
