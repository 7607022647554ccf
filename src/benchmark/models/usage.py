"""Tokens read and written, per request and per role, and what they cost at a model's declared prices."""

from __future__ import annotations

from dataclasses import dataclass, field

API = "api"  # counted by the server (its answer's `usage`)
TOKENIZER = "tokenizer"  # counted here with the model's own tokenizer


@dataclass(frozen=True)
class Usage:
    """One request: the tokens the model read (its prompt) and wrote (its answer), and who counted them."""

    prompt: int
    completion: int
    counted_by: str  # API or TOKENIZER

    def as_json(self) -> dict:
        return {"prompt": self.prompt, "completion": self.completion, "counted_by": self.counted_by}

    @classmethod
    def from_json(cls, data) -> Usage | None:
        if not isinstance(data, dict):
            return None
        return cls(int(data["prompt"]), int(data["completion"]), str(data["counted_by"]))


class Reply(str):
    """A model's answer, with the tokens the server says it read and wrote (API backends)."""

    usage: Usage | None

    def __new__(cls, text: str, usage: Usage | None):
        reply = super().__new__(cls, text)
        reply.usage = usage
        return reply


@dataclass
class Tokens:
    """One role's tokens over a run: those of requests asked now (which cost) and of answers from the cache."""

    prompt: int = 0
    completion: int = 0
    cached_prompt: int = 0
    cached_completion: int = 0
    uncounted: int = 0  # requests whose tokens this backend cannot count (a keyword list, a recorded replay)
    counted_by: set = field(default_factory=set)

    def add(self, usage: Usage | None, cached: bool) -> None:
        if usage is None:
            self.uncounted += 1
            return
        self.counted_by.add(usage.counted_by)
        if cached:
            self.cached_prompt += usage.prompt
            self.cached_completion += usage.completion
        else:
            self.prompt += usage.prompt
            self.completion += usage.completion

    @property
    def new(self) -> int:
        return self.prompt + self.completion

    def as_json(self) -> dict:
        return {"prompt": self.prompt, "completion": self.completion, "cached_prompt": self.cached_prompt,
                "cached_completion": self.cached_completion, "uncounted": self.uncounted,
                "counted_by": sorted(self.counted_by)}


def counted(requests: list, answers: list, read, length) -> list | None:
    """What a local model's requests read and wrote, counted with its tokenizer: `read(request)` the prompt as the
    model reads it, `length(text)` an answer's tokens. A generation reads its prompt and writes its answer; a
    log-likelihood reads the prompt and the continuation and writes nothing. None for other operations."""
    op = requests[0].op if requests else None  # one operation per call (cached.CachedModel)
    if op == "generate":
        return [Usage(read(r), length(a), TOKENIZER) if isinstance(a, str) else None for r, a in zip(requests, answers)]
    if op == "loglikelihood":
        return [Usage(read(r) + length(" " + r.continuation), 0, TOKENIZER) for r in requests]
    return None


def cost(tokens: Tokens, prices) -> float:
    """What the tokens asked now cost at `prices` (ModelConfig.prices: per million tokens read and written)."""
    return (tokens.prompt * prices.input_per_million + tokens.completion * prices.output_per_million) / 1e6
