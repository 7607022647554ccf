"""Backend `llama-cpp`: GGUF weights run as they are by llama.cpp (llama-cpp-python, in this process), quantised, in
about a quarter of the memory of `hf`'s dequantised float32 copy. Installed with the extra: pip install -e ".[llama-cpp]".

It reads the same prompt as `hf` (the GGUF's own chat template, rendered by the same Jinja rules as transformers',
the tokens lm-eval would give), so the two engines' answers can be compared one for one (benchmarks/engines.py).

- **Prefix reuse.** llama.cpp keeps the key/value cache of the last prompt: the next prompt evaluates only the
  tokens after the prefix it shares with it (a task's system prompt and instructions), one prompt at a time.
- **Sampling seeded per request** as `hf` seeds it (generation.request_seed), drawn by llama.cpp's own sampler
  (top-k, top-p, then temperature: llama.cpp's order, not transformers'), so sampled answers differ from `hf`'s
  but not between runs. Greedy answers are the argmax at every step on both engines.
- **Log-likelihoods** token by token over the continuation after one pass over the prompt (its cache reused), as
  lm-eval splits a context and its continuation.

Options under `model.args` go to llama_cpp.Llama (n_threads, n_batch, flash_attn …); `n_threads` defaults to the
cores this process may use, `n_ctx` to model.max_length or the model's trained context up to MAX_DEFAULT_CONTEXT.
"""

from __future__ import annotations

import os
import weakref
from pathlib import Path

from .. import BenchmarkError
from .base import WEIGHTS_FIELDS, Reach
from .generation import request_seed
from .chat import prompt_text
from .usage import counted
from .weights import FromWeights, check_gguf_file, locate
from .registry import register_backend

MIN_TAIL = 2  # prompt tokens evaluated anew after a reused prefix (LlamaCpp._keep_a_tail)
MAX_DEFAULT_CONTEXT = 8192  # llama.cpp allocates the whole key/value cache at load: 32k tokens cost ~1 GB at 1.5B
MISSING = ("model {name}: backend llama-cpp needs llama-cpp-python, which is not installed here: "
           'pip install -c constraints.txt -e ".[llama-cpp]" (it builds llama.cpp from source: about 20 minutes on '
           "one core), or run this model with model.backend=hf")
# llama.cpp's AMX kernels (compiled in where the build machine's CPU has AMX, as -march=native does) crash on K-quant
# weights (segfault in ggml_backend_amx_mul_mat: llama.cpp issue 20824, seen here with Qwen2.5-Coder's Q4_K_M) and
# give wrong results on Q4_0/Q4_1 (llama.cpp PR 16315): a number from such a build cannot be trusted
AMX_BUILD = ("model {name}: this llama-cpp-python was built with llama.cpp's AMX kernels (the CPU it was built on has "
             "AMX), which crash on K-quant weights and compute Q4_0/Q4_1 wrongly; rebuild it without them, naming "
             "the instruction sets instead of -march=native: CMAKE_ARGS=\"-DGGML_NATIVE=OFF -DGGML_AVX2=ON "
             "-DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=ON\" pip install --force-reinstall --no-cache-dir --no-deps "
             "llama-cpp-python, or run this model with model.backend=hf")


def gguf_path(cfg) -> Path:
    """The GGUF file the config names: joined from its pieces, in a local folder or pip package, or the hub's (from
    the hub cache when offline)."""
    if not cfg.gguf_file:
        raise BenchmarkError(f"model {cfg.name}: backend llama-cpp reads GGUF weights: model.gguf_file names the "
                             "file inside model.pretrained")
    check_gguf_file(cfg)
    if not cfg.pretrained and getattr(cfg, "split_weights", None) is None:
        raise BenchmarkError(f"model {cfg.name}: backend llama-cpp needs model.pretrained (a hub id or a folder)")
    folder = Path(locate(cfg)).expanduser()
    if folder.is_dir():
        path = folder / cfg.gguf_file
        if not path.is_file():
            raise BenchmarkError(f"model {cfg.name}: no file {cfg.gguf_file} in {folder}")
        return path
    from huggingface_hub import hf_hub_download

    try:
        return Path(hf_hub_download(cfg.pretrained, cfg.gguf_file, revision=cfg.revision))
    except Exception as e:  # offline and not in the hub cache, an unknown id
        raise BenchmarkError(f"model {cfg.name}: could not load {cfg.pretrained}/{cfg.gguf_file}: "
                             f"{str(e).splitlines()[0]}") from None


def cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


