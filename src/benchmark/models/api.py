"""OpenAI-compatible chat endpoints (backend local-chat-completions): lm-eval's client, each request retried alone.

lm-eval 0.4.13's `LocalChatCompletion` builds each request (`_create_payload`: messages, model, max_tokens,
temperature, stop, seed), its headers, and parses the answer; `num_concurrent` and `timeout` set its session. Its own
retry loop (tenacity in `TemplateAPI.generate_until` / `get_batched_requests`) is not used here, for four reasons:
its waits are fixed (1, 1, 2, 4, 8, then 10 s; `max_retries` counts attempts, not retries); it retries every error
alike, a 401 or an unknown model too; it ignores a 429's Retry-After; and a request that still fails raises out of
the whole batch, so with num_concurrent > 1 the answers already received for the others are dropped. Here every
request goes out concurrently (up to num_concurrent at once), is retried on its own after a timeout, a lost
connection, HTTP 408, 429 or 5xx, waiting `retry_wait` seconds and twice as long each time (or what the server's
Retry-After asks, when longer), and one that still fails comes back as a `Failure` in its place.
"""

from __future__ import annotations

import asyncio
import copy
import json
import random

import aiohttp
from lm_eval.models.api_models import LMEVAL_MODEL_NONE_ANSWER_PLACEHOLDER
from lm_eval.models.openai_completions import LocalChatCompletion

from .cached import Failure
from .usage import API, Reply, Usage

RETRY_STATUSES = {408, 429}  # and every 5xx
MAX_WAIT_S = 60.0  # the longest wait of the doubling backoff
MAX_RETRY_AFTER_S = 300.0  # the longest Retry-After honoured


async def pause(seconds: float) -> None:
    """The wait before a retry (one place, so tests can see the waits asked for without waiting)."""
    await asyncio.sleep(seconds)


class HTTPStatusError(Exception):
    def __init__(self, status: int, reason: str, body: str, retry_after: str | None):
        self.status, self.retry_after = status, retry_after
        super().__init__(f"HTTP {status} {reason}".strip() + (f": {body}" if body else ""))


class MalformedAnswer(Exception):
    """HTTP 200, but not a chat completion (some gateways answer an overload this way)."""


def retryable(error: BaseException) -> bool:
    if isinstance(error, HTTPStatusError):
        return error.status in RETRY_STATUSES or error.status >= 500
    # aiohttp's timeouts and lost connections are TimeoutError / ClientConnectionError; ClientPayloadError: a cut body
    return isinstance(error, (TimeoutError, aiohttp.ClientConnectionError, aiohttp.ClientPayloadError, MalformedAnswer))


def describe(error: BaseException, timeout: int) -> str:
    if isinstance(error, HTTPStatusError):
        return str(error)
    if isinstance(error, TimeoutError):
        return f"no answer within {timeout} s (model.timeout)"
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


def _retry_after(error: BaseException) -> float | None:
    value = getattr(error, "retry_after", None)
    try:
        return min(max(float(value), 0.0), MAX_RETRY_AFTER_S) if value is not None else None
    except ValueError:  # the HTTP-date form: use the backoff
        return None


class ChatCompletions(LocalChatCompletion):
    """lm-eval's chat-completions client with per-request retries and failures (see the module's docstring).

    `generate_until` takes lm-eval `Instance`s as usual; a request's gen_kwargs may carry its own `seed` (sampled
    requests: the k samples of one prompt must not share a seed, or a server that honours seeds answers k times the
    same). Each answer is a string, or a `Failure` saying what went wrong and after how many attempts."""

    def __init__(self, retry_wait: float = 1.0, **kwargs):
        super().__init__(**kwargs)
        self.retry_wait = float(retry_wait)

    @property
    def header(self) -> dict:
        """Only what the model config asks for: lm-eval's own default would send $OPENAI_API_KEY to any server."""
        return dict(self._header or {})

    def generate_until(self, requests, disable_tqdm: bool = True) -> list:
        jobs = [(context, dict(gen_kwargs)) for context, gen_kwargs in (r.args[:2] for r in requests)]
        return asyncio.run(self._generate_all(jobs))

    async def _generate_all(self, jobs):
        limit = max(self._concurrent, 1)
        connector = aiohttp.TCPConnector(limit=limit, ssl=self.verify_certificate)
        gate = asyncio.Semaphore(limit)
        # trust_env: the HTTP(S)_PROXY settings apply, as they do to the reachability check
        async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=self.timeout),
                                         trust_env=True) as s:
            return await asyncio.gather(*(self._with_retries(s, gate, context, kw) for context, kw in jobs))

    async def _with_retries(self, session, gate, context, gen_kwargs):
        for attempt in range(1, self.max_retries + 2):
            try:
                return await self._post(session, gate, context, gen_kwargs)
            except (HTTPStatusError, MalformedAnswer, TimeoutError, aiohttp.ClientError) as e:  # others are bugs: raise
                if not retryable(e):
                    return Failure(f"{describe(e, self.timeout)} (not retried)")
                if attempt > self.max_retries:
                    return Failure(f"{describe(e, self.timeout)} (after {attempt} attempts)")
                wait = min(self.retry_wait * 2 ** (attempt - 1), MAX_WAIT_S) * (1 + random.random() / 4)
                wait = max(wait, _retry_after(e) or 0.0)
                await pause(wait)

    async def _post(self, session, gate, context, gen_kwargs) -> str:
        gen_kwargs = copy.deepcopy(gen_kwargs)
        seed = gen_kwargs.pop("seed", self._seed)
        payload = self._create_payload(self.create_message([context]), generate=True, gen_kwargs=gen_kwargs, seed=seed)
        if not payload.get("stop"):
            del payload["stop"]  # some servers (transformers serve) reject an empty stop list
        async with gate, session.post(self.base_url, json=payload, headers=self.header) as response:
            if not response.ok:
                body = " ".join((await response.text(errors="replace")).split())[:300]
                raise HTTPStatusError(response.status, response.reason or "", body, response.headers.get("Retry-After"))
            raw = await response.read()
        try:
            outputs = json.loads(raw)
        except ValueError:
            raise MalformedAnswer(f"the server's answer is not JSON: {raw[:200]!r}") from None
        try:
            choice = outputs["choices"][0]
            text = choice["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise MalformedAnswer(f"the server's answer is not a chat completion: {json.dumps(outputs)[:200]}") from None
        if text is None and choice.get("finish_reason") in ("content_filter", "length"):
            return LMEVAL_MODEL_NONE_ANSWER_PLACEHOLDER  # the server answered with nothing, and said why
        if not isinstance(text, str):
            raise MalformedAnswer(f"the server's answer has no text: {json.dumps(outputs)[:200]}")
        return Reply(text, server_usage(outputs))


def server_usage(outputs: dict) -> Usage | None:
    """The tokens the server says the request read and wrote (its `usage`), where it says."""
    usage = outputs.get("usage")
    try:
        prompt, completion = int(usage["prompt_tokens"]), int(usage["completion_tokens"])
    except (KeyError, TypeError, ValueError):
        return None
    return Usage(prompt, completion, API) if prompt >= 0 and completion >= 0 else None
