"""Models that ship their own code: the gate on trust_remote_code, and a clear error when that code breaks."""

from __future__ import annotations

import json
import shutil

import pytest

from benchmark import BenchmarkError
from benchmark.run.runner import run

# Generation code in the style of ChatGLM2's repository: it overrides a generation hook and calls a transformers
# method that transformers 5 no longer has.
OLD_STYLE_CODE = '''
from transformers import LlamaForCausalLM


class TinyGLMForCausalLM(LlamaForCausalLM):
    def _update_model_kwargs_for_generation(self, outputs, model_kwargs, is_encoder_decoder=False,
                                            standardize_cache_format=False, **kwargs):
        model_kwargs["past_key_values"] = self._extract_past_from_model_output(
            outputs, standardize_cache_format=standardize_cache_format)
        return model_kwargs
'''


@pytest.fixture(scope="module")
def remote_code_model(tiny_model, tmp_path_factory):
    folder = tmp_path_factory.mktemp("tinyglm") / "tinyglm"
    shutil.copytree(tiny_model, folder)
    (folder / "modeling_tinyglm.py").write_text(OLD_STYLE_CODE)
    config = json.loads((folder / "config.json").read_text())
    config["auto_map"] = {"AutoModelForCausalLM": "modeling_tinyglm.TinyGLMForCausalLM"}
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def overrides(folder):
    return ("model=chatglm2-hf", f"model.pretrained={folder}", "model.device=cpu", "model.dtype=float32",
            "model.generation.max_new_tokens=4", "task=diasafety", "limit=2")


def test_remote_code_needs_permission(compose, remote_code_model, data_root):
    with pytest.raises(BenchmarkError, match="allow_remote_code=true"):
        run(compose(*overrides(remote_code_model)))


def test_remote_code_through_backend_args_needs_permission_too(compose, remote_code_model, data_root):
    args = ("model=hf", f"model.pretrained={remote_code_model}", "+model.args.trust_remote_code=true", "limit=2")
    with pytest.raises(BenchmarkError, match="allow_remote_code=true"):
        run(compose(*args))


def test_broken_remote_code_is_one_clear_error(compose, remote_code_model, data_root):
    cfg = compose(*overrides(remote_code_model), "allow_remote_code=true")
    with pytest.raises(BenchmarkError) as caught:
        run(cfg)
    message = str(caught.value)
    assert "the model's own code (modeling_tinyglm.py" in message
    assert "_extract_past_from_model_output" in message
    assert "vllm serve" in message and "model.revision" in message


def test_chatglm2_config_points_at_a_server(compose):
    cfg = compose("model=chatglm2", "task=cpad")
    assert cfg.model.backend == "local-chat-completions" and cfg.model.trust_remote_code is False
    assert cfg.model.served_model == "THUDM/chatglm2-6b"


def test_chatglm2_chat_template():
    import jinja2

    from benchmark.paths import CONF_DIR

    template = jinja2.Environment().from_string((CONF_DIR / "chat_templates" / "chatglm2.jinja").read_text())
    text = template.render(messages=[{"role": "user", "content": "你好"}, {"role": "assistant", "content": "你好！"},
                                     {"role": "user", "content": "再见"}])
    assert text == "[Round 1]\n\n问：你好\n\n答：你好！\n\n[Round 2]\n\n问：再见\n\n答："
