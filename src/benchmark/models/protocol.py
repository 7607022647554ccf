"""What a kind may ask of a role (the model under test, a judge, the attacker): the methods of `Model`. The run
gives each role as a cached model (models/cached.py); a test may give any object with these methods."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from .requests import Classify, Generate, LogLikelihood, Replay


@runtime_checkable
class Model(Protocol):
    # the role's own generation settings (a judge's, the attacker's), as a plain dict
    generation: dict

    def supports(self, op: str) -> bool:
        """Whether the role answers an operation (generate, loglikelihood, classify, replay)."""

    @property
    def match_field(self) -> str | None:
        """A replay found by text: the record field its rows are matched on; None otherwise."""

    def overflow(self, messages: list[dict], max_new_tokens: int) -> int:
        """By how many tokens the messages and the answer overrun the model's context (<= 0: they fit)."""

    def will_not_ask(self, n: int) -> None:
        """Requests the kind planned (requests_per_record) but will not make."""

    def generate(self, requests: list[Generate]) -> list:
        """Text per request, or a cached.Failure."""

    def loglikelihood(self, requests: list[LogLikelihood]) -> list:
        """A log-probability per request, or a cached.Failure."""

    def classify(self, requests: list[Classify]) -> list:
        """A verdict per request ({"unsafe": bool, "score": float, ...}), or a cached.Failure."""

    def replay(self, requests: list[Replay]) -> list:
        """A recorded answer per request (None: a replay matched by text has no row), or a cached.Failure."""
