"""Language models through lm-eval's model registry: hf, vllm, local-chat-completions (any OpenAI-compatible server).

lm-eval does the batching, chat templates, tokenisation and API retries; this adapter only turns the suite's
chat messages into lm-eval requests.
"""

from __future__ import annotations

import os

from .. import BenchmarkError
from .base import Backend

API_BACKENDS = {"local-chat-completions"}


def _backend_kwargs(cfg) -> dict:
    if cfg.backend in API_BACKENDS:
        if not cfg.base_url or not cfg.served_model:
            raise BenchmarkError(
                f"model {cfg.name}: backend {cfg.backend} needs model.base_url (the chat completions URL) "
                "and model.served_model (the model name the server knows)"
            )
        kwargs = dict(
            base_url=cfg.base_url,
            model=cfg.served_model,
            num_concurrent=cfg.num_concurrent,
            max_retries=cfg.max_retries,
            timeout=cfg.timeout,
            tokenizer_backend=None,
            tokenized_requests=False,
            max_gen_toks=cfg.generation.max_new_tokens,
        )
        if cfg.api_key_env:
            key = os.environ.get(cfg.api_key_env)
            if not key:
                raise BenchmarkError(f"model {cfg.name}: environment variable {cfg.api_key_env} (model.api_key_env) is not set")
            kwargs["header"] = {"Authorization": f"Bearer {key}"}
    else:
        if not cfg.pretrained:
            raise BenchmarkError(f"model {cfg.name}: backend {cfg.backend} needs model.pretrained (a hub id or a local path)")
        kwargs = dict(
            pretrained=cfg.pretrained,
            trust_remote_code=cfg.trust_remote_code,
            dtype=cfg.dtype,
            batch_size=cfg.batch_size,
        )
        if cfg.revision:
            kwargs["revision"] = cfg.revision
        if cfg.max_length:
            kwargs["max_length"] = cfg.max_length
        if cfg.backend == "hf":
            kwargs["device"] = cfg.device
    kwargs.update(cfg.args)
    return kwargs


class LMEvalBackend(Backend):
    def __init__(self, cfg):
        from lm_eval.api.registry import get_model

        try:
            cls = get_model(cfg.backend)
        except Exception as e:  # vllm not installed, unknown name
            raise BenchmarkError(f"model {cfg.name}: lm-eval backend {cfg.backend!r} is unavailable: {e}") from None
        self.cfg = cfg
        kwargs = _backend_kwargs(cfg)
        try:
            self.lm = cls(**kwargs)
        except OSError as e:  # weights not found locally and no hub
            where = cfg.pretrained or cfg.base_url
            raise BenchmarkError(f"model {cfg.name}: could not load {where}: {str(e).splitlines()[0]}") from None

    def _context(self, messages: list[dict]) -> str:
        if self.cfg.system_prompt and not any(m["role"] == "system" for m in messages):
            messages = [{"role": "system", "content": self.cfg.system_prompt}, *messages]
        if self.cfg.chat_template or self.cfg.backend in API_BACKENDS:
            return self.lm.apply_chat_template(messages, add_generation_prompt=True)
        return "\n\n".join(m["content"] for m in messages) + "\n"

    def overflow(self, messages, max_new_tokens):
        if self.cfg.backend in API_BACKENDS:
            return super().overflow(messages, max_new_tokens)
        return len(self.lm.tok_encode(self._context(messages))) + max_new_tokens - self.lm.max_length

    def supports(self, op):
        if self.cfg.backend in API_BACKENDS and op in ("overflow", "loglikelihood"):
            return False
        return super().supports(op)

    def generate(self, conversations, generation):
        from lm_eval.api.instance import Instance

        kwargs = {
            "until": list(generation.get("until") or []),
            "max_gen_toks": generation["max_new_tokens"],
            "do_sample": generation["do_sample"],
        }
        if generation["do_sample"]:
            kwargs.update(temperature=generation["temperature"], top_p=generation["top_p"])
            if generation.get("top_k") is not None:
                kwargs["top_k"] = generation["top_k"]
        else:
            kwargs["temperature"] = 0.0
        requests = [
            Instance(request_type="generate_until", doc={}, arguments=(self._context(m), dict(kwargs)), idx=i)
            for i, m in enumerate(conversations)
        ]
        return list(self.lm.generate_until(requests, disable_tqdm=True))

    def loglikelihood(self, pairs):
        from lm_eval.api.instance import Instance

        requests = [
            Instance(request_type="loglikelihood", doc={}, arguments=(self._context(m), " " + c), idx=i)
            for i, (m, c) in enumerate(pairs)
        ]
        return [float(ll) for ll, _greedy in self.lm.loglikelihood(requests, disable_tqdm=True)]
