"""The vLLM configs without vLLM: they compose, their parallelism reaches lm-eval's arguments, and a missing vllm
package is one clear error. (Running a model on vLLM needs a GPU; these tests do not.)"""

from __future__ import annotations

from importlib.util import find_spec

import pytest
import yaml
from conftest import REPO, run_cli

from benchmark import BenchmarkError
from benchmark.models import load_backend
from benchmark.models.registry import backend_class


def test_vllm_config_composes_on_the_command_line():
    done = run_cli("model=vllm", "model.args.tensor_parallel_size=4", "model.args.data_parallel_size=2", "--cfg", "job",
                   cwd=REPO)
    assert done.returncode == 0, done.stderr[-2000:]
    model = yaml.safe_load(done.stdout)["model"]
    assert model["backend"] == "vllm"
    assert model["args"]["tensor_parallel_size"] == 4 and model["args"]["data_parallel_size"] == 2


def test_parallelism_and_engine_settings_reach_lm_eval(compose):
    cfg = compose("model=vllm", "model.pretrained=org/model-7b", "model.args.tensor_parallel_size=2",
                  "model.args.data_parallel_size=2", "+model.args.max_model_len=4096").model
    kwargs = backend_class(cfg).load_kwargs(cfg)
    assert kwargs == {"pretrained": "org/model-7b", "trust_remote_code": False, "dtype": "auto", "batch_size": 256,
                      "tensor_parallel_size": 2, "data_parallel_size": 2, "gpu_memory_utilization": 0.9,
                      "max_model_len": 4096}


@pytest.mark.skipif(find_spec("vllm") is not None, reason="vllm is installed here")
def test_missing_vllm_is_one_clear_error(compose):
    cfg = compose("model=vllm", "model.pretrained=org/model-7b").model
    with pytest.raises(BenchmarkError, match=r"^model vllm: backend vllm needs the `vllm` package, which is not "
                                             r"installed here\. Install it on a machine with a GPU \(pip install vllm\)"):
        load_backend(cfg, allow_remote_code=False)


def test_vllm_server_config(compose):
    cfg = compose("model=vllm-server").model
    assert cfg.backend == "local-chat-completions" and cfg.base_url == "http://127.0.0.1:8000/v1/chat/completions"
    with pytest.raises(BenchmarkError, match=r"model vllm-server: backend local-chat-completions needs model.base_url "
                                             r".* and model.served_model"):
        load_backend(cfg, allow_remote_code=False)
    served = compose("model=vllm-server", "model.served_model=org/model-7b", "model.num_concurrent=16").model
    kwargs = backend_class(served).load_kwargs(served)
    assert kwargs["model"] == "org/model-7b" and kwargs["num_concurrent"] == 16 and "header" not in kwargs


def test_vllm_runs_in_bigger_chunks_than_the_cpu_backends(compose):
    assert compose("model=vllm").chunk_size is None  # the backend decides unless the command line does
    size = {name: backend_class(compose(f"model={name}").model).chunk_size for name in ("vllm", "hf", "vllm-server")}
    assert size == {"vllm": 1024, "hf": 64, "vllm-server": 64}  # vllm-server: the chat API
