"""What every backend offers: some of generate, loglikelihood and classify."""

from __future__ import annotations


class Backend:
    """A model the suite can ask. Subclasses implement the operations they support."""

    def generate(self, conversations: list[list[dict]], generation: dict) -> list[str]:
        raise NotImplementedError(f"{type(self).__name__} cannot generate text")

    def loglikelihood(self, pairs: list[tuple[list[dict], str]]) -> list[float]:
        """Log-probability of each continuation after its conversation (the assistant's turn)."""
        raise NotImplementedError(f"{type(self).__name__} gives no log-likelihoods")

    def classify(self, inputs: list[dict[str, str]]) -> list[dict]:
        """Labels for inputs with named parts (context, response): [{"label": str, "score": float}]."""
        raise NotImplementedError(f"{type(self).__name__} is not a classifier")

    def supports(self, op: str) -> bool:
        return getattr(type(self), op) is not getattr(Backend, op)
