"""Language models through lm-eval: hf, vllm, local-chat-completions (any OpenAI-compatible server), and any model
registered in lm-eval's registry (`backend: lm-eval:NAME`).

lm-eval does the batching, chat templates and tokenisation; this adapter turns the suite's chat messages into
lm-eval requests. API requests go through lm-eval's chat-completions client with the suite's per-request retries
(models/api.py says why).
"""

from __future__ import annotations

import os

from .. import BenchmarkError
from .base import WEIGHTS_FIELDS, Backend, Reach
from .generation import PrefixCachedGenerator, request_seed
from .registry import LMEVAL_PREFIX
from .usage import API, TOKENIZER, counted
from .weights import GGUF_BACKENDS, dequantised, load_error, local_weights, locate, weights_source

API_BACKENDS = {"local-chat-completions"}


def api_key(cfg) -> str | None:
    """The key the config's api_key_env names, the only key its requests carry (none without one)."""
    if not cfg.api_key_env:
        return None
    key = os.environ.get(cfg.api_key_env)
    if not key:
        raise BenchmarkError(f"model {cfg.name}: environment variable {cfg.api_key_env} (model.api_key_env) is not set")
    return key


def lmeval_class(cfg) -> type:
    """The class lm-eval registered as NAME, for backend lm-eval:NAME."""
    from lm_eval.api.registry import get_model

    name = cfg.backend.removeprefix(LMEVAL_PREFIX)
    try:
        return get_model(name)
    except Exception as e:  # a broken install, an unknown name
        raise BenchmarkError(f"model {cfg.name}: lm-eval backend {name!r} is unavailable: {e}") from None


def confinable(cls) -> bool:
    """An lm-eval API client that sends every request itself, to its base_url with its own headers (lm-eval's
    TemplateAPI: the OpenAI-style clients): made to carry only the config's key (`confined`), it calls out only
    where its config says. Any other lm-eval model may call out through a library of its own, with the keys that
    library finds (litellm, Anthropic's and IBM's SDKs, TextSynth), or is of a kind nothing here can tell apart."""
    from lm_eval.models.api_models import TemplateAPI

    return isinstance(cls, type) and issubclass(cls, TemplateAPI) and all(
        getattr(cls, attr) is getattr(TemplateAPI, attr) for attr in ("model_call", "amodel_call", "header"))


