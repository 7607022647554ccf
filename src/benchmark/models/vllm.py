"""`backend: vllm`: weights run by vLLM on this machine's GPU, through lm-eval."""

from __future__ import annotations

from .. import BenchmarkError
from .base import Reach
from .lmeval import LocalWeights
from .registry import register_backend

VLLM_MISSING = (
    "model {name}: backend vllm needs the `vllm` package, which is not installed here. Install it on a machine with "
    "a GPU (pip install vllm), or run `vllm serve MODEL` there and call the server with model=vllm-server "
    "(conf/model/vllm-server.yaml)"
)


@register_backend("vllm")
class VLLM(LocalWeights):
    requests_go = Reach.LOCAL
    chunk_size = 1024  # vLLM batches many requests at once on a GPU: big chunks keep it busy

    def check(self, cfg) -> None:
        from importlib.util import find_spec

        if find_spec("vllm") is None:
            raise BenchmarkError(VLLM_MISSING.format(name=cfg.name))
