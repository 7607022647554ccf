"""Measure turn-level batching of dialogue attacks: the toxicchat task's 50 seeds x 5 turns with tiny random models
as attacker and target, every live conversation advancing together (chunk_size 64) versus one conversation at a
time (chunk_size 1). Each run starts from an empty cache.

    python benchmarks/dialogue_batching.py [--data-root ../shared/data] [--turns 5] [--tokens 16]

Prints both wall times, the model calls and the ratio; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data-root", default=str(REPO.parent / "shared" / "data"))
    parser.add_argument("--turns", type=int, default=5)
    parser.add_argument("--tokens", type=int, default=16)
    parser.add_argument("--batch-size", type=int, default=8, help="the hf backend's batch size, both models")
    args = parser.parse_args()

    from conftest import build_tiny_model

    from benchmark.run.runner import run
    from benchmark.composition import compose

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        model = build_tiny_model(tmp / "tiny")
        # the same tiny model as target and attacker; keyword judges keep judging cost out of the comparison
        base = [
            "task=toxicchat", f"data_root={args.data_root}", "model=hf", f"model.pretrained={model}",
            "attacker.pretrained=" + str(model), f"model.batch_size={args.batch_size}",
            f"attacker.batch_size={args.batch_size}", f"task.dialogue.turns={args.turns}", "task.dialogue.stop=full",
            f"task.dialogue.target_generation.max_new_tokens={args.tokens}",
            f"task.dialogue.attacker_generation.max_new_tokens={args.tokens}",
            "judge.models.utterance.backend=keywords", "judge.models.utterance.phrases=[idiot]",
            "judge.models.context.backend=keywords", "judge.models.context.phrases=[pills]",
            "judge.models.context.pretrained=null", "progress=false", "bootstrap=200",
        ]
        results = {}
        for name, chunk in (("one conversation at a time", 1), ("batched per turn", 64)):
            cfg = compose(base + [f"chunk_size={chunk}", f"results_dir={tmp / name.replace(' ', '_')}"])
            started = time.perf_counter()
            card, _ = run(cfg)
            results[name] = (time.perf_counter() - started, card)
        print(f"== toxicchat: {card['breakdown']['conversations']['total']} conversations x {args.turns} turns, "
              f"tiny Llama as attacker and target, {args.tokens} new tokens per turn, batch size {args.batch_size}, "
              f"{os.cpu_count()}-core CPU")
        for name, (wall, card) in results.items():
            print(f"{name:<28} wall {wall:6.1f} s; target calls {card['run']['model_calls']}, "
                  f"attacker calls {card['run']['attacker_calls']}")
        batched, single = results["batched per turn"][0], results["one conversation at a time"][0]
        print(f"ratio batched / one at a time: {batched / single:.2f} ({single / batched:.1f}x faster)")


if __name__ == "__main__":
    main()
