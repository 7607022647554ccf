"""Model backends: lm-eval's registry for language models, the suite's own for classifiers."""

from __future__ import annotations


from omegaconf import OmegaConf

from .. import BenchmarkError
from ..hashing import file_sha256, sha256_json
from .base import Backend

LMEVAL_BACKENDS = ("hf", "vllm", "local-chat-completions")
SUITE_BACKENDS = ("profanity-check", "detoxify", "diasafety-detector", "keywords", "replay")

# Fields that change how a run is executed but not what the model answers.
_NOT_HASHED = ("name", "metadata", "batch_size", "num_concurrent", "max_retries", "retry_wait", "timeout", "device")


def _without_defaults(data: dict, defaults: dict) -> dict:
    """The values that differ from the schema's defaults: a field added to the schema later (with a default that
    keeps today's behaviour) leaves every existing model's hash, and so its cached answers, as they are."""
    out = {}
    for key, value in data.items():
        default = defaults.get(key)
        if isinstance(value, dict) and isinstance(default, dict):
            value = _without_defaults(value, default)
            if value:
                out[key] = value
        elif key not in defaults or value != default:
            out[key] = value
    return out


def model_sha256(cfg, data_root: str | None = None) -> str:
    """What decides the model's answers: the config's values that are not the schema's defaults, and for a replay
    the recorded file's content too."""
    from ..schema import ModelConfig

    defaults = OmegaConf.to_container(OmegaConf.structured(ModelConfig), resolve=False, throw_on_missing=False)
    data = _without_defaults(OmegaConf.to_container(cfg, resolve=True), defaults)
    for key in _NOT_HASHED:
        data.pop(key, None)
    if cfg.backend == "replay" and cfg.replay is not None and data_root:
        from ..data import data_file

        recorded = data_file(data_root, cfg.replay.path, f"model {cfg.name}: replay")
        if recorded.is_file() and not recorded.is_symlink():
            data["recorded_sha256"] = file_sha256(recorded)
    if cfg.backend == "diasafety-detector" and cfg.pretrained:
        from ..detector.model import read_manifest

        data["weights_sha256"] = read_manifest(cfg.pretrained)["weights_sha256"]
    return sha256_json(data)


def load_backend(cfg, allow_remote_code: bool, data_root: str | None = None) -> Backend:
    if (cfg.trust_remote_code or (cfg.args or {}).get("trust_remote_code")) and not allow_remote_code:
        raise BenchmarkError(
            f"model {cfg.name} runs code from its repository (trust_remote_code: true). Review that code, then "
            "pass allow_remote_code=true on the command line to allow it."
        )
    if cfg.backend in LMEVAL_BACKENDS:
        from .lmeval import LMEvalBackend

        return LMEvalBackend(cfg)
    if cfg.backend == "profanity-check":
        from .profanity import ProfanityCheck

        return ProfanityCheck(cfg, data_root)
    if cfg.backend == "diasafety-detector":
        from .detector import DiaSafetyDetector

        return DiaSafetyDetector(cfg)
    if cfg.backend == "detoxify":
        from .detoxify import DetoxifyBackend

        return DetoxifyBackend(cfg)
    if cfg.backend == "keywords":
        from .keywords import Keywords

        return Keywords(cfg)
    if cfg.backend == "replay":
        from .replay import Replay

        return Replay(cfg, data_root)
    raise BenchmarkError(
        f"model {cfg.name}: unknown backend {cfg.backend!r}; available: {', '.join(LMEVAL_BACKENDS + SUITE_BACKENDS)}"
    )
