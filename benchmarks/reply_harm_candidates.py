"""reply-harm candidates beside the shipped judge, on what a candidate is chosen by (no test split is read):

- GPTFuzz's validation fifth (carved from its train split; each judge's training measured it there, judge.json):
  AUPRC, the threshold chosen on it and F1 at that threshold;
- XSTest's validation model (Mistral-7B-Instruct under a guardrail prompt, 450 replies, learnt from by no reply-harm):
  its replies to the 250 safe prompts flagged (none gives harmful content), and its full compliances with the unsafe
  contrast prompts found;
- conversation: the target turns of the published toxicchat cards of SmolLM2 and Qwen2.5-Coder-0.5B that answer an
  attacker's words (1,158 on today's cards, 1,124 before their rebuild with all-mpnet-base-v2; the first turn answers
  the data set's prompt, which a card holds only as a hash). No one labelled them; read by hand, the turns the
  shipped judge flags are mostly harmless, so a candidate that flags many more has learnt that a reply which goes
  along with its request is harmful (docs/judges.md). With --show N, N of the turns a candidate flags and the
  shipped judge does not, drawn at random, to read.

    python benchmarks/reply_harm_candidates.py checkpoints/reply-harm [more candidate folders] [--show 10]
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import os
import random
from pathlib import Path

import numpy as np

from benchmark.composition import compose
from benchmark.models import load_backend

SHIPPED = "judges/reply-harm"
CARDS = ["submissions/smollm2-135m-instruct/toxicchat.samples.jsonl.gz",
         "submissions/qwen2.5-coder-0.5b-instruct/toxicchat.samples.jsonl.gz"]
XSTEST_VAL = "xstest/model_completions/xstest_v2_completions_mistralguard.csv"


def conversation_turns() -> list[tuple[str, str]]:
    """(attacker's words, target's reply) of every target turn that answers an attacker's turn."""
    turns = []
    for card in CARDS:
        with gzip.open(card, "rt", encoding="utf-8") as f:
            for line in f:
                for turn in json.loads(line)["turns"]:
                    words = turn.get("attacker") or ""
                    if turn.get("target") and not words.startswith("sha256:"):
                        turns.append((words, turn["target"]))
    return turns


def xstest_validation(data_root: str) -> tuple[list[tuple[str, str]], np.ndarray, np.ndarray]:
    """The validation model's (prompt, reply) pairs, which prompts are safe, and which replies fully comply."""
    with open(Path(data_root) / XSTEST_VAL, encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    pairs = [(r["prompt"], r["completion"]) for r in rows]
    safe = np.array([not r["type"].startswith("contrast") for r in rows])
    complied = np.array([r["final_label"] == "1_full_compliance" for r in rows])
    return pairs, safe, complied


def flags(folder: str, pairs: list[tuple[str, str]]) -> np.ndarray:
    cfg = compose(["model=reply-harm", f"model.pretrained={folder}", "model.sha256=null"])
    judge = load_backend(cfg.model, False)
    return np.array([a["unsafe"] for a in judge.classify([{"context": c, "response": r} for c, r in pairs])])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("candidates", nargs="+", help="folders a reply-harm training wrote (checkpoints/…)")
    parser.add_argument("--data-root", default=os.environ.get("BENCHMARK_DATA_ROOT", "../shared/data"))
    parser.add_argument("--show", type=int, default=0, help="turns a candidate adds to the shipped judge's flags")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    turns = conversation_turns()
    xstest, safe, complied = xstest_validation(args.data_root)
    harmful = ~safe & complied
    print(f"GPTFuzz validation fifth; XSTest's validation model ({safe.sum()} safe prompts, {harmful.sum()} unsafe "
          f"ones fully complied with); {len(turns)} toxicchat target turns")
    print(f"{'judge':36} {'val AUPRC':>9} {'threshold':>9} {'val F1':>7} {'XSTest safe flagged':>20} "
          f"{'XSTest harmful found':>21} {'turns flagged':>14}")
    shipped_turns = None
    for folder in [SHIPPED, *args.candidates]:
        made = json.loads((Path(folder) / "judge.json").read_text())
        on_xstest, on_turns = flags(folder, xstest), flags(folder, turns)
        if folder == SHIPPED:
            shipped_turns = on_turns
        print(f"{folder:36} {made['val']['auprc']:>9.4f} {made['threshold']:>9.3f} {made['val']['f1']:>7.4f} "
              f"{int(on_xstest[safe].sum()):>20} {f'{int(on_xstest[harmful].sum())} of {harmful.sum()}':>21} "
              f"{int(on_turns.sum()):>14}")
        added = [t for t, new, old in zip(turns, on_turns, shipped_turns) if new and not old]
        for words, reply in random.Random(args.seed).sample(added, min(args.show, len(added))):
            print(f"    attacker: {words[:200]!r}\n    target:   {reply[:300]!r}")


if __name__ == "__main__":
    main()
