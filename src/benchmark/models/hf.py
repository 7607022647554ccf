"""`backend: hf`: transformers weights (or GGUF weights, dequantised on load) run on this machine, through lm-eval's
model, with the suite's prefix-caching generator (models/generation.py) and the model's hidden states for a probe."""

from __future__ import annotations

from .generation import PrefixCachedGenerator, request_seed
from .base import Reach
from .lmeval import LocalWeights
from .registry import register_backend


@register_backend("hf")
class HF(LocalWeights):
    operations = LocalWeights.operations | {"hidden_states"}
    requests_go = Reach.LOCAL
    reads_gguf = True

    def __init__(self, cfg, data_root: str | None = None):
        super().__init__(cfg, data_root)
        self._generator = None  # the prefix-caching generator, made on first use

    @classmethod
    def lm_kwargs(cls, cfg) -> dict:
        return {**super().lm_kwargs(cfg), "device": cfg.device}

    def generate(self, conversations, generation, seeds=None):
        """Sampled requests carry their own seeds (`seeds`): each request's own generator is seeded with it."""
        return self._translated(lambda: self._generate(conversations, generation, seeds))

    def _generate(self, conversations, generation, seeds):
        if self._generator is None:
            self._generator = PrefixCachedGenerator(self.lm.model, self.lm.tokenizer, self.cfg.batch_size,
                                                    self.lm.max_length)
        contexts = [self.context_text(m) for m in conversations]
        if seeds is not None:
            seeds = [request_seed(seed, context) for seed, context in zip(seeds, contexts)]
        return self._generator.generate([self.lm.tok_encode(c) for c in contexts], generation, seeds)

    def hidden_states(self, texts: list[str], prefix: str = ""):
        """(n, hidden size) float32, the model's last hidden state (after its final norm: what its output head reads)
        at each text's last token; the texts are prompts as the model reads them (context_text). Each is read whole,
        alone (no padding to shift it); `prefix` (what llama-cpp evaluates once) changes nothing here."""
        import numpy as np
        import torch

        model = self.lm.model
        out = []
        with torch.no_grad():
            for text in texts:
                ids = torch.tensor([self.lm.tok_encode(text)], device=model.device)
                state = self._translated(lambda: model.base_model(input_ids=ids).last_hidden_state)
                out.append(state[0, -1].float().cpu().numpy())
        return np.stack(out) if out else np.zeros((0, model.config.hidden_size), dtype=np.float32)
