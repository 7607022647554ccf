"""What every backend offers: some of generate, loglikelihood and classify, and where its requests go."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from enum import Enum

from omegaconf import OmegaConf

from .. import BenchmarkError
from ..config import ModelConfig
from ..identity import essential
from .usage import TOKENIZER


class Reach(str, Enum):
    """Where a backend's requests may go, and with which key (Backend.reach)."""

    LOCAL = "local"  # nowhere a config names: the model runs on this machine (weights may come from the hub)
    ENDPOINT = "endpoint"  # only to the config's base_url, with only the key its api_key_env names (or none)
    ANYWHERE = "anywhere"  # wherever the backend or its library decides, with keys it finds itself


# what the suite reads of every model config, whatever its backend
COMMON_FIELDS = frozenset({"name", "backend", "metadata", "prices", "tokenizer", "sha256", "args", "generation",
                           "scoring", "batch_size"})
# the weights of a GGUF or transformers model, and how its prompt is made
WEIGHTS_FIELDS = frozenset({"pretrained", "gguf_file", "split_weights", "revision", "dtype", "device", "max_length",
                            "chat_template", "system_prompt"})
CLASSIFIER_FIELDS = frozenset({"input", "threshold"})


class Backend:
    """A model the suite can ask, made with `(cfg, data_root)`. A backend declares what it can be asked in
    `operations` (some of generate, loglikelihood, classify, replay, overflow, hidden_states; an instance may narrow it, e.g. a chat
    API gives no log-likelihoods) and implements those methods.

    A backend is one module: its class registered with @register_backend("name") (models/registry.py), in this
    folder or in any module imported before the run; another package may name it under the entry-point group
    `benchmark.backends` (`[project.entry-points."benchmark.backends"] my-backend = "my_pkg.module:MyBackend"`); any
    model registered in lm-eval is `backend: lm-eval:NAME`."""

    operations: frozenset[str] = frozenset()
    # what kind of model it runs, as the board groups models: LLM | classifier | recorded answers | other
    model_kind: str = "other"
    # the ModelConfig fields it reads beyond COMMON_FIELDS: a shipped config sets no other (tests/test_backends.py),
    # and a run warns of one a config or an override set (stray_fields); None (a plug-in that does not say): any
    fields: frozenset[str] | None = None
    # its own settings under the config's `args` (a dataclass, as a kind declares its task section): their keys (a
    # submitted config may set them, as the serving ones) and types; a config's other args are refused. None: the
    # args go to the engine as they are (llama_cpp.Llama's keyword arguments, lm-eval's model arguments)
    settings: type | None = None
    # the shape of this backend's answers, part of every cached answer's key: change it when the shape changes, so
    # answers cached in the old shape are never read as the new one ("" for text answers: the model's own words)
    answer_shape: str = ""
    # where this backend's requests go (Reach). A backend that does not say is taken to call out wherever it decides,
    # so `submit verify` never runs it with a maintainer's credentials; one whose answer depends on its config
    # overrides reach()
    requests_go: Reach = Reach.ANYWHERE
    # a classifier's verdict fields (classify's answers): a submitted verdict holding any other field is refused, so
    # nothing a submitter adds can be read before the backend's own fields (None: this backend gives no verdicts)
    verdict_fields: frozenset[str] | None = None
    reads_gguf = False  # whether it reads GGUF weights (`gguf_file`)
    # records per chunk (a run's samples are on disk after each): an engine that batches many requests at once on a
    # GPU wants big chunks, and so does a classifier that reads a thousand texts in milliseconds but pays a fixed cost
    # per call (profanity-check: about 15 ms)
    chunk_size = 64
    # what a classifier's flag says of a text: harm (unsafe) or refusal (the reply refuses); it is measured on the
    # labelled sets that label the same (conf/judge_validation.yaml: measures)
    measures: str = "harm"

    @classmethod
    def own_settings(cls, cfg):
        """The config's `args` as this backend's settings (an instance of `settings`, typed and defaulted); a key
        it does not declare, or a value of another type, is an error that names it. None where it declares none."""
        if cls.settings is None:
            return None
        args = OmegaConf.to_container(cfg.args, resolve=True) if OmegaConf.is_config(cfg.args) else dict(cfg.args or {})
        unknown = sorted(set(args) - settings_keys(cls))
        if unknown:
            raise BenchmarkError(f"model {cfg.name}: args {unknown} are not settings of backend {cfg.backend} "
                                 f"({', '.join(sorted(settings_keys(cls)))})")
        try:
            return OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(cls.settings), args))
        except Exception as e:  # omegaconf's validation error: its key, and the value's problem on its first line
            key = getattr(e, "full_key", None) or ""
            raise BenchmarkError(f"model {cfg.name}: args.{key}: {str(e).splitlines()[0]}") from None

    @classmethod
    def stray_fields(cls, cfg) -> list[str]:
        """The fields the config sets away from the schema's default that this backend does not read."""
        if cls.fields is None:
            return []
        set_here = essential(OmegaConf.to_container(cfg, resolve=True), ModelConfig)
        return sorted(set(set_here) - COMMON_FIELDS - cls.fields)

    @classmethod
    def reach(cls, cfg) -> Reach:
        """Where this config's requests go: LOCAL, ENDPOINT (cfg.base_url only, with only the key cfg.api_key_env
        names) or ANYWHERE."""
        return cls.requests_go

    @classmethod
    def local_weights(cls, cfg):
        """The weights this config loads from a path on this machine, fingerprinted (weights.Fingerprint), for
        backends that load weights from one; None for the others, and where a hub id or a package names them."""
        return None

    @classmethod
    def content_sha256(cls, cfg, data_root: str | None) -> str | None:
        """The hash of what decides the answers beyond the config (local weights, a replay's recorded file, a
        detector's trained folder), for backends that read such content; None for the others."""
        weights = cls.local_weights(cfg)
        return weights.sha256 if weights is not None else None

    @classmethod
    def installed_sha256(cls, cfg) -> str | None:
        """For a backend whose model ships inside an installed package (not pinned in its config): the hash of that
        package's model files, which decide its answers; None for the others."""
        return None

    @classmethod
    def content_source(cls, cfg) -> str:
        """Where that content is, in words (for messages)."""
        return ""

    def generate(self, conversations: list[list[dict]], generation: dict, seeds: list[int] | None = None) -> list:
        """One answer per conversation. `seeds`: a sampling seed per request, for backends that send one with each
        (APIs). A request that failed after the backend's own retries may come back as a cached.Failure."""
        raise NotImplementedError(f"{type(self).__name__} cannot generate text")

    def loglikelihood(self, pairs: list[tuple[list[dict], str]]) -> list[float]:
        """Log-probability of each continuation after its conversation (the assistant's turn)."""
        raise NotImplementedError(f"{type(self).__name__} gives no log-likelihoods")

    def hidden_states(self, texts: list[str], prefix: str = ""):
        """(n, hidden size): a language model's last hidden state at the last token of each prompt text (a trained
        probe reads it: models/probe.py). `prefix`: text every prompt starts with, which an engine may evaluate once."""
        raise NotImplementedError(f"{type(self).__name__} gives no hidden states")

    @classmethod
    def unreadable_set(cls, cfg, parts: dict) -> str | None:
        """Why the classifier `cfg` configures cannot be measured on a labelled set whose rows give it these named
        parts (`input` of conf/judge_validation.yaml), or None: it reads any. Said without loading it."""
        return None

    def classify(self, inputs: list[dict[str, str]]) -> list[dict]:
        """A verdict per input with named parts (context, response, category): [{"unsafe": bool, "score": float}],
        plus "category" where the classifier names the kind of unsafety (the DiaSafety detector); a task maps the
        verdict to its own labels (classify.classifier_labels)."""
        raise NotImplementedError(f"{type(self).__name__} is not a classifier")

    def replay(self, requests: list) -> list[str]:
        """Recorded answers for records (requests.Replay: by the record's id, or by its `match` text)."""
        raise NotImplementedError(f"{type(self).__name__} has no recorded answers")

    @classmethod
    def verdict_rule(cls, cfg) -> Callable[[dict], str | None]:
        """This backend's own rule for a recorded verdict of the config `cfg` ({"unsafe", ...} as classify gave it,
        or a judge's vote with its `unsafe` from `flagged`): a function of the verdict that says what is wrong with it
        from the fields it records, None where they agree or the rule needs what no record holds (then `submit
        verify` re-runs it). What the rule reads of its config (settings, a manifest) it reads once, when made: a
        card holds thousands of verdicts of one judge."""
        return lambda verdict: None

    @classmethod
    def recorded_facts(cls, cfg) -> dict | None:
        """The facts `describe` gives this config, where they can be read without loading it (a trained judge's
        manifest: its weights' hash, its figures); None where they cannot, and a card's are then taken as given."""
        return None

    @classmethod
    def counted_by(cls, cfg) -> frozenset[str]:
        """Who counts this config's tokens (models.usage: "tokenizer", "api"): a backend with its own `usage`
        counts with its tokenizer; one without counts nothing. A card claiming another counter is refused."""
        return frozenset({TOKENIZER}) if cls.usage is not Backend.usage else frozenset()

    def usage(self, requests: list, answers: list) -> list:
        """The tokens each answered request read and wrote (models.usage.Usage), or None where this backend cannot
        count them. By default what an answer carries itself (an API's Reply, with the server's count); a backend
        with a tokenizer counts with it, for answers asked now and for answers from the cache alike."""
        return [getattr(a, "usage", None) for a in answers]

    def overflow(self, messages: list[dict], max_new_tokens: int) -> int:
        """By how many tokens a prompt and its answer exceed the model's context (<= 0: it fits)."""
        raise NotImplementedError(f"{type(self).__name__} does not know its context length")

    def describe(self) -> dict:
        """Facts a score card records about the backend when it judges (design, measured quality)."""
        return {}

    def supports(self, op: str) -> bool:
        return op in self.operations


