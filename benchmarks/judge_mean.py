"""Two trained judges of the same set as one: the mean of their probabilities (one vote per judge, as a judge of
members on two encoders votes), its threshold the F1-best on the set's validation rows, beside each judge alone.
Validation figures only, unless --test: then each judge's and the mean's accuracy on the set's test rows too (read a
test split once per candidate, after choosing on validation).

    git archive 1927b90 judges/reply-harm | tar -x -C checkpoints/minilm    # reply-harm on all-MiniLM-L6-v2
    python benchmarks/judge_mean.py judges/reply-harm checkpoints/minilm/judges/reply-harm [--test]
"""

from __future__ import annotations

import argparse
import os

import numpy as np

from benchmark.judge.evaluate import test_rows
from benchmark.judge.train import best_threshold, figures, labelled
from benchmark.judging.labelled import validation_sets
from benchmark.models.classifier import Classifier


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("judges", nargs=2, help="two folders a training of the same set wrote")
    parser.add_argument("--data-root", default=os.environ.get("BENCHMARK_DATA_ROOT", "../shared/data"))
    parser.add_argument("--test", action="store_true", help="also read the set's test rows")
    args = parser.parse_args()
    judges = [Classifier(j) for j in args.judges]
    made = [(j.manifest["name"], j.manifest["set"]) for j in judges]
    if made[0] != made[1]:
        raise SystemExit(f"{args.judges[0]} is {made[0]}, {args.judges[1]} {made[1]}: not one judge of one set")
    vs = {s.name: s for s in validation_sets()}[made[0][1]]
    val = labelled(vs, args.data_root).val
    gold = np.array([e.label for e in val])
    inputs = [{"context": e.context, "response": e.response} for e in val]
    probs = [j.probabilities(inputs) for j in judges]
    rows = [(folder, p, j.threshold) for folder, p, j in zip(args.judges, probs, judges)]
    mean = np.mean(probs, axis=0)
    rows.append(("mean of the two", mean, best_threshold(gold, mean)))
    if args.test:
        test_in, test_gold, _, _ = test_rows(vs, args.data_root)
        test = [j.probabilities(test_in) for j in judges]
        test.append(np.mean(test, axis=0))
    print(f"{vs.name}: {len(val)} validation rows ({int(gold.sum())} unsafe)"
          + (f", {len(test_gold)} test rows" if args.test else ""))
    print(f"{'judge':48} {'threshold':>9} {'val AUPRC':>9} {'val F1':>7} {'val accuracy':>12}"
          + (f" {'test accuracy':>14}" if args.test else ""))
    for i, (name, p, threshold) in enumerate(rows):
        f = figures(gold, p, threshold)
        accuracy = np.mean((p >= threshold) == gold)
        line = f"{name:48} {threshold:>9.4f} {f['auprc']:>9.4f} {f['f1']:>7.4f} {accuracy:>12.4f}"
        if args.test:
            right = int(((test[i] >= threshold) == test_gold).sum())
            line += f" {right / len(test_gold):>8.4f} ({right})"
        print(line)


if __name__ == "__main__":
    main()
