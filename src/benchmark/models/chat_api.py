"""`backend: local-chat-completions`: any OpenAI-compatible chat completions server, through lm-eval's client with
the suite's per-request retries (models/api.py says why). Requests go to base_url alone, with the key api_key_env
names; the server renders the chat and counts the tokens."""

from __future__ import annotations

import os

from .. import BenchmarkError
from .base import Backend, Reach
from .lmeval import LMEvalBackend, api_key
from .usage import API
from .registry import register_backend


@register_backend("local-chat-completions")
class ChatAPI(LMEvalBackend):
    operations = frozenset({"generate"})  # a chat API gives no log-likelihoods or context length
    fields = frozenset({"base_url", "served_model", "api_key_env", "num_concurrent", "max_retries", "retry_wait",
                        "timeout", "chat_template", "system_prompt"})
    templated = True
    seeded = True

    @classmethod
    def reach(cls, cfg) -> Reach:
        return Reach.ENDPOINT

    @classmethod
    def counted_by(cls, cfg) -> frozenset[str]:
        return frozenset({API})

    @classmethod
    def lm_class(cls, cfg) -> type:
        from .api import ChatCompletions  # lazy: it subclasses lm-eval's API model (imports lm-eval)

        return ChatCompletions

    @classmethod
    def lm_kwargs(cls, cfg) -> dict:
        if not cfg.base_url or not cfg.served_model:
            raise BenchmarkError(f"model {cfg.name}: backend {cfg.backend} needs model.base_url (the chat completions "
                                 "URL) and model.served_model (the model name the server knows)")
        kwargs = dict(base_url=cfg.base_url, model=cfg.served_model, num_concurrent=cfg.num_concurrent,
                      max_retries=cfg.max_retries, retry_wait=cfg.retry_wait, timeout=cfg.timeout,
                      tokenizer_backend=None, tokenized_requests=False, max_gen_toks=cfg.generation.max_new_tokens)
        key = api_key(cfg)
        if key:
            kwargs["header"] = {"Authorization": f"Bearer {key}"}
        return kwargs

    def check(self, cfg) -> None:
        check_api_settings(cfg)

    def reached(self, cfg) -> None:
        check_reachable(cfg)

    def usage(self, requests, answers):
        """The server's count, which its answers carry."""
        return Backend.usage(self, requests, answers)


def check_reachable(cfg) -> None:
    """Fail at once, with the way out, when nothing listens at an API model's base_url."""
    import socket
    from urllib.parse import urlparse

    url = urlparse(cfg.base_url)
    if url.scheme not in ("http", "https") or not url.hostname:
        raise BenchmarkError(f"model {cfg.name}: base_url={cfg.base_url!r} is not an http(s) URL")
    proxy = os.environ.get("HTTPS_PROXY" if url.scheme == "https" else "HTTP_PROXY") or os.environ.get(
        "https_proxy" if url.scheme == "https" else "http_proxy")
    if proxy:  # requests go through the proxy; a direct probe would say nothing about them
        return
    try:
        port = url.port or (443 if url.scheme == "https" else 80)
    except ValueError:
        raise BenchmarkError(f"model {cfg.name}: base_url={cfg.base_url!r} has an invalid port") from None
    try:
        socket.create_connection((url.hostname, port), timeout=5).close()
    except OSError as e:
        raise BenchmarkError(
            f"model {cfg.name}: nothing answers at {cfg.base_url} ({e.strerror or e}); start the server first "
            "(the model config's comments say how) or set model.base_url"
        ) from None


def check_api_settings(cfg) -> None:
    for key, value, least in (("num_concurrent", cfg.num_concurrent, 1), ("max_retries", cfg.max_retries, 0),
                              ("retry_wait", cfg.retry_wait, 0), ("timeout", cfg.timeout, 1)):
        if value < least:
            raise BenchmarkError(f"model {cfg.name}: model.{key}={value}; it must be at least {least}")
