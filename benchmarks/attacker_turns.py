"""What an attacker model writes in a dialogue attack, read from published cards' samples, side by side.

    python benchmarks/attacker_turns.py submissions/smollm2-135m-instruct/toxicchat.json \
        submissions/smollm2-135m-instruct/toxicchat_qwen_attacker.json

For each card, over the attacker's own turns (turn 2 on: turn 1 is the seed): how many there are, their mean length
in words, the share holding one of the task's refusal phrases (the attacker declining its role), the share that
echo the target's previous reply (at least half of the turn's word trigrams appear in that reply), and the share
that end with a question. Then the activation rate beside the share of conversations activated at turn 1, where the
seed alone triggered the flag and the attacker had not written a word. Counts only; read the transcripts before trusting them.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

ECHO_SHARE = 0.5  # a turn whose trigrams are at least half the target's is restating it


@dataclass
class AttackerFigures:
    card: str
    conversations: int
    attacker_turns: int
    mean_words: float
    refusing: float
    echoing: float
    asking: float
    activated: float
    activated_at_turn_1: float


def trigrams(text: str) -> set[tuple[str, ...]]:
    words = re.findall(r"\w+", text.lower())
    return {tuple(words[i:i + 3]) for i in range(len(words) - 2)}


def echoes(turn: str, previous_reply: str) -> bool:
    mine = trigrams(turn)
    return bool(mine) and len(mine & trigrams(previous_reply)) / len(mine) >= ECHO_SHARE


def figures(card_path: Path) -> AttackerFigures:
    from benchmark.composition import compose
    from benchmark.kinds.common import RefusalPhrases

    card = json.loads(card_path.read_text())
    task = compose([f"task={card['task']['name']}"]).task
    refusal = RefusalPhrases(list(task.dialogue.refusal_phrases))
    samples_path = card_path.with_suffix(".samples.jsonl.gz")
    with gzip.open(samples_path, "rt") as f:
        samples = [json.loads(line) for line in f]
    written = [(t["attacker"], s["turns"][i - 1]["target"])
               for s in samples for i, t in enumerate(s["turns"]) if i > 0]
    n = len(written) or 1
    activated = [s["activated_turn"] for s in samples if s["activated_turn"] is not None]
    return AttackerFigures(
        card=str(card_path), conversations=len(samples), attacker_turns=len(written),
        mean_words=sum(len(a.split()) for a, _ in written) / n,
        refusing=sum(bool(refusal(a)) for a, _ in written) / n,
        echoing=sum(echoes(a, reply) for a, reply in written) / n,
        asking=sum(a.rstrip().endswith("?") for a, _ in written) / n,
        activated=len(activated) / len(samples),
        activated_at_turn_1=sum(t == 1 for t in activated) / len(samples))


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("cards", nargs="+", type=Path, help="published dialogue-attack cards (their samples beside them)")
    rows = [figures(path) for path in p.parse_args().cards]
    print(f"{'card':<66} {'conv':>5} {'turns':>6} {'words':>6} {'refuse':>7} {'echo':>6} {'ask':>6} "
          f"{'activ':>6} {'at t1':>6}")
    for r in rows:
        print(f"{r.card:<66} {r.conversations:>5} {r.attacker_turns:>6} {r.mean_words:>6.1f} {100 * r.refusing:>6.1f}% "
              f"{100 * r.echoing:>5.1f}% {100 * r.asking:>5.1f}% {100 * r.activated:>5.1f}% "
              f"{100 * r.activated_at_turn_1:>5.1f}%")


if __name__ == "__main__":
    main()
