"""What a kind may ask a model: one request type per operation. Each names its operation and gives the content that
keys its answer in the response cache (`key`), so two requests that would get the same answer share one entry and
two that might not never do."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar


@dataclass(frozen=True)
class Generate:
    """Text written after chat messages, with the generation settings that write it. `sample`: which of a prompt's
    k samples (k > 1 only); `conversation`: the dialogue a turn belongs to, so that two dialogues reaching the same
    messages are asked apart."""

    op: ClassVar[str] = "generate"
    messages: list[dict]
    generation: dict
    sample: int | None = None
    conversation: str | None = None

    def key(self) -> dict:
        out = {"messages": self.messages, "generation": self.generation}
        if self.sample is not None:
            out["sample"] = self.sample
        if self.conversation is not None:
            out["conversation"] = self.conversation
        return out


@dataclass(frozen=True)
class LogLikelihood:
    """The log-probability of `continuation` as the assistant's answer to chat messages."""

    op: ClassVar[str] = "loglikelihood"
    messages: list[dict]
    continuation: str

    def key(self) -> dict:
        return {"messages": self.messages, "continuation": self.continuation}


@dataclass(frozen=True)
class Classify:
    """A classifier's verdict on an input of named parts (context, response, category)."""

    op: ClassVar[str] = "classify"
    input: dict[str, str]

    def key(self) -> dict:
        return {"input": self.input}


@dataclass(frozen=True)
class Replay:
    """The recorded answer of a task's record: by its id, or, for a replay matched by text, by `match` (the record's
    field the replay's rows are found by)."""

    op: ClassVar[str] = "replay"
    task: str
    id: str
    match: str | None = None

    def key(self) -> dict:
        return {"task": self.task, "id": self.id, **({"key": self.match} if self.match is not None else {})}