def settings_keys(cls: type[Backend]) -> frozenset[str]:
    """The `args` keys a backend class reads as its own settings (its `settings` dataclass's fields)."""
    return frozenset(f.name for f in dataclasses.fields(cls.settings)) if cls.settings is not None else frozenset()


def utterance_texts(inputs: list[dict], mode: str) -> list[str]:
    """What an utterance-level classifier reads: the response, or context and response as one text."""
    if mode == "response":
        return [x.get("response", "") for x in inputs]
    return [f"{x.get('context', '')}\n{x.get('response', '')}".strip() for x in inputs]


def counts_tokens(backend) -> bool:
    """Whether a backend can count what its requests read and write: one whose `usage` is its own (a tokenizer's
    count, or an API server's); the default reads what answers carry, which only an API's do."""
    return type(backend).usage is not Backend.usage


def above_threshold(verdict: dict, field: str, threshold: float, inclusive: bool = False) -> str | None:
    """A verdict whose `unsafe` is its `field` above the threshold (at it too, if inclusive): what is wrong, or None."""
    value = verdict.get(field)
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return f"{field} {value!r}: the verdict records its {field} as a number"
    unsafe = value >= threshold if inclusive else value > threshold
    if verdict["unsafe"] is not unsafe:
        return f"unsafe {verdict['unsafe']} with {field} {value} against the threshold {threshold}: it is {unsafe}"
    return None
