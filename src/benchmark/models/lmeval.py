"""Language models through lm-eval: what its engines share (LMEvalBackend; LocalWeights for those that run weights
here), and any model registered in lm-eval's registry (`backend: lm-eval:NAME`). The engines are modules of their own:
hf.py, vllm.py, chat_api.py (any OpenAI-compatible server).

lm-eval does the batching, chat templates and tokenisation; these adapters turn the suite's chat messages into
lm-eval requests.
"""

from __future__ import annotations

import os

from .. import BenchmarkError
from .base import WEIGHTS_FIELDS, Backend, Reach
from .chat import prompt_text
from .registry import LMEVAL_PREFIX, gguf_backends
from .usage import API, TOKENIZER, counted
from .weights import FromWeights, dequantised, load_error, locate


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


class LMEvalBackend(Backend):
    """What hf, vllm, the chat API and lm-eval:NAME share: requests through an lm-eval model (`self.lm`), made from
    the class `lm_class` gives with the keyword arguments `lm_kwargs` gives; each engine is a subclass of its own."""

    model_kind = "LLM"
    operations = frozenset({"generate", "loglikelihood"})
    templated = False  # True: the chat template always applies (a chat API renders its own)
    seeded = False  # True: each sampled request is sent with its own seed

    @classmethod
    def lm_class(cls, cfg) -> type:
        raise NotImplementedError

    @classmethod
    def lm_kwargs(cls, cfg) -> dict:
        raise NotImplementedError

    @classmethod
    def load_kwargs(cls, cfg) -> dict:
        """The keyword arguments the lm-eval model is made with: the engine's from the config, then `args`."""
        return {**cls.lm_kwargs(cfg), **cfg.args}

    def __init__(self, cfg, data_root: str | None = None):
        self.cfg = cfg
        self.check(cfg)
        lm = self.lm_class(cfg)
        try:
            kwargs = self.load_kwargs(cfg)
        except BenchmarkError:
            raise
        except Exception as e:  # GGUF weights that cannot be read
            raise load_error(cfg, e) or e from None
        self.reached(cfg)
        try:
            self.lm = lm(**kwargs)
        except Exception as e:
            gguf = load_error(cfg, e)
            if gguf is not None:
                raise gguf from None
            if isinstance(e, OSError):  # weights not found locally and no hub
                where = cfg.pretrained or cfg.base_url
                raise BenchmarkError(f"model {cfg.name}: could not load {where}: {str(e).splitlines()[0]}") from None
            raise remote_code_error(cfg, e) or e

    def check(self, cfg) -> None:
        """Settings this engine cannot run with (BenchmarkError), before anything loads."""

    def reached(self, cfg) -> None:
        """Where the engine calls out, that it answers (BenchmarkError), before the model is made."""

    def _translated(self, call, *args):
        try:
            return call(*args)
        except BenchmarkError:
            raise
        except Exception as e:
            raise remote_code_error(self.cfg, e) or e

    def context_text(self, messages: list[dict]) -> str:
        return prompt_text(self.cfg, messages, self.lm.apply_chat_template, self.cfg.chat_template or self.templated)

    def generate(self, conversations, generation, seeds=None):
        """Through lm-eval's generate_until; sampled requests carry their own seeds (`seeds`), which an engine that
        takes one per request sends with it (`seeded`)."""
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
        seeded = seeds is not None and generation["do_sample"] and self.seeded
        requests = [
            Instance(request_type="generate_until", doc={},
                     arguments=(self.context_text(m), {**kwargs, **({"seed": seeds[i]} if seeded else {})}), idx=i)
            for i, m in enumerate(conversations)
        ]
        return list(self._translated(lambda: self.lm.generate_until(requests, disable_tqdm=True)))

    def usage(self, requests, answers):
        """Counted with the model's tokenizer where it has one: the prompt as the model reads it (chat template
        applied), the answer without special tokens; else as the base class says."""
        if not hasattr(self.lm, "tok_encode"):
            return super().usage(requests, answers)
        found = counted(requests, answers, lambda r: len(self.lm.tok_encode(self.context_text(r.messages))),
                        lambda text: len(self.lm.tok_encode(text, add_special_tokens=False)))
        return super().usage(requests, answers) if found is None else found

    def count_tokens(self, text: str) -> int:
        """The tokens of a prompt text (context_text) as the model reads it."""
        return len(self.lm.tok_encode(text))

    def loglikelihood(self, pairs):
        from lm_eval.api.instance import Instance

        requests = [
            Instance(request_type="loglikelihood", doc={}, arguments=(self.context_text(m), " " + c), idx=i)
            for i, (m, c) in enumerate(pairs)
        ]
        return [float(ll) for ll, _greedy in self._translated(lambda: self.lm.loglikelihood(requests, disable_tqdm=True))]


class LocalWeights(FromWeights, LMEvalBackend):
    """An engine that runs weights on this machine (hf, vllm)."""

    operations = frozenset({"generate", "loglikelihood", "overflow"})
    fields = WEIGHTS_FIELDS | {"trust_remote_code"}

    @classmethod
    def counted_by(cls, cfg) -> frozenset[str]:
        return frozenset({TOKENIZER})

    @classmethod
    def lm_class(cls, cfg) -> type:
        return lmeval_class(cfg)

    @classmethod
    def lm_kwargs(cls, cfg) -> dict:
        if not cfg.pretrained:
            raise BenchmarkError(f"model {cfg.name}: backend {cfg.backend} needs model.pretrained (a hub id or a local path)")
        if cfg.gguf_file and not cls.reads_gguf:
            raise BenchmarkError(f"model {cfg.name}: model.gguf_file is read by backends {' and '.join(gguf_backends())}, "
                                 f"not {cfg.backend}")
        kwargs = dict(pretrained=str(dequantised(cfg)) if cfg.gguf_file else locate(cfg),
                      trust_remote_code=cfg.trust_remote_code, dtype=cfg.dtype, batch_size=cfg.batch_size)
        if cfg.revision:
            kwargs["revision"] = cfg.revision
        if cfg.max_length:
            kwargs["max_length"] = cfg.max_length
        return kwargs

    def overflow(self, messages, max_new_tokens):
        return len(self.lm.tok_encode(self.context_text(messages))) + max_new_tokens - self.lm.max_length


class RegisteredInLMEval(FromWeights, LMEvalBackend):
    """`backend: lm-eval:NAME`: the model lm-eval registered as NAME; the config names its model (pretrained,
    served_model, base_url), the rest is args."""

    fields = WEIGHTS_FIELDS | {"trust_remote_code", "base_url", "served_model", "api_key_env", "num_concurrent",
                               "max_retries", "retry_wait", "timeout"}

    @classmethod
    def reach(cls, cfg) -> Reach:
        """As its class allows (confinable): an API client of lm-eval's that sends every request itself calls its
        base_url alone."""
        return Reach.ENDPOINT if confinable(lmeval_class(cfg)) else Reach.ANYWHERE

    @classmethod
    def counted_by(cls, cfg) -> frozenset[str]:
        # with its tokenizer where it has one, else by what its server says
        return frozenset({API, TOKENIZER})

    @classmethod
    def lm_class(cls, cfg) -> type:
        lm = lmeval_class(cfg)
        return confined(lm, api_key(cfg)) if confinable(lm) else lm

    @classmethod
    def lm_kwargs(cls, cfg) -> dict:
        return {k: v for k, v in (("pretrained", cfg.pretrained), ("model", cfg.served_model),
                                  ("base_url", cfg.base_url)) if v}
