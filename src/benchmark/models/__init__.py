"""Model backends: loading one from its config (the names it may use: models/registry.py), and pinning the content a
backend reads beyond its config into the config's hash (identity.model_sha256)."""

from __future__ import annotations

from .. import BenchmarkError
from .base import Backend
from .registry import backend_class

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
