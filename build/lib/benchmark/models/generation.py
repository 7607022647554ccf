"""Batched generation for a local transformers causal LM (backend `hf`), faster on a CPU than generating each
batch from scratch, and reproducible per request when it samples.

- **Shared prefix, computed once.** A task's prompts mostly start with the same tokens (a system prompt, the label
  taxonomy). Their key/value cache is computed once per distinct prefix and copied into every batch, so only each
  prompt's own tail is prefilled (what vLLM calls automatic prefix caching). Each batch is laid out as
  `[shared prefix][padding][own tail]` with the padding masked out; positions follow the attention mask, so every
  tail sits right after the prefix as it would without padding.
- **Length-sorted batches** of `batch_size` tails: little padding.
- **Sampling seeded per request.** Each sampled request draws its tokens from its own random generator, seeded by
  the run's seed, the sample's number and the prompt, so its answer does not depend on which other requests
  shared its batch or on their order. A verifier who re-runs a few records gets the same samples.

Stop strings and the end-of-turn token end a generation as in lm-eval's `generate_until`: generation stops at
either, and the text is cut before the first stop string.
"""

from __future__ import annotations

import copy
import hashlib

MIN_SHARED_PREFIX = 8  # tokens; below this, copying a cache costs more than it saves


def _cache_keyword() -> str:
    """transformers 5.24 renamed `past_key_values` to `cache` (the old name still works, with a warning)."""
    import transformers
    from packaging.version import Version

    return "cache" if Version(transformers.__version__) >= Version("5.24") else "past_key_values"


def request_seed(seed: int, prompt: str) -> int:
    """A request's own sampling seed: the same prompt and seed always give the same draws."""
    digest = hashlib.sha256(f"{seed}\0{prompt}".encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "little") & (2**63 - 1)


def shared_prefix(sequences: list[list[int]]) -> int:
    """Length of the longest token prefix all sequences share, leaving each at least one token of its own."""
    if not sequences:
        return 0
    first = sequences[0]
    n = min(len(s) for s in sequences) - 1
    for s in sequences[1:]:
        i = 0
        while i < n and s[i] == first[i]:
            i += 1
        n = i
    return max(n, 0)


class SeededSampler:
    """A logits processor that samples each row with its own generator (temperature, top-k, top-p as
    transformers' warpers apply them) and leaves only the drawn token possible, so greedy decoding emits it."""

    def __init__(self, seeds: list[int], temperature: float, top_p: float, top_k: int | None):
        import torch
        from transformers import LogitsProcessorList, TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper

        self.generators = [torch.Generator().manual_seed(s) for s in seeds]
        warpers = [TemperatureLogitsWarper(temperature)]
        if top_k:
            warpers.append(TopKLogitsWarper(top_k))
        if top_p < 1.0:
            warpers.append(TopPLogitsWarper(top_p))
        self.warpers = LogitsProcessorList(warpers)

    def __call__(self, input_ids, scores):
        import torch

        probs = torch.softmax(self.warpers(input_ids, scores).float(), dim=-1)
        cumulative = probs.cumsum(dim=-1)
        draws = torch.stack([torch.rand((), generator=g) for g in self.generators]) * cumulative[:, -1]
        chosen = torch.searchsorted(cumulative, draws[:, None]).clamp_(max=scores.shape[-1] - 1)
        out = torch.full_like(scores, float("-inf"))
        out.scatter_(1, chosen, 0.0)
        return out


class PrefixCachedGenerator:
    def __init__(self, model, tokenizer, batch_size: int, max_length: int):
        self.model, self.tok = model, tokenizer
        self.batch_size = max(1, int(batch_size))
        self.max_length = max_length
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        self._prefix: tuple[tuple[int, ...], object] | None = None  # the last shared prefix and its cache

    def _prefix_cache(self, ids: list[int]):
        import torch

        key = tuple(ids)
        if self._prefix is None or self._prefix[0] != key:
            with torch.inference_mode():
                out = self.model(torch.tensor([ids], device=self.model.device), use_cache=True)
            self._prefix = (key, out[_cache_keyword()])
        return self._prefix[1]

    def generate(self, encoded: list[list[int]], generation: dict, seeds: list[int] | None = None) -> list[str]:
        """One answer per encoded prompt. `seeds` (one per prompt) are required when generation samples."""
        import torch

        max_new = int(generation["max_new_tokens"])
        room = self.max_length - max_new
        if room < 1:
            raise ValueError(f"max_new_tokens={max_new} leaves no room for a prompt in {self.max_length} tokens")
        encoded = [ids[-room:] for ids in encoded]  # as lm-eval: a prompt too long loses its start
        sampling = bool(generation.get("do_sample")) and float(generation.get("temperature") or 0) > 0
        if sampling and (seeds is None or len(seeds) != len(encoded)):
            raise ValueError("sampled generation needs one seed per request")
        until = [s for s in generation.get("until") or [] if s]
        p = shared_prefix(encoded)
        prefix = encoded[0][:p] if p >= MIN_SHARED_PREFIX else []
        order = sorted(range(len(encoded)), key=lambda i: -len(encoded[i]))
        answers: list[str] = [""] * len(encoded)
        for start in range(0, len(order), self.batch_size):
            rows = order[start : start + self.batch_size]
            tails = [encoded[i][len(prefix):] for i in rows]
            width = max(len(t) for t in tails)
            ids = [prefix + [self.pad_id] * (width - len(t)) + t for t in tails]
            mask = [[1] * len(prefix) + [0] * (width - len(t)) + [1] * len(t) for t in tails]
            kwargs = dict(max_new_tokens=max_new, do_sample=False, pad_token_id=self.pad_id)
            if until:
                kwargs.update(stop_strings=until, tokenizer=self.tok)
            if sampling:
                from transformers import LogitsProcessorList

                kwargs["logits_processor"] = LogitsProcessorList([SeededSampler(
                    [seeds[i] for i in rows], float(generation["temperature"]),
                    float(generation.get("top_p") or 1.0), generation.get("top_k"))])
            if prefix:
                cache = copy.deepcopy(self._prefix_cache(prefix))
                cache.batch_repeat_interleave(len(rows))
                kwargs[_cache_keyword()] = cache
            device = self.model.device
            with torch.inference_mode():
                out = self.model.generate(input_ids=torch.tensor(ids, device=device),
                                          attention_mask=torch.tensor(mask, device=device), **kwargs)
            for i, row in zip(rows, out[:, len(ids[0]):].tolist()):
                text = self.tok.decode(row, skip_special_tokens=True)
                for stop in until:
                    text = text.split(stop)[0]
                answers[i] = text
        return answers
