"""Backend llama-cpp: GGUF weights run by llama.cpp. The errors are tested everywhere; the model itself with
SmolLM2's real GGUF where llama-cpp-python (the extra `llama-cpp`) and SmolLM2's package are installed."""

from __future__ import annotations

import json
import sys
from importlib.util import find_spec

import pytest
from conftest import SMOLLM2

from benchmark import BenchmarkError

LLAMA = (f"model={SMOLLM2}", "model.backend=llama-cpp", "model.generation.max_new_tokens=12")
needs_llama = pytest.mark.skipif(find_spec("llama_cpp") is None,
                                 reason='llama-cpp-python is not installed (pip install -e ".[llama-cpp]")')


def test_without_llama_cpp_python_the_error_says_how_to_install_it_or_which_engine_to_use(compose, monkeypatch):
    from benchmark.models import load_backend

    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # an import of it fails, as where it is not installed
    cfg = compose(*LLAMA, "task=diasafety").model
    with pytest.raises(BenchmarkError, match=r"llama-cpp-python, which is not installed.*\[llama-cpp\].*backend=hf"):
        load_backend(cfg, allow_remote_code=False)


def test_a_build_with_llama_cpps_amx_kernels_is_refused_before_the_model_loads(compose, monkeypatch):
    from types import ModuleType

    from benchmark.models import load_backend

    loaded = []
    fake, formats = ModuleType("llama_cpp"), ModuleType("llama_cpp.llama_chat_format")
    fake.Llama = lambda **kwargs: loaded.append(kwargs)
    fake.llama_print_system_info = lambda: b"CPU : AVX2 = 1 | AVX512 = 1 | AMX_INT8 = 1 | REPACK = 1 | "
    formats.Jinja2ChatFormatter = object
    monkeypatch.setitem(sys.modules, "llama_cpp", fake)
    monkeypatch.setitem(sys.modules, "llama_cpp.llama_chat_format", formats)
    cfg = compose(*LLAMA, "task=diasafety").model
    with pytest.raises(BenchmarkError, match=r"built with llama.cpp's AMX kernels.*GGML_NATIVE=OFF.*backend=hf"):
        load_backend(cfg, allow_remote_code=False)
    assert loaded == []
    fake.llama_print_system_info = lambda: b"CPU : AVX2 = 1 | AVX512 = 1 | REPACK = 1 | "
    with pytest.raises(Exception):  # past the check: the fake loads nothing a backend can use
        load_backend(cfg, allow_remote_code=False)
    assert len(loaded) == 1


def test_weights_that_are_not_gguf_are_refused_before_anything_loads(compose, tmp_path):
    from benchmark.models.llamacpp import gguf_path

    cfg = compose("model=hf", f"model.pretrained={tmp_path}", "model.backend=llama-cpp", "task=diasafety").model
    with pytest.raises(BenchmarkError, match="model.gguf_file names the file"):
        gguf_path(cfg)
    cfg.gguf_file = "model.gguf"
    with pytest.raises(BenchmarkError, match=f"no file model.gguf in {tmp_path}"):
        gguf_path(cfg)


def test_split_weights_may_name_llama_cpp_but_no_other_engine_without_gguf():
    from benchmark.models.weights import valid_split_weights

    entry = {"packages": ["a==1"], "sha256": "0" * 64}
    assert valid_split_weights("llama-cpp", "m.gguf", entry) == []
    assert [k for k, _ in valid_split_weights("vllm", "m.gguf", entry)] == ["split_weights"]


@pytest.fixture(scope="module")
def backend(smollm2):
    from benchmark.models import load_backend
    from benchmark.composition import compose

    if find_spec("llama_cpp") is None:
        pytest.skip('llama-cpp-python is not installed (pip install -e ".[llama-cpp]")')
    return load_backend(compose([*LLAMA, "task=diasafety"], keep=False).model, allow_remote_code=False)


CHAT = [[{"role": "user", "content": f"Name one colour of a {thing}."}] for thing in ("cat", "rose", "car")]


@needs_llama
def test_the_prompt_is_the_gguf_chat_template_as_transformers_renders_it(backend, smollm2):
    from transformers import AutoTokenizer

    from benchmark.composition import compose

    cfg = compose([f"model={SMOLLM2}", "task=diasafety"], keep=False).model
    tok = AutoTokenizer.from_pretrained(smollm2, gguf_file=cfg.gguf_file)
    for messages in CHAT:
        expected = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        assert backend.context_text(messages) == expected
        assert backend._encode(expected) == tok(expected, add_special_tokens=True)["input_ids"]


@needs_llama
def test_greedy_answers_do_not_depend_on_the_order_or_the_prompt_before(backend):
    greedy = {"max_new_tokens": 12, "do_sample": False}
    forward = backend.generate(CHAT, greedy)
    backward = backend.generate(CHAT[::-1], greedy)[::-1]
    assert forward == backward and all(any(c.isalpha() for c in a) for a in forward)


@needs_llama
def test_sampled_answers_follow_their_own_seeds(backend):
    sampled = {"max_new_tokens": 12, "do_sample": True, "temperature": 1.0, "top_p": 1.0}
    first = backend.generate(CHAT, sampled, seeds=[1, 2, 3])
    again = backend.generate(CHAT[::-1], sampled, seeds=[3, 2, 1])[::-1]
    assert first == again
    others = [backend.generate(CHAT[:1], sampled, seeds=[s])[0] for s in range(4, 8)]
    assert len(set(others)) > 1  # the seed decides the draws
    with pytest.raises(ValueError, match="one seed per request"):
        backend.generate(CHAT, sampled)


