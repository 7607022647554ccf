"""Recalling a published card's answers into this machine's response cache (`python -m benchmark.submit recall`), so
that a rebuild asks its models only what the card does not hold."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

from .. import BenchmarkError
from ..identity import sha256_json
from ..models.base import Backend, Reach
from ..models.cached import Failure
from ..models.registry import backend_class
from ..run.runner import POOL, plan, run
from .loading import load_folder
from .package import typed_card
from .samples import read_samples
from .verify import judge_role, rerun_config


STALE_MEASURED = re.compile(r"judges\[\d+\]\.measured\.")


class _Recalled(Backend):
    """A model whose answers are a card's recorded responses: (prompt hash, sample number) -> text."""

    operations = frozenset({"generate"})
    requests_go = Reach.LOCAL

    def __init__(self, answers: dict, seed: int, shape: str):
        self.answers, self.seed, self.answer_shape = answers, seed, shape

    def generate(self, conversations, generation, seeds=None):
        out = []
        for i, messages in enumerate(conversations):
            sample = seeds[i] - self.seed if seeds else 0  # the run's seed plus the sample's number
            text = self.answers.get((sha256_json(messages), sample))
            out.append(text if isinstance(text, str) else Failure("not on the card"))
        return out

    def usage(self, requests, answers):
        return [None] * len(requests)  # counted by the model's own tokenizer when a run reads them back


class _Unjudged(Backend):
    """A judge that flags nothing and labels nothing (an empty answer parses as no label; a classifier's label is
    None, so that a task's label rates, XSTest's, count none): a recall only fills the cache, so that every recorded
    turn is played whatever today's judges would say of it."""

    operations = frozenset({"generate", "classify"})
    requests_go = Reach.LOCAL
    answer_shape = "verdict-unlabelled"  # its own cache key: a stand-in's answers cached without a label stay unread

    def generate(self, conversations, generation, seeds=None):
        return [""] * len(conversations)

    def classify(self, inputs):
        return [{"unsafe": False, "score": 0.0, "label": None} for _ in inputs]

    def usage(self, requests, answers):
        return [None] * len(requests)


def recall(card_path: Path, data_root: str | None, cache_dir: Path) -> int:
    """A published card's answers put into this machine's response cache, keyed as its model config asks them: a
    rebuild of the card (submissions/reproduce.sh) then asks its models only what the card does not hold, and judges
    every answer with today's judges. The answers are as trustworthy as the card; verify re-runs a random sample of
    records live. Run it with the task as the card ran it (its version): the recalled run asks what the card's run
    asked. Returns the answers cached."""
    loaded = load_folder(card_path.parent, True, False, only=card_path, data_root=data_root)
    # figures that today's scoring computes otherwise are what a rebuild is for, the judges' figures and procedure
    # flags a re-measured validity record gives otherwise among them; any other problem stops the recall
    blocking = [p for p in loaded.rejected if not p.field.startswith(("metrics.", "breakdown.", "judging_validation."))
                and not STALE_MEASURED.match(p.field)]
    if blocking:
        raise BenchmarkError("the card does not validate; fix it before recalling its answers:\n  " +
                             "\n  ".join(map(str, blocking)))
    card = loaded.cards[0].record if loaded.cards else typed_card(card_path)[1]
    samples = read_samples(card_path.parent / card.samples.file)
    # the rebuild judges the answers; this run only puts them in the cache
    skipped = {"name": "recall-unjudged", "backend": "keywords", "phrases": ["\u0000"]}
    configs = {"model": card.model.config, **{judge_role(j.voter): skipped for j in card.judges or []},
               **({"attacker": card.attacker.config} if card.attacker is not None else {})}
    with tempfile.TemporaryDirectory(prefix="recall-") as tmp:
        cfg = rerun_config(card, configs, sorted(s["id"] for s in samples), Path(tmp), data_root, False)
        from omegaconf import open_dict

        with open_dict(cfg):
            cfg.cache_dir, cfg.judge_validity = str(cache_dir), False
        planned = plan(cfg, pin=False)
        answers = planned.kind.recorded_answers(planned.items, samples)
        recalled = _Recalled(answers, card.run.seed, backend_class(cfg.model).answer_shape)
        names = {cfg.model.name, *([cfg.attacker.name] if card.attacker is not None else [])}
        real_get = POOL.get
        POOL.get = lambda key, config, *a: (recalled if config.name in names else _Unjudged()
                                            if config.name == skipped["name"] else real_get(key, config, *a))
        try:
            run(cfg)
        finally:
            POOL.get, POOL.kept = real_get, {}
    return sum(isinstance(t, str) for t in answers.values())

