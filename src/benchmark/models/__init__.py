"""Model backends: loading one from its config (the names it may use: models/registry.py), and the hash that names
what a config's model answers (the response cache's key, a card's config_sha256)."""

from __future__ import annotations

from omegaconf import OmegaConf

from .. import BenchmarkError
from ..hashing import sha256_json
from .base import Backend
from .registry import backend_class

# Fields that change how a run is executed but not what the model answers.
_NOT_HASHED = ("name", "metadata", "prices", "tokenizer", "batch_size", "num_concurrent", "max_retries", "retry_wait", "timeout", "device")


def model_sha256(cfg) -> str:
    """What decides the model's answers: the config's values that are not the schema's defaults (a replay's recorded
    file and a detector's weights through the `sha256` the run pinned in the config: pin_content)."""
    from ..schema import ModelConfig, essential

    data = essential(OmegaConf.to_container(cfg, resolve=True), ModelConfig)
    for key in _NOT_HASHED:
        data.pop(key, None)
    return sha256_json(data)


def pin_content(cfg, data_root: str | None) -> None:
    """Set `cfg.sha256` to the content the backend reads (a replay's recorded file, a detector's weights), so that
    the config hash names it; a config that pins another content is refused."""
    from omegaconf import open_dict

    found = backend_class(cfg).content_sha256(cfg, data_root)
    if found is None:
        return
    if cfg.sha256 and cfg.sha256 != found:
        raise BenchmarkError(f"model {cfg.name}: its config pins sha256 {cfg.sha256}, but what it reads here has "
                             f"{found} ({backend_class(cfg).content_source(cfg)}); use the content it was run on, or "
                             f"set model.sha256={found}")
    with open_dict(cfg):
        cfg.sha256 = found


def load_backend(cfg, allow_remote_code: bool, data_root: str | None = None) -> Backend:
    if (cfg.trust_remote_code or (cfg.args or {}).get("trust_remote_code")) and not allow_remote_code:
        raise BenchmarkError(
            f"model {cfg.name} runs code from its repository (trust_remote_code: true). Review that code, then "
            "pass allow_remote_code=true on the command line to allow it."
        )
    return backend_class(cfg)(cfg, data_root)