@needs_llama
def test_stop_strings_cut_the_answer_before_them(backend):
    text = backend.generate(CHAT[:1], {"max_new_tokens": 24, "do_sample": False})[0]
    word = next(w for w in text.split() if len(w) > 2)
    cut = backend.generate(CHAT[:1], {"max_new_tokens": 24, "do_sample": False, "until": [word]})[0]
    assert cut == text.split(word)[0]


@needs_llama
def test_log_likelihoods_equal_a_full_pass_whatever_the_cache_holds(backend, smollm2):
    import numpy as np
    from llama_cpp import Llama

    pairs = [(CHAT[0], "Black"), (CHAT[0], "Purple"), (CHAT[1], "Red"), (CHAT[0], "Black")]
    got = backend.loglikelihood(pairs)
    assert got[0] == pytest.approx(got[3], abs=1e-4) and all(v < 0 for v in got)
    full = Llama(model_path=str(next(smollm2.glob("*.gguf"))), logits_all=True, n_ctx=512, verbose=False,
                 n_threads=backend.llm.n_threads)
    for (messages, continuation), value in zip(pairs, got):
        context = backend.context_text(messages)
        head, whole = backend._encode(context), backend._encode(context + " " + continuation)
        full.reset()
        full.eval(whole)
        logits = np.array(full.scores[: len(whole)], dtype=np.float64)
        logp = logits - logits.max(-1, keepdims=True)
        logp -= np.log(np.exp(logp).sum(-1, keepdims=True))
        expected = sum(logp[i - 1, whole[i]] for i in range(len(head), len(whole)))
        assert value == pytest.approx(expected, abs=2e-2)


@needs_llama
def test_hidden_states_do_not_depend_on_the_order_the_prefix_or_the_text_before(backend):
    import numpy as np

    texts = [backend.context_text(m) for m in CHAT]
    prefix = texts[0][: texts[0].rfind("Name")]
    assert all(t.startswith(prefix) for t in texts) and prefix
    forward = backend.hidden_states(texts, prefix)
    backward = backend.hidden_states(texts[::-1], prefix)[::-1]
    alone = np.stack([backend.hidden_states([t])[0] for t in texts])  # each evaluated whole, no prefix kept
    assert forward.shape == (3, backend.llm.n_embd()) and np.array_equal(forward, backward)
    assert np.allclose(forward, alone, atol=1e-3 * np.abs(alone).max())
    assert not np.allclose(forward[0], forward[1])  # each prompt its own state
    # a text that does not start with the prefix is read whole, and the prefix kept for the next
    other = backend.hidden_states([texts[1], "Something else entirely.", texts[2]], prefix)
    assert np.array_equal(other[[0, 2]], forward[1:])


@needs_llama
def test_a_run_on_llama_cpp_counts_tokens_caches_and_resumes(compose, smollm2, data_root, tmp_path):
    from benchmark.run.runner import run

    overrides = (*LLAMA, "task=diasafety", "limit=3", f"cache_dir={tmp_path / 'cache'}")
    card, path = run(compose(*overrides, f"output_dir={tmp_path / 'a'}"))
    assert card["run"]["failed"] == 0 and card["run"]["model_calls"] == 3
    assert card["model"]["config"]["backend"] == "llama-cpp"
    assert card["run"]["tokens"]["model"]["prompt"] > 3 * 200  # the taxonomy prompt, counted by the GGUF's tokenizer
    samples = [json.loads(x) for x in (path.parent / "samples.jsonl").read_text().splitlines()]
    assert all(any(c.isalpha() for c in s["output"]) for s in samples)
    again, _ = run(compose(*overrides, f"output_dir={tmp_path / 'b'}"))
    assert again["run"]["model_calls"] == 0 and again["run"]["cache_hits"] == 3
    assert again["metrics"] == card["metrics"]


QWEN_15B = "qwen2.5-coder-1.5b-instruct"


@pytest.fixture(scope="module")
def qwen_15b(weights_cache):
    """Qwen2.5-Coder-1.5B-Instruct's GGUF, joined from its 22 pip packages and checked against the pinned sha256."""
    from benchmark.models.weights import PiecesMissing, is_weights_piece, pieces
    from benchmark.composition import compose

    if find_spec("llama_cpp") is None:
        pytest.skip('llama-cpp-python is not installed (pip install -e ".[llama-cpp]")')
    cfg = compose([f"model={QWEN_15B}"], keep=False).model
    found = pieces(cfg.name, list(cfg.split_weights.packages), is_weights_piece)
    if isinstance(found, PiecesMissing):
        pytest.skip(f"Qwen2.5-Coder-1.5B-Instruct's weights are not installed here: {found.install}")
    return cfg


def test_qwen_15b_answers_korean_conversations_on_llama_cpp_from_its_checked_pieces(compose, qwen_15b, data_root):
    from benchmark.run.runner import run

    card, path = run(compose(f"model={QWEN_15B}", "task=ricota", "limit=2"))
    assert card["run"]["failed"] == 0 and card["model"]["config"]["backend"] == "llama-cpp"
    assert card["model"]["weights"]["files"] == [{"name": "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
                                                   "size": 1117320768, "sha256": qwen_15b.split_weights.sha256}]
    for s in (json.loads(x) for x in (path.parent / "samples.jsonl").read_text().splitlines()):
        assert json.loads(s["output"]).keys() == {"conversation_type", "test_purpose"}


def test_a_card_of_a_model_on_llama_cpp_is_a_language_models_row():
    from benchmark.submissions.summary import model_kind

    assert model_kind("llama-cpp") == model_kind("hf") == "LLM"
