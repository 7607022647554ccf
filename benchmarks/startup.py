"""The default run's fixed cost: `python -m benchmark` (profanity-check on DiaSafety test) in a fresh folder, against a
short numpy script that computes the same figures and intervals from the same data, side by side; and a rerun of a
finished run.

    python benchmarks/startup.py [--data-root ../shared/data] [--repeats 5]

Each is a new process, timed from its start to its exit, after one untimed run (bytecode written, the command's
composed config kept, as after any first run); the median of --repeats runs is printed with the ratio to the script,
and to the same script run with the suite's collector settings (benchmark/collector.py: no collection while the
libraries load, nothing walked at exit), which leaves the suite's own work as the difference. The script reads the
same file, asks the same classifier the same texts and computes macro F1,
accuracy, the coarse macro F1 and unsafe F1 with 1,000 bootstrap resamples, the per-class and per-category figures,
and writes them as JSON; its macro F1 is printed beside the card's, to show they are the same figures. The suite
also checks the data against its pin, keeps every sample on disk, caches answers and writes a card. Asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

SCRIPT = r"""
import json, sys
import numpy as np
from profanity_check import predict_prob

rows = json.load(open(sys.argv[1] + "/diasafety/test.json"))
labels = ["Safe", "Offending User", "Risk Ignorance", "Unauthorized Expertise", "Toxicity Agreement", "Biased Opinion"]
gold = np.array([labels.index(r["category"]) if r["label"] == "Unsafe" else 0 for r in rows])
unsafe = predict_prob([r["response"] for r in rows]) > 0.5
pred = np.where(unsafe, len(labels), 0)  # "Unsafe" names no category: counted as no class of the six
k = len(labels) + 1

def scores(g, p):
    conf = np.bincount(g * k + p, minlength=k * k).reshape(k, k)[:len(labels)]
    tp = np.diag(conf[:, :len(labels)])
    precision = tp / np.maximum(conf[:, :len(labels)].sum(0), 1)
    recall = tp / np.maximum(conf.sum(1), 1)
    f1 = np.where(precision + recall > 0, 2 * precision * recall / np.maximum(precision + recall, 1e-12), 0)
    cg, cp = g > 0, p > 0
    ctp, cfp, cfn = (cg & cp).sum(), (~cg & cp).sum(), (cg & ~cp).sum()
    ctn = len(g) - ctp - cfp - cfn
    uf1 = 2 * ctp / max(2 * ctp + cfp + cfn, 1)
    sf1 = 2 * ctn / max(2 * ctn + cfn + cfp, 1)
    return {"macro_f1": f1.mean(), "accuracy": (g == p).mean(), "coarse_macro_f1": (uf1 + sf1) / 2,
            "coarse_unsafe_f1": uf1, "per_class": dict(zip(labels, f1.tolist()))}

point = scores(gold, pred)
rng = np.random.default_rng(1234)
draws = [scores(gold[i], pred[i]) for i in rng.integers(0, len(gold), (1000, len(gold)))]
out = {m: {"value": float(point[m]), "ci_low": float(np.percentile([d[m] for d in draws], 2.5)),
           "ci_high": float(np.percentile([d[m] for d in draws], 97.5))}
       for m in ("macro_f1", "accuracy", "coarse_macro_f1", "coarse_unsafe_f1")}
cats = np.array([r["category"] for r in rows])
out["by_category"] = {c: {"n": int((cats == c).sum()), "accuracy": float((gold == pred)[cats == c].mean())}
                      for c in sorted(set(cats))}
out["per_class"] = point["per_class"]
json.dump(out, open(sys.argv[2], "w"))
"""


# the same script with Python's collector as the suite sets it (benchmark/collector.py): paused while the libraries
# load, one collection then, those objects frozen, and what is left frozen at exit; the suite's own work against the
# script's, nothing else
SCRIPT_COLLECTOR = ("import gc\ngc.disable()\n"
                    + SCRIPT.replace("from profanity_check import predict_prob\n",
                                     "from profanity_check import predict_prob\ngc.collect()\ngc.freeze()\n"
                                     "gc.enable()\n")
                    + "gc.freeze()\n")
assert SCRIPT_COLLECTOR.count("gc.freeze()") == 2


# a rerun's stages, timed in one process: runner.run itself, its stages wrapped in timers
STAGES = r"""
import json, time
t = time.perf_counter()
from benchmark import kinds
from benchmark.run import runner, scorecard
from benchmark.run.report import table
from benchmark.composition import compose
took = {"imports": time.perf_counter() - t}