@register_backend("llama-cpp")
class LlamaCpp(FromWeights):
    model_kind = "LLM"
    fields = WEIGHTS_FIELDS  # dtype and device: read once model.backend=hf switches the engine
    operations = frozenset({"generate", "loglikelihood", "overflow", "hidden_states"})
    requests_go = Reach.LOCAL
    reads_gguf = True

    def __init__(self, cfg, data_root: str | None = None):
        try:
            from llama_cpp import Llama, llama_print_system_info
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter
        except ImportError:
            raise BenchmarkError(MISSING.format(name=cfg.name)) from None
        if b"AMX_INT8 = 1" in llama_print_system_info():
            raise BenchmarkError(AMX_BUILD.format(name=cfg.name))
        self.cfg = cfg
        path = gguf_path(cfg)
        args = dict(cfg.args or {})
        args.setdefault("n_threads", cores())
        args.setdefault("verbose", False)
        try:
            args.setdefault("n_ctx", cfg.max_length or MAX_DEFAULT_CONTEXT)
            self.llm = Llama(model_path=str(path), **args)
            trained = self.llm._model.n_ctx_train()
            if not cfg.max_length and "n_ctx" not in (cfg.args or {}) and 0 < trained < args["n_ctx"]:
                self.llm.close()  # a model trained on a shorter context gets that context (a second, mapped, load)
                self.llm = Llama(model_path=str(path), **{**args, "n_ctx": trained})
        except (ValueError, RuntimeError, TypeError) as e:  # not a GGUF llama.cpp reads, an unknown argument
            raise BenchmarkError(f"model {cfg.name}: llama.cpp cannot load {path}: {e}") from None
        weakref.finalize(self, self.llm.close)  # before the interpreter's teardown, which llama-cpp-python's own trips on
        meta = self.llm.metadata
        template = meta.get("tokenizer.chat_template")
        if cfg.chat_template and not template:
            raise BenchmarkError(f"model {cfg.name}: {path.name} holds no chat template "
                                 "(tokenizer.chat_template); set model.chat_template=false to send the bare messages")
        self._embedding = None  # the embedding-mode context hidden_states reads, made on first use
        self._bos = self._text(self.llm.token_bos())
        self._format = Jinja2ChatFormatter(template, self._text(self.llm.token_eos()), self._bos) if template else None

    def _text(self, token: int) -> str:
        return self.llm._model.token_get_text(token) if token != -1 else ""

    def context_text(self, messages: list[dict]) -> str:
        def templated(msgs, add_generation_prompt):
            return self._format(messages=msgs).prompt

        return prompt_text(self.cfg, messages, templated, self.cfg.chat_template)

    def _encode(self, text: str, bos: bool = True) -> list[int]:
        # as lm-eval: the vocabulary's own BOS rule, unless the template already wrote the BOS token
        add_bos = bos and not (self._bos and text.startswith(self._bos))
        return self.llm.tokenize(text.encode("utf-8"), add_bos=add_bos, special=True)

    def overflow(self, messages, max_new_tokens):
        return len(self._encode(self.context_text(messages))) + max_new_tokens - self.llm.n_ctx()

    def generate(self, conversations, generation, seeds=None):
        max_new = int(generation["max_new_tokens"])
        room = self.llm.n_ctx() - max_new
        if room < 1:
            raise BenchmarkError(f"model {self.cfg.name}: max_new_tokens={max_new} leaves no room for a prompt in "
                                 f"{self.llm.n_ctx()} tokens")
        sampling = bool(generation.get("do_sample")) and float(generation.get("temperature") or 0) > 0
        if sampling and (seeds is None or len(seeds) != len(conversations)):
            raise ValueError("sampled generation needs one seed per request")
        until = [s for s in generation.get("until") or [] if s]
        answers = []
        for i, messages in enumerate(conversations):
            context = self.context_text(messages)
            kwargs = dict(max_tokens=max_new, stop=until or None, min_p=0.0, repeat_penalty=1.0, temperature=0.0)
            if sampling:
                kwargs.update(temperature=float(generation["temperature"]), top_p=float(generation.get("top_p") or 1.0),
                              top_k=int(generation.get("top_k") or 0), seed=request_seed(seeds[i], context) & 0xFFFFFFFF)
            tokens = self._encode(context)[-room:]  # as hf: a prompt too long loses its start
            self._keep_a_tail(tokens)
            answers.append(self.llm.create_completion(tokens, **kwargs)["choices"][0]["text"])
        return answers

    def _keep_a_tail(self, tokens: list[int]) -> None:
        """Leave at least MIN_TAIL of the prompt's tokens to evaluate: llama.cpp computes a single token by another
        kernel than several (a vector product, not a matrix one), and its slightly different logits would make a
        prompt asked twice sample another answer the second time."""
        llm = self.llm
        cached = llm.input_ids[: llm.n_tokens]
        shared = 0
        for a, b in zip(cached, tokens):
            if a != b:
                break
            shared += 1
        if shared > len(tokens) - MIN_TAIL:
            llm.n_tokens = max(0, len(tokens) - MIN_TAIL)
            llm._ctx.kv_cache_seq_rm(-1, llm.n_tokens, -1)

    def loglikelihood(self, pairs):
        import numpy as np

        results = []
        for messages, continuation in pairs:
            context = self.context_text(messages)
            head = self._encode(context)
            whole = self._encode(context + " " + continuation)
            cut = len(head)
            while cut > 0 and whole[:cut] != head[:cut]:  # a merge across the seam: the continuation starts earlier
                cut -= 1
            results.append(self._continuation_logprob(whole[:cut], whole[cut:], np))
        return results

    def _continuation_logprob(self, head: list[int], tail: list[int], np) -> float:
        llm = self.llm
        if not tail:
            return 0.0
        if not head:
            head, tail = tail[:1], tail[1:]  # nothing to condition the first token on: it is not scored
            if not tail:
                return 0.0
        if len(head) + len(tail) > llm.n_ctx():
            raise BenchmarkError(f"model {self.cfg.name}: a log-likelihood request of {len(head) + len(tail)} "
                                 f"tokens exceeds the context of {llm.n_ctx()}")
        cached = list(llm.input_ids[: llm.n_tokens])
        keep = 0
        while keep < min(len(cached), len(head) - MIN_TAIL) and cached[keep] == head[keep]:
            keep += 1
        llm.n_tokens = keep  # eval drops the cache after it
        llm.eval(head[keep:])
        total = 0.0
        for i, token in enumerate(tail):
            logits = np.ctypeslib.as_array(llm._ctx.get_logits_ith(-1), shape=(llm.n_vocab(),)).astype(np.float64)
            top = logits.max()
            total += float(logits[token] - top - np.log(np.exp(logits - top).sum()))
            if i < len(tail) - 1:
                llm.eval([token])
        llm._requires_eval = True  # its sampler's logits are no longer the prompt's
        return total

    def hidden_states(self, texts: list[str], prefix: str = ""):
        """(n, hidden size) float32: the model's last hidden state (after its final norm: what its output head reads)
        at each text's last token. The texts are prompts as the model reads them (context_text). Each is evaluated
        from the end of `prefix`, the text all of them start with, whose cache is kept: a text's state does not
        depend on which text came before it."""
        import numpy as np

        llm = self._embedder()
        head = self._encode(prefix) if prefix else []
        if head and (llm.n_tokens < len(head) or llm.input_ids[: len(head)].tolist() != head):
            self._eval_embedding(head, 0)
        out = []
        for text in texts:
            tokens = self._encode(text)
            start = len(head) if tokens[: len(head)] == head and len(tokens) - len(head) >= MIN_TAIL else 0
            if len(tokens) > llm.n_ctx():
                raise BenchmarkError(f"model {self.cfg.name}: a prompt of {len(tokens)} tokens exceeds the context "
                                     f"of {llm.n_ctx()}")
            out.append(self._eval_embedding(tokens, start))
            if start == 0 and head:  # a text that does not start with the prefix: the prefix's cache is gone
                self._eval_embedding(head, 0)
        return np.stack(out) if out else np.zeros((0, llm.n_embd()), dtype=np.float32)

    def count_tokens(self, text: str) -> int:
        """The tokens of a prompt text (context_text) as the model reads it."""
        return len(self._encode(text))

    def _embedder(self):
        """The same weights in llama.cpp's embedding mode (a second context, made on first use): it returns the last
        token's hidden state instead of logits."""
        if self._embedding is None:
            import llama_cpp

            args = {**dict(self.cfg.args or {}), "n_threads": self.llm.n_threads, "n_ctx": self.llm.n_ctx(),
                    "verbose": False, "embedding": True, "pooling_type": llama_cpp.LLAMA_POOLING_TYPE_LAST}
            args["n_batch"] = args["n_ubatch"] = args["n_ctx"]  # a prompt is evaluated in one batch
            self._embedding = llama_cpp.Llama(model_path=self.llm.model_path, **args)
            weakref.finalize(self, self._embedding.close)
        return self._embedding

    def _eval_embedding(self, tokens: list[int], start: int):
        import llama_cpp
        import numpy as np

        llm = self._embedding
        llm._ctx.kv_cache_seq_rm(-1, start, -1)
        batch = llm._batch
        batch.reset()
        for i, token in enumerate(tokens[start:]):
            batch.batch.token[i] = token
            batch.batch.pos[i] = start + i
            batch.batch.seq_id[i][0] = 0
            batch.batch.n_seq_id[i] = 1
            batch.batch.logits[i] = True  # embedding mode outputs every token (llama.cpp insists)
        batch.batch.n_tokens = len(tokens) - start
        llm._ctx.decode(batch)
        llm.input_ids[: len(tokens)] = tokens
        llm.n_tokens = len(tokens)
        state = llama_cpp.llama_get_embeddings_seq(llm._ctx.ctx, 0)
        return np.array(state[: llm.n_embd()], dtype=np.float32)

    def usage(self, requests, answers):
        """Counted with the GGUF's own tokenizer: the prompt as the model reads it, the answer without specials."""
        found = counted(requests, answers, lambda r: len(self._encode(self.context_text(r.messages))),
                        lambda text: len(self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=False)))
        return super().usage(requests, answers) if found is None else found
