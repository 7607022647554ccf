"""A model of the protocol kinds ask (benchmark.models.protocol.Model) that answers from plain functions, with no
backend, response cache or config file: a kind is tested by handing it these as its roles."""

from __future__ import annotations

OPS = ("generate", "loglikelihood", "classify", "replay")


class FakeModel:
    """Answers each operation given as a function of its request (`generate=lambda r: ...`); the others it does not
    support. Keeps every request it was asked, in order (`asked`), and the requests the kind said it will not make."""

    def __init__(self, *, generation: dict | None = None, match_field: str | None = None, **answer):
        unknown = set(answer) - set(OPS)
        if unknown:
            raise TypeError(f"FakeModel answers {OPS}, not {sorted(unknown)}")
        self.answer = answer
        self.generation = dict(generation or {})
        self.match_field = match_field
        self.asked: list = []
        self.not_asked = 0

    def supports(self, op: str) -> bool:
        return op in self.answer

    def overflow(self, messages: list[dict], max_new_tokens: int) -> int:
        raise NotImplementedError("a fake model has no context length (supports('overflow') is False)")

    def will_not_ask(self, n: int) -> None:
        self.not_asked += n

    def _answers(self, op: str, requests: list) -> list:
        assert op in self.answer, f"asked to {op}, which this fake does not answer"
        assert all(r.op == op for r in requests), f"{op} asked with {[type(r).__name__ for r in requests]}"
        self.asked += requests
        return [self.answer[op](r) for r in requests]

    def generate(self, requests):
        return self._answers("generate", requests)

    def loglikelihood(self, requests):
        return self._answers("loglikelihood", requests)

    def classify(self, requests):
        return self._answers("classify", requests)

    def replay(self, requests):
        return self._answers("replay", requests)


