"""A backend behind the response cache: every request is asked once, ever, per model config."""

from __future__ import annotations

import time

from dataclasses import dataclass

from .. import BenchmarkError
from ..cache import ResponseCache
from ..identity import request_key
from .base import Backend
from .requests import Classify, Generate, LogLikelihood, Replay
from .usage import Tokens, Usage


@dataclass
class Failure:
    """A request that failed after the backend's own retries; recorded in the sample, never cached."""

    error: str


class CachedModel:
    def __init__(self, backend: Backend, model_sha: str, cache: ResponseCache, config=None, seed: int | None = None,
                 progress=None, role: str = "model"):
        self.progress, self.role = progress, role  # a run's Progress, told of every answer as `role`
        self.backend = backend
        self.config = config  # the model config, for settings a caller needs (a judge's generation)
        self.seed = seed  # part of the key of sampled requests: another seed, other samples
        self.sha = model_sha
        self.cache = cache
        self.calls = 0  # requests sent to the backend
        self.hits = 0  # requests answered from the cache
        self.batches = 0  # calls to the backend (each a batch of requests)
        self.seconds = 0.0  # spent waiting for the backend's answers
        self.tokens = Tokens()  # read and written: by requests asked now, and by the answers the cache gave

    def aside(self) -> "CachedModel":
        """The same model and cache with tallies of its own (no progress): asked to measure, not for the run."""
        return CachedModel(self.backend, self.sha, self.cache, self.config, self.seed)

    def supports(self, op: str) -> bool:
        """Whether this role's model answers `op` (what a kind may ask of a role, without reaching its backend)."""
        return self.backend.supports(op)

    def overflow(self, messages: list[dict], max_new_tokens: int) -> int:
        """By how many tokens the messages and the answer overrun the model's context (a backend that can say)."""
        return self.backend.overflow(messages, max_new_tokens)

    @property
    def generation(self) -> dict:
        """The role's generation settings from its config ({} without one)."""
        if self.config is None:
            return {}
        from omegaconf import OmegaConf

        return OmegaConf.to_container(self.config.generation, resolve=True)

    @property
    def match_field(self) -> str | None:
        """A replay found by text: the record field its rows are matched on (replay.match); None otherwise."""
        return getattr(self.backend, "match", None)

    def generate(self, requests: list[Generate]) -> list:
        """Text per request (str), or a Failure."""
        return self._answer("generate", requests)

    def loglikelihood(self, requests: list[LogLikelihood]) -> list:
        """A log-probability per request (float), or a Failure."""
        return self._answer("loglikelihood", requests)

    def classify(self, requests: list[Classify]) -> list:
        """A verdict per request ({"unsafe", "score", ...}), or a Failure."""
        return self._answer("classify", requests)

    def replay(self, requests: list[Replay]) -> list:
        """The recorded answer per request (None where a replay matched by text has no row), or a Failure."""
        return self._answer("replay", requests)

    def _answer(self, op: str, requests: list) -> list:
        wrong = next((r for r in requests if r.op != op), None)
        if wrong is not None:
            raise TypeError(f"a {type(wrong).__name__} request asked as {op}")
        if not self.backend.supports(op):
            name = self._name()
            raise BenchmarkError(f"model {name} (backend {type(self.backend).__name__}) cannot {op}; this task needs "
                                 f"a model that can (docs/tasks.md says what each task asks)")
        shape = self.backend.answer_shape
        keys = [request_key(self.sha + (f"/{shape}" if shape else ""), op, self._keyed(r)) for r in requests]
        stored = self.cache.get_many(keys)
        found = {k: answer for k, (answer, _) in stored.items()}
        cached = sum(k in found for k in keys)
        self.hits += cached
        self._tell(cached)
        self._cached_usage(keys, requests, stored)
        todo = {}
        for k, r in zip(keys, requests):
            if k not in found:
                todo.setdefault(k, r)  # identical requests within a batch are asked once
        pending = list(todo.items())
        # asked a slice at a time: each slice's answers are cached, and counted, as soon as they come
        for start in range(0, len(pending), self._slice()):
            part = dict(pending[start : start + self._slice()])
            self.batches += 1
            started = time.perf_counter()
            results = self._ask(op, list(part.values()))
            self.seconds += time.perf_counter() - started
            self.calls += len(part)
            answered = {k: r for k, r in zip(part, results) if not isinstance(r, Failure)}
            counted = dict(zip(answered, self.backend.usage([part[k] for k in answered], list(answered.values()))))
            self.cache.put_many(self.sha, answered, {k: u.as_json() for k, u in counted.items() if u is not None})
            for k in answered:
                self.tokens.add(counted[k], cached=False)
            found.update(zip(part, results))
            self._tell(sum(1 for k in keys if k in part))
        return [found[k] for k in keys]

    def _cached_usage(self, keys: list, requests: list, stored: dict) -> None:
        """Count the tokens of the answers the cache gave: as stored beside them, else as this backend counts them
        (a local model's tokenizer; an API's answers cached before their counts were kept stay uncounted)."""
        hits = [(k, r) for k, r in zip(keys, requests) if k in stored]
        unknown = [(k, r) for k, r in hits if stored[k][1] is None]
        recounted = dict(zip([k for k, _ in unknown], self.backend.usage(
            [r for _, r in unknown], [stored[k][0] for k, _ in unknown]))) if unknown else {}
        for k, _ in hits:
            self.tokens.add(Usage.from_json(stored[k][1]) if stored[k][1] is not None else recounted[k], cached=True)

    def _slice(self) -> int:
        """Requests per call to the backend: a few of its batches (or of its concurrent requests)."""
        if self.config is None:
            return 1 << 30
        return 4 * max(int(self.config.batch_size or 1), int(self.config.num_concurrent or 1))

    def _tell(self, n: int) -> None:
        if self.progress is not None:
            self.progress.answered(self.role, n)

    def will_not_ask(self, n: int) -> None:
        """Requests a caller planned but will not make (a conversation that ended early)."""
        if self.progress is not None:
            self.progress.will_not_ask(n)

    def _keyed(self, request) -> dict:
        """What keys a request's answer: the request's content, and the run's seed where the answer is sampled."""
        key = request.key()
        if isinstance(request, Generate) and self.seed is not None and request.generation.get("do_sample"):
            key["seed"] = self.seed
        return key

    def _ask(self, op: str, requests: list) -> list:
        """The backend's answers. A request failure (a backend's own Failure, or an OSError: a lost connection, a
        timeout) is recorded and asked again on the next run; any other exception is a bug in the backend or the
        model and stops the run (the samples written so far are kept)."""
        try:
            return self._checked(op, requests, self._batch(op, requests))
        except OSError as e:
            if len(requests) == 1:
                return [Failure(f"{type(e).__name__}: {e}")]
        # the batch failed: ask one by one so one bad request does not sink the others
        results = []
        for r in requests:
            try:
                results += self._batch(op, [r])
            except OSError as e:
                results.append(Failure(f"{type(e).__name__}: {e}"))
        return self._checked(op, requests, results)

    def _checked(self, op: str, requests: list, results: list) -> list:
        if len(results) != len(requests):
            raise BenchmarkError(f"model {self._name()}: its backend answered {len(results)} of {len(requests)} "
                                 f"{op} requests; a backend answers each request in order")
        return results

    def _name(self) -> str:
        return self.config.name if self.config is not None else type(self.backend).__name__

    def _batch(self, op: str, requests: list) -> list:
        if op == "generate":
            generation = requests[0].generation  # one model config per run: one generation setting
            conversations = [r.messages for r in requests]
            if generation.get("do_sample") and self.seed is not None:
                # the run's seed plus the sample's number, so that the k samples of one prompt differ
                return self.backend.generate(conversations, generation,
                                             seeds=[self.seed + (r.sample or 0) for r in requests])
            return self.backend.generate(conversations, generation)
        if op == "loglikelihood":
            return self.backend.loglikelihood([(r.messages, r.continuation) for r in requests])
        if op == "replay":
            return self.backend.replay(requests)
        return self.backend.classify([r.input for r in requests])