def confined(cls: type, key: str | None) -> type:
    """lm-eval's API client whose requests carry `key` (the config's api_key_env) or no key at all: lm-eval's own
    would read $OPENAI_API_KEY (or another provider's variable) and send it wherever base_url points."""
    header = {"Authorization": f"Bearer {key}"} if key else {}
    return type(cls.__name__, (cls,), {"api_key": property(lambda self: key or ""),
                                       "header": property(lambda self: dict(header))})


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
            retry_wait=cfg.retry_wait,
            timeout=cfg.timeout,
            tokenizer_backend=None,
            tokenized_requests=False,
            max_gen_toks=cfg.generation.max_new_tokens,
        )
        key = api_key(cfg)
        if key:
            kwargs["header"] = {"Authorization": f"Bearer {key}"}
    elif cfg.backend.startswith(LMEVAL_PREFIX):  # lm-eval's own model: the config names its model, the rest is args
        kwargs = {k: v for k, v in (("pretrained", cfg.pretrained), ("model", cfg.served_model),
                                    ("base_url", cfg.base_url)) if v}
    else:
        if not cfg.pretrained:
            raise BenchmarkError(f"model {cfg.name}: backend {cfg.backend} needs model.pretrained (a hub id or a local path)")
        if cfg.gguf_file and cfg.backend != "hf":
            raise BenchmarkError(f"model {cfg.name}: model.gguf_file is read by backends {' and '.join(GGUF_BACKENDS)}, "
                                 f"not {cfg.backend}")
        kwargs = dict(
            pretrained=str(dequantised(cfg)) if cfg.gguf_file else locate(cfg),
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


REMOTE_CODE_HINT = (
    "Code written for an older transformers often breaks this way. Supported paths: serve the model with vLLM "
    "(`vllm serve <hub id> --trust-remote-code`; vLLM implements many such architectures natively) and call the "
    "server with backend local-chat-completions (see conf/model/chatglm2.yaml), or pin a revision of the model "
    "whose code works with this transformers (model.revision=...)."
)


def remote_code_error(cfg, error: BaseException) -> BenchmarkError | None:
    """A clear error when an exception comes from the model repository's own Python code, else None."""
    import traceback

    import transformers

    frames = traceback.extract_tb(error.__traceback__)
    frame = next((f for f in reversed(frames) if "transformers_modules" in f.filename), None)
    if frame is None:
        return None
    return BenchmarkError(
        f"model {cfg.name}: the model's own code ({os.path.basename(frame.filename)}, line {frame.lineno}, from "
        f"{cfg.pretrained}) fails with transformers {transformers.__version__}: {type(error).__name__}: {error}. "
        f"{REMOTE_CODE_HINT}"
    )


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


def prompt_text(cfg, messages: list[dict], apply_chat_template, templated: bool) -> str:
    """The prompt as the model reads it: the config's system prompt where the task gives none, then the chat
    template (`apply_chat_template(messages, add_generation_prompt=True)`) or, untemplated, the messages' texts."""
    if cfg.system_prompt and not any(m["role"] == "system" for m in messages):
        messages = [{"role": "system", "content": cfg.system_prompt}, *messages]
    if templated:
        return apply_chat_template(messages, add_generation_prompt=True)
    return "\n\n".join(m["content"] for m in messages) + "\n"


VLLM_MISSING = (
    "model {name}: backend vllm needs the `vllm` package, which is not installed here. Install it on a machine with "
    "a GPU (pip install vllm), or run `vllm serve MODEL` there and call the server with model=vllm-server "
    "(conf/model/vllm-server.yaml)"
)


class LMEvalBackend(Backend):
    model_kind = "LLM"
    fields = WEIGHTS_FIELDS | {"trust_remote_code", "base_url", "served_model", "api_key_env", "num_concurrent", "max_retries", "retry_wait", "timeout"}

    @classmethod
    def reach(cls, cfg) -> Reach:
        """hf and vllm run here; local-chat-completions calls its base_url alone; an lm-eval:NAME model, as its class
        allows (confinable)."""
        if cfg.backend in API_BACKENDS:
            return Reach.ENDPOINT
        if not cfg.backend.startswith(LMEVAL_PREFIX):
            return Reach.LOCAL
        return Reach.ENDPOINT if confinable(lmeval_class(cfg)) else Reach.ANYWHERE

    @classmethod
    def local_weights(cls, cfg):
        """hf, vllm and lm-eval:NAME models whose `pretrained` is a folder or file here (not a hub id, not pip:)."""
        return None if cfg.backend in API_BACKENDS else local_weights(cfg)

    @classmethod
    def content_source(cls, cfg) -> str:
        return weights_source(cfg)

    def __init__(self, cfg, data_root: str | None = None):
        from importlib.util import find_spec

        if cfg.backend == "vllm" and find_spec("vllm") is None:
            raise BenchmarkError(VLLM_MISSING.format(name=cfg.name))
        if cfg.backend in API_BACKENDS:
            check_api_settings(cfg)
            from .api import ChatCompletions as cls  # lazy: it subclasses lm-eval's API model (imports lm-eval)

            self.operations = frozenset({"generate"})  # a chat API gives no log-likelihoods or context length
        else:
            generic = cfg.backend.startswith(LMEVAL_PREFIX)
            cls = lmeval_class(cfg)
            if generic and confinable(cls):
                cls = confined(cls, api_key(cfg))
            self.operations = frozenset({"generate", "loglikelihood", *(() if generic else ("overflow",)),
                                         *(("hidden_states",) if cfg.backend == "hf" else ())})
        self.cfg = cfg
        self._generator = None  # backend hf: the prefix-caching generator, made on first use
        try:
            kwargs = _backend_kwargs(cfg)
        except BenchmarkError:
            raise
        except Exception as e:  # GGUF weights that cannot be read
            raise load_error(cfg, e) or e from None
        if cfg.backend in API_BACKENDS:
            check_reachable(cfg)
        try:
            self.lm = cls(**kwargs)
        except Exception as e:
            gguf = load_error(cfg, e)
            if gguf is not None:
                raise gguf from None
            if isinstance(e, OSError):  # weights not found locally and no hub
                where = cfg.pretrained or cfg.base_url
                raise BenchmarkError(f"model {cfg.name}: could not load {where}: {str(e).splitlines()[0]}") from None
            raise remote_code_error(cfg, e) or e

    def _translated(self, call, *args):
        try:
            return call(*args)
        except BenchmarkError:
            raise
        except Exception as e:
            raise remote_code_error(self.cfg, e) or e

    def context_text(self, messages: list[dict]) -> str:
        return prompt_text(self.cfg, messages, self.lm.apply_chat_template,
                           self.cfg.chat_template or self.cfg.backend in API_BACKENDS)

    def overflow(self, messages, max_new_tokens):
        if self.cfg.backend in API_BACKENDS:
            return super().overflow(messages, max_new_tokens)
        return len(self.lm.tok_encode(self.context_text(messages))) + max_new_tokens - self.lm.max_length

    def generate(self, conversations, generation, seeds=None):
        """Sampled requests carry their own seeds (`seeds`): API backends send each with its request; `hf` seeds each
        request's own generator (models/generation.py). A failed API request comes back as a Failure in its place."""
        from lm_eval.api.instance import Instance

        if self.cfg.backend == "hf":
            return self._translated(lambda: self._hf_generate(conversations, generation, seeds))

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
        seeded = seeds is not None and generation["do_sample"] and self.cfg.backend in API_BACKENDS
        requests = [
            Instance(request_type="generate_until", doc={},
                     arguments=(self.context_text(m), {**kwargs, **({"seed": seeds[i]} if seeded else {})}), idx=i)
            for i, m in enumerate(conversations)
        ]
        return list(self._translated(lambda: self.lm.generate_until(requests, disable_tqdm=True)))

    def _hf_generate(self, conversations, generation, seeds):
        if self._generator is None:
            self._generator = PrefixCachedGenerator(self.lm.model, self.lm.tokenizer, self.cfg.batch_size,
                                                    self.lm.max_length)
        contexts = [self.context_text(m) for m in conversations]
        if seeds is not None:
            seeds = [request_seed(seed, context) for seed, context in zip(seeds, contexts)]
        return self._generator.generate([self.lm.tok_encode(c) for c in contexts], generation, seeds)

    @classmethod
    def counted_by(cls, cfg) -> frozenset[str]:
        if cfg.backend in API_BACKENDS:
            return frozenset({API})
        # a model registered in lm-eval counts with its tokenizer where it has one, else by what its server says
        return frozenset({API, TOKENIZER}) if str(cfg.backend).startswith("lm-eval:") else frozenset({TOKENIZER})

    def usage(self, requests, answers):
        """An API's answers carry the server's count; hf and vllm count with the model's tokenizer: the prompt as
        the model reads it (chat template applied), the answer without special tokens."""
        if self.cfg.backend in API_BACKENDS or not hasattr(self.lm, "tok_encode"):
            return super().usage(requests, answers)

        found = counted(requests, answers, lambda r: len(self.lm.tok_encode(self.context_text(r.messages))),
                        lambda text: len(self.lm.tok_encode(text, add_special_tokens=False)))
        return super().usage(requests, answers) if found is None else found

    def count_tokens(self, text: str) -> int:
        """The tokens of a prompt text (context_text) as the model reads it."""
        return len(self.lm.tok_encode(text))

    def hidden_states(self, texts: list[str], prefix: str = ""):
        """Backend hf: (n, hidden size) float32, the model's last hidden state (after its final norm: what its output
        head reads) at each text's last token; the texts are prompts as the model reads them (context_text). Each is
        read whole, alone (no padding to shift it); `prefix` (what llama-cpp evaluates once) changes nothing here."""
        import numpy as np
        import torch

        if "hidden_states" not in self.operations:
            raise BenchmarkError(f"model {self.cfg.name}: backend {self.cfg.backend} gives no hidden states (hf and "
                                 "llama-cpp do)")
        model = self.lm.model
        out = []
        with torch.no_grad():
            for text in texts:
                ids = torch.tensor([self.lm.tok_encode(text)], device=model.device)
                state = self._translated(lambda: model.base_model(input_ids=ids).last_hidden_state)
                out.append(state[0, -1].float().cpu().numpy())
        return np.stack(out) if out else np.zeros((0, model.config.hidden_size), dtype=np.float32)

    def loglikelihood(self, pairs):
        from lm_eval.api.instance import Instance

        requests = [
            Instance(request_type="loglikelihood", doc={}, arguments=(self.context_text(m), " " + c), idx=i)
            for i, (m, c) in enumerate(pairs)
        ]
        return [float(ll) for ll, _greedy in self._translated(lambda: self.lm.loglikelihood(requests, disable_tqdm=True))]
