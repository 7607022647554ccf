"""A task's judging steps on DiaSafety's labelled *validation* pairs, to choose a judge (its model, its prompt) on
validation data before a card is judged by it; the task's own measurement, at run time, is on the test pairs.

    python benchmarks/question_judge.py [--task multijail] [--step harm] [--judge-model qwen2.5-coder-1.5b-instruct]
                                        [--prompt FILE] [--threshold T] [--n 200] [--seed 0] [--each-step]

Reads each pair as the task's attack.validation reads a test pair (multijail: the user's message as the request, the
chatbot's response as the reply) and runs the task's steps in order, as a run does; `--judge-model` puts another model
config in the step's place, and `--prompt` a question of its own (a file: the step's last message, with the task's
variables) in place of the task's. Prints how many pairs people label unsafe, how many the steps flag, sensitivity,
specificity and Youden's J (the task corrects its rate only from a J of its min_youden), and what each step answered;
asserts nothing. For a likelihood step, `--threshold` sets its threshold in place of the task's, and the script also
prints the area under the ROC curve of the step's score (its flagging label's log-likelihood less the best other's; a
pair an earlier step flags ranks above all) and the threshold with the best J on these pairs: the one to declare.
`--each-step` also runs each step alone on every pair and prints its figures and the pairs only it flags: whether a
step earns its place in the panel.
Judge answers go to the suite's response cache (results/.cache), so a rerun asks nothing twice.
"""

from __future__ import annotations

import argparse
import json
import os
import random
from collections import Counter
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--task", default="multijail")
    p.add_argument("--step", default="harm", help="the step whose model --judge-model replaces")
    p.add_argument("--judge-model", default=None, help="a model config (conf/model/) in the step's place")
    p.add_argument("--prompt", type=Path, default=None, help="a file: the step's question in place of the task's")
    p.add_argument("--threshold", type=float, default=None, help="a likelihood step's threshold in place of the task's")
    p.add_argument("--n", type=int, default=200, help="pairs drawn from the validation split (0: all)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--each-step", action="store_true",
                   help="also run each step alone on every pair: what each adds to the others")
    args = p.parse_args()

    from benchmark.cache import ResponseCache
    from benchmark.composition import compose
    from benchmark.judging.labelled import human_labels, validation_sets
    from benchmark.metrics import youden
    from benchmark.models import load_backend
    from benchmark.judging.panels import open_panel
    from benchmark.run.runner import plan
    from benchmark.templates import render

    overrides = [f"task={args.task}"]
    if args.judge_model:
        overrides.append(f"model@judge.models.{args.step}={args.judge_model}")
    cfg = compose(overrides)
    if args.prompt or args.threshold is not None:
        from omegaconf import open_dict

        step = next(s for s in cfg.task.attack.judges if s.name == args.step)
        with open_dict(cfg):
            if args.prompt:
                step.messages[-1].content = args.prompt.read_text(encoding="utf-8").strip()
            if args.threshold is not None:
                step.threshold = args.threshold
    run = plan(cfg)
    spec = run.kind.spec.validation
    if spec is None or spec.set != "diasafety":
        raise SystemExit(f"task {args.task} measures its judges on {getattr(spec, 'set', None)!r}, not on DiaSafety")
    rows = json.loads((Path(cfg.data_root) / "diasafety" / "val.json").read_text(encoding="utf-8"))
    if 0 < args.n < len(rows):
        rows = random.Random(args.seed).sample(rows, args.n)

    cache = ResponseCache(Path(cfg.cache_dir) / "responses.sqlite")
    panel = open_panel(run, cache, lambda j: load_backend(j, False, cfg.data_root))
    items = {(i, 0): {k: render(t, row, f"variables.{k}") for k, t in spec.variables.items()}
             for i, row in enumerate(rows)}
    errors: dict = {}
    found = panel.verdicts(run.kind.steps, items, run.kind.spec.tie, errors)
    if errors:
        raise SystemExit(f"{len(errors)} judge requests failed: {next(iter(errors.values()))}")

    labelled = next(vs for vs in validation_sets() if vs.name == spec.set)  # its human labels, as the test pairs'
    gold = human_labels(labelled, rows, f"labelled set {labelled.name}")
    flagged = [found[(i, 0)].step is not None for i in range(len(rows))]
    unsafe = sum(gold)
    sensitivity, specificity = youden(np.array(gold), np.array(flagged))
    print(f"task {args.task}, judges {', '.join(f'{k}: {j.name}' for k, j in run.judge_cfgs.items())}")
    print(f"DiaSafety val: {len(rows)} pairs, {unsafe} unsafe by people; flagged {sum(flagged)}")
    print(f"sensitivity {sensitivity:.3f}  specificity {specificity:.3f}  Youden's J {sensitivity + specificity - 1:.3f}"
          f"  (the task corrects from J {spec.min_youden})")
    for step in run.kind.steps:
        said = Counter(str(v.get("label", v.get("flagged"))) for i in range(len(rows))
                       for v in found[(i, 0)].judgements.get(step.name, {}).get("votes", {}).values())
        print(f"step {step.name}: " + ", ".join(f"{k} {n}" for k, n in said.most_common(8)))
        if step.type == "likelihood":
            sweep(step, [found[(i, 0)] for i in range(len(rows))], gold)
    if args.each_step:
        alone = {}
        for step in run.kind.steps:  # a later step is asked only where earlier ones passed: here every pair
            got = panel.verdicts([step], items, run.kind.spec.tie, errors)
            alone[step.name] = [got[(i, 0)].step is not None for i in range(len(rows))]
        for name, flags in alone.items():
            se, sp = youden(np.array(gold), np.array(flags))
            only = [f and not any(o[i] for n, o in alone.items() if n != name) for i, f in enumerate(flags)]
            print(f"step {name} alone: flagged {sum(flags)}, sensitivity {se:.3f}  specificity {sp:.3f}  J "
                  f"{se + sp - 1:.3f}; {sum(only)} flagged by it and no other step, "
                  f"{sum(o and g for o, g in zip(only, gold))} of them unsafe by people")


def sweep(step, verdicts: list, gold: list[bool]) -> None:
    """The likelihood step's ranking of the pairs and the threshold with the best J on them."""
    import math

    scores = []
    for verdict in verdicts:
        votes = list(verdict.judgements.get(step.name, {}).get("votes", {}).values())
        if len(votes) > 1:
            raise SystemExit(f"step {step.name} has {len(votes)} voters: a threshold sweep reads one")
        flagged_before = verdict.step is not None and verdict.step != step.name
        scores.append(math.inf if flagged_before or not votes else votes[0]["margin"] + step.spec.threshold)
    pos = [x for x, g in zip(scores, gold) if g]
    neg = [x for x, g in zip(scores, gold) if not g]
    auc = sum((a > b) + 0.5 * (a == b) for a in pos for b in neg) / max(len(pos) * len(neg), 1)
    best = max(((sum(x >= t for x in pos) / max(len(pos), 1) + sum(x < t for x in neg) / max(len(neg), 1) - 1, t)
                for t in sorted(set(x for x in scores if x != math.inf))), default=(0.0, None))
    print(f"step {step.name}: ROC AUC {auc:.3f}; best J {best[0]:.3f} at threshold {best[1]} (the task's: "
          f"{step.spec.threshold})")


if __name__ == "__main__":
    main()
