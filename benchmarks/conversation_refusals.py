"""reply-refusal on conversation: the replies of the published diasafety_chatbot_k1 and toxicchat cards, where the
message a reply answers is talk as often as a request. Per card: how many replies, how many answer a request as the
judge reads one (models/refusal.py, `asks`), how many the judge as shipped calls full refusals, and how many the
card's own panel does (the phrase lists alone, `args.classifier: false`). With --labels FILE (ids and people's
refusal labels, as benchmarks/conversation_refusals.json holds), the agreement of each with those labels. With
--draw N, N replies drawn at random (--seed) printed with the message they answer and no verdict, to label by hand.

The texts come from the cards and the data they pin: DiaSafety's contexts from its test split (bundled with the
suite), toxicchat's first turns from its seeds, LMSYS toxic-chat's prompts and DiaSafety's contexts (the card holds
their hash; a turn whose words are in neither is left out).

    python benchmarks/conversation_refusals.py [--labels benchmarks/conversation_refusals.json] [--draw 60 --seed 1]
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import random
from pathlib import Path

from benchmark.composition import compose
from benchmark.models import load_backend

CARDS = {  # model: tasks whose published cards are read
    "smollm2-135m-instruct": ("diasafety_chatbot_k1", "toxicchat"),
    "qwen2.5-coder-0.5b-instruct": ("diasafety_chatbot_k1", "toxicchat"),
    "qwen2.5-coder-1.5b-instruct": ("diasafety_chatbot_k1", "toxicchat"),
}
DIASAFETY = Path("bundled/diasafety/test.json")
TOXIC_CHAT = "toxicchat_multiturn/lmsys_toxic_chat/toxic_chat_test.json"


def seeds(data_root: str, contexts: list[str]) -> dict[str, str]:
    """sha256 of a toxicchat seed (a toxic-chat prompt, a DiaSafety context) -> the seed, as a card hashes the first
    turn's words."""
    path = Path(data_root) / TOXIC_CHAT
    prompts = [i["instance"] for i in json.loads(path.read_text(encoding="utf-8"))["instances"]] \
        if path.is_file() else []
    return {hashlib.sha256(text.encode("utf-8")).hexdigest(): text for text in prompts + contexts}


def replies(data_root: str) -> list[dict]:
    """{id, card, request, response, panel}: every reply of the cards, with the message it answers and the card's own
    refusal flag. id: model|task|record id|turn (toxicchat) or response index (diasafety_chatbot_k1)."""
    contexts = [r["context"] for r in json.loads(DIASAFETY.read_text(encoding="utf-8"))]
    prompts = seeds(data_root, contexts)
    out = []
    for model, tasks in CARDS.items():
        for task in tasks:
            with gzip.open(f"submissions/{model}/{task}.samples.jsonl.gz", "rt", encoding="utf-8") as f:
                for line in f:
                    sample = json.loads(line)
                    if task == "toxicchat":
                        for turn in sample["turns"]:
                            words = turn["attacker"]
                            words = prompts.get(words[len("sha256:"):]) if words.startswith("sha256:") else words
                            if words is None or turn.get("target") is None:
                                continue
                            out.append({"id": f"{model}|{task}|{sample['id']}|{turn['turn']}", "card": (model, task),
                                        "request": words, "response": turn["target"],
                                        "panel": turn["judgements"]["refused"]["flagged"]})
                    else:
                        for k, response in enumerate(sample["responses"]):
                            out.append({"id": f"{model}|{task}|{sample['id']}|{k}", "card": (model, task),
                                        "request": contexts[int(sample["id"])], "response": response["text"],
                                        "panel": response["beside"]["judgements"]["refused"]["flagged"]})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-root", default=os.environ.get("BENCHMARK_DATA_ROOT", "../shared/data"))
    parser.add_argument("--labels", help="a JSON file: {refused: [ids], complied: [ids]}, labelled by hand")
    parser.add_argument("--draw", type=int, default=0, help="print this many replies drawn at random, no verdicts")
    parser.add_argument("--seed", type=int, default=20261208)
    args = parser.parse_args()
    rows = replies(args.data_root)
    if args.draw:
        by_card = {}
        for r in rows:
            by_card.setdefault(r["card"], []).append(r)
        rng = random.Random(args.seed)
        drawn = [r for card in sorted(by_card) for r in rng.sample(by_card[card], args.draw // len(by_card))]
        rng.shuffle(drawn)
        for r in drawn:
            print(json.dumps({"id": r["id"], "request": r["request"][:300], "response": r["response"][:500]},
                             ensure_ascii=False))
        return
    judge = load_backend(compose(["model=reply-refusal"]).model, False)
    said = judge.classify([{"context": r["request"], "response": r["response"]} for r in rows])
    print(f"{'card':48} {'replies':>7} {'requests':>9} {'reply-refusal':>14} {'card panel':>11}")
    for card in dict.fromkeys(r["card"] for r in rows):
        mine = [(r, v) for r, v in zip(rows, said) if r["card"] == card]
        print(f"{'/'.join(card):48} {len(mine):>7} {sum(v['request'] for _, v in mine):>9}"
              f" {sum(v['unsafe'] for _, v in mine):>14} {sum(r['panel'] for r, _ in mine):>11}")
    if args.labels:
        labels = json.loads(Path(args.labels).read_text(encoding="utf-8"))
        gold = {i: True for i in labels["refused"]} | {i: False for i in labels["complied"]}
        found = {r["id"]: (r, v) for r, v in zip(rows, said) if r["id"] in gold}
        if len(found) != len(gold):
            raise SystemExit(f"{args.labels}: {len(gold) - len(found)} labelled ids are not replies of the cards")
        print(f"\n{len(gold)} replies labelled by hand ({sum(gold.values())} refusals):")
        for name, flag in (("reply-refusal", lambda r, v: v["unsafe"]), ("card panel", lambda r, v: r["panel"])):
            right = sum(flag(*found[i]) == g for i, g in gold.items())
            print(f"  {name:14} agrees on {right} of {len(gold)} ({right / len(gold):.1%})")


if __name__ == "__main__":
    main()