def timing(owner, name, label):
    real = getattr(owner, name)
    def timed(*args, **kwargs):
        t = time.perf_counter()
        try:
            return real(*args, **kwargs)
        finally:
            took[label] = took.get(label, 0.0) + time.perf_counter() - t
    setattr(owner, name, timed)

for owner, name, label in ((runner, "plan", "plan"), (runner, "execute", "execute (read samples)"),
                           (kinds, "score", "bootstrap"), (scorecard, "assemble", "card"), (scorecard, "write", "card")):
    timing(owner, name, label)
t = time.perf_counter()
cfg = compose(["progress=false"])
took["compose (kept config)"] = time.perf_counter() - t
card, path = runner.run(cfg, ["progress=false"])
table(card, path)
print(json.dumps(took))
"""


def timed(cmd: list[str], cwd: Path, env: dict) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, env=env, check=True, capture_output=True)
    return time.perf_counter() - t


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--data-root", default=os.environ.get("BENCHMARK_DATA_ROOT") or str(REPO.parent / "shared" / "data"))
    p.add_argument("--repeats", type=int, default=5)
    args = p.parse_args()
    data_root = str(Path(args.data_root).resolve())
    # as Python runs for a user: modules' bytecode cached beside them (an environment that turns that off would
    # compile the suite's modules from source in every process, which no installed suite does)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(BENCHMARK_DATA_ROOT=data_root, HF_HUB_OFFLINE="1")
    suite = [sys.executable, "-m", "benchmark", "progress=false"]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        (tmp / "warm-up").mkdir()
        timed(suite, tmp / "warm-up", env)  # untimed: bytecode written, the composed config kept
        script_out = tmp / "figures.json"
        runs, script, script_collector, reruns = [], [], [], []
        for i in range(args.repeats):  # interleaved, so that a busier moment falls on each
            folder = tmp / f"fresh{i}"
            folder.mkdir()
            runs.append(timed(suite, folder, env))
            script.append(timed([sys.executable, "-c", SCRIPT, data_root, str(script_out)], tmp, env))
            script_collector.append(timed([sys.executable, "-c", SCRIPT_COLLECTOR, data_root, str(script_out)], tmp,
                                          env))
            reruns.append(timed(suite, folder, env))
        staged = subprocess.run([sys.executable, "-c", STAGES], cwd=tmp / "fresh0", env=env, check=True,
                                capture_output=True, text=True)
        stages = json.loads(staged.stdout.strip().splitlines()[-1])
        card = json.loads(next((tmp / "fresh0" / "results").rglob("scorecard.json")).read_text())
        figures = json.loads(script_out.read_text())
    base, same = statistics.median(script), statistics.median(script_collector)
    print(f"{'':42} {'median s':>9} {'runs':>28} {'÷ script':>9} {'÷ script, same collector':>25}")
    for name, times in (("numpy script (same figures, same data)", script),
                        ("numpy script, the suite's collector settings", script_collector),
                        ("python -m benchmark, fresh folder", runs), ("python -m benchmark, rerun", reruns)):
        print(f"{name:42} {statistics.median(times):9.2f} {' '.join(f'{t:.2f}' for t in times):>28} "
              f"{statistics.median(times) / base:8.2f}× {statistics.median(times) / same:24.2f}×")
    m = card["metrics"]["macro_f1"]
    s = figures["macro_f1"]
    print(f"\nmacro F1: card {100 * m['value']:.2f} [{100 * m['ci_low']:.2f}, {100 * m['ci_high']:.2f}], "
          f"script {100 * s['value']:.2f} [{100 * s['ci_low']:.2f}, {100 * s['ci_high']:.2f}]")
    print("\na rerun's stages, in one process: " + ", ".join(f"{k} {v:.2f} s" for k, v in stages.items()))
    print("goals: the fresh run within 1.2× the script; a rerun under 1 s. The last column compares the suite's own work"
          " alone: the script given the collector settings the suite runs with (benchmark/collector.py)")


if __name__ == "__main__":
    main()
