"""Does a probe of a multilingual base model, taught on English jailbreak replies, read harm in Korean and Chinese?
Qwen2.5-Coder-0.5B-Instruct under harm-probe's prompt and base (conf/probe_train/harm-probe.yaml, llama.cpp), its
logistic head fitted on a draw of GPTFuzz's training replies (16 of its 80 questions held out for validation, where
C and the threshold are chosen), then measured on draws of GPTFuzz's evaluate split (20 other questions, English),
SQuARe (Korean) and SafetyBench's Chinese dialogues. The base model's states are kept per chunk under
checkpoints/probe-gptfuzz, so a second run reads nothing again. Prints each set's figures; asserts nothing.

    python benchmarks/harm_probe_transfer.py [TRAIN VAL TEST]     (default 500 150 120; about 35 minutes on 2 cores)
"""
import json
import os
import random
import sys
from pathlib import Path

import numpy as np
from benchmark.judging.labelled import validation_sets, labelled_rows, judge_inputs, human_labels
from benchmark.judge.probe_train import base_model, features, fit_head, load_base, load_config, rates, youden
from benchmark.models.probe import Probe
from benchmark.files import write_json

N_TRAIN, N_VAL, N_TEST = (int(a) for a in (sys.argv[1:4] if len(sys.argv) > 3 else (500, 150, 120)))
root = os.environ.get("BENCHMARK_DATA_ROOT", "../shared/data")
out = Path("checkpoints/probe-gptfuzz"); out.mkdir(parents=True, exist_ok=True)
cfg = load_config("harm-probe")
base = base_model(cfg)
messages = [{"role": m.role, "content": m.content} for m in cfg.messages]
write_json(out / "probe.json", {"base": base, "messages": messages, "threshold": 0.0, "weights_sha256": None})
probe = Probe(out, base=load_base(base, 1, str(out / "probe.json")), name="probe-gptfuzz", head=False)
sets = {s.name: s for s in validation_sets()}


def say(line: str) -> None:
    print(line, flush=True)


def rows_of(vs, data=None):
    rows = labelled_rows(vs, root, data, vs.name)
    return judge_inputs(vs, rows, vs.name), np.array(human_labels(vs, rows, vs.name)), rows

g = sets["gptfuzz"]
x, y, rows = rows_of(g, g.train.data)
qs = sorted({r["question"] for r in rows}); random.Random(0).shuffle(qs)
val_q = set(qs[:16])  # 16 of the 80 training questions held out for validation
idx_tr = [i for i, r in enumerate(rows) if r["question"] not in val_q]
idx_va = [i for i, r in enumerate(rows) if r["question"] in val_q]
random.Random(1).shuffle(idx_tr)
random.Random(2).shuffle(idx_va)
idx_tr, idx_va = idx_tr[:N_TRAIN], idx_va[:N_VAL]
f_tr = features(probe, [x[i] for i in idx_tr], out / "f" / "train", say); y_tr = y[idx_tr]
f_va = features(probe, [x[i] for i in idx_va], out / "f" / "val", say); y_va = y[idx_va]
head = fit_head(f_tr, y_tr, f_va, y_va, cfg.c_grid)
thr = head.threshold


def acc(gold, z) -> float:
    return float(((z >= thr) == (gold == 1)).mean())


report = {"c": head.c, "cv_auc": head.tried, "threshold": thr,
          "val": {**head.val, "accuracy": acc(y_va, head.logits(f_va))}}
say(json.dumps(report))
tests = {"gptfuzz_evaluate": (g, g.data), "square": (sets["square"], None),
         "safetybench_zh_dialogue": (sets["safetybench_zh_dialogue"], None)}
for name, (vs, data) in tests.items():
    xt, yt, _ = rows_of(vs, data)
    order = list(range(len(xt)))
    random.Random(3).shuffle(order)
    order = order[:N_TEST]
    ft = features(probe, [xt[i] for i in order], out / "f" / name, say)
    z = head.logits(ft)
    report[name] = {**rates(yt[order], z, thr), "accuracy": acc(yt[order], z), "auc": youden(yt[order], z)[1]["auc"]}
    say(f"{name}: {json.dumps(report[name])}")
write_json(out / "report.json", report)
