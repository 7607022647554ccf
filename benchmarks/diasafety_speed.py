"""Measure the suite on DiaSafety: the default command, the suite against lm-eval on the same work, the bootstrap,
and the utterance-level baseline beside the paper's Table 5.

    python benchmarks/diasafety_speed.py [--data-root ../shared/data] [--limit 200] [--batch-size 8] [--gen-toks 16]

Prints figures and ratios; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

PAPER_TABLE5 = {  # coarse macro F1 (unsafe-class F1), %, DiaSafety test set
    "random": (50.1, 48.1),
    "Detoxify, response only": (43.3, 15.8),
    "Detoxify, context+response": (62.3, 56.9),
    "Perspective API, response only": (45.2, 19.7),
    "Perspective API, context+response": (62.8, 59.1),
    "paper's classifier": (86.1, 85.5),
}


def cli(*args: str, cwd: Path, data_root: Path) -> tuple[float, dict]:
    """Run `python -m benchmark ARGS` in a fresh process; wall time and the card."""
    env = {**os.environ, "BENCHMARK_DATA_ROOT": str(data_root)}
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "benchmark", "progress=false", *args], cwd=cwd, env=env,
                          capture_output=True, text=True)
    wall = time.perf_counter() - start
    if proc.returncode:
        sys.exit(proc.stderr)
    card_path = Path(proc.stdout.strip().splitlines()[-1].split("score card: ")[1])
    return wall, json.loads((cwd / card_path).read_text())


def default_command(work: Path, data_root: Path) -> None:
    wall, card = cli(cwd=work, data_root=data_root)
    peak_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    again, card2 = cli(cwd=work, data_root=data_root)
    print("== python -m benchmark (profanity-check on the full DiaSafety test split)")
    print(f"records {card['dataset']['n']}; wall {wall:.2f} s (model and suite {card['run']['wall_s']:.2f} s, "
          f"the rest is interpreter and imports); peak RSS {peak_mib:.0f} MiB")
    print(f"rerun (resumed, {card2['run']['model_calls']} model calls): {again:.2f} s")


def utterance_baseline(work: Path, data_root: Path) -> None:
    print("\n== utterance-level baseline, coarse safe/unsafe on the test split (%): ours beside the paper's Table 5")
    print(f"{'row':<46} {'macro F1':>8} {'unsafe F1':>9}")
    for name, (macro, unsafe) in PAPER_TABLE5.items():
        print(f"{'paper: ' + name:<46} {macro:8.1f} {unsafe:9.1f}")
    for inp in ("response", "context+response"):
        _, card = cli(f"model.input={inp}", cwd=work, data_root=data_root)
        m = card["metrics"]
        print(f"{'ours: profanity-check, ' + inp:<46} {100 * m['coarse_macro_f1']['value']:8.1f} "
              f"{100 * m['coarse_unsafe_f1']['value']:9.1f}   "
              f"(95% CI {100 * m['coarse_macro_f1']['ci_low']:.1f}-{100 * m['coarse_macro_f1']['ci_high']:.1f})")


def against_lm_eval(work: Path, data_root: Path, limit: int, batch_size: int, gen_toks: int) -> dict:
    """The same 6-way prompts, tiny model and batch size through our runner and through lm_eval.simple_evaluate.
    Prints the figures and returns them (seconds)."""
    import lm_eval
    from hydra import compose, initialize_config_dir
    from lm_eval.api.task import ConfigurableTask
    from omegaconf import OmegaConf

    from benchmark.paths import CONF_DIR, TASKS_DIR
    from benchmark.run.runner import run
    from benchmark.composition import register
    from conftest import build_tiny_model

    model_dir = build_tiny_model(work / "tiny")
    register()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose("config", overrides=[
            "model=hf", f"model.pretrained={model_dir}", f"model.batch_size={batch_size}", f"limit={limit}",
            f"model.generation.max_new_tokens={gen_toks}", f"results_dir={work / 'results-ours'}",
            f"data_root={data_root}", "progress=false",
        ])
    start = time.perf_counter()
    card, _ = run(cfg)
    ours = time.perf_counter() - start

    task_yaml = OmegaConf.load(TASKS_DIR / "diasafety.yaml")
    system, user = task_yaml.messages[0].content, task_yaml.messages[1].content
    task = ConfigurableTask(config={
        "task": "diasafety_lmeval",
        "dataset_path": "json",
        "dataset_kwargs": {"data_files": {"test": str(data_root / "diasafety" / "test.json")}},
        "test_split": "test",
        "output_type": "generate_until",
        "doc_to_text": "{% set options = {'use_context': true} %}" + user,
        "doc_to_target": "{{ category if label == 'Unsafe' else 'Safe' }}",
        "generation_kwargs": {"until": [], "max_gen_toks": gen_toks, "do_sample": False},
        "metric_list": [{"metric": "exact_match"}],
    })
    start = time.perf_counter()
    lm_eval.simple_evaluate(
        model="hf", model_args=f"pretrained={model_dir},device=cpu,dtype=auto", tasks=[task], limit=limit,
        batch_size=batch_size, apply_chat_template=True, system_instruction=system, bootstrap_iters=0,
        log_samples=True,
    )
    theirs = time.perf_counter() - start
    print(f"\n== the suite against lm-eval: {limit} DiaSafety prompts, tiny Llama, batch {batch_size}, "
          f"{gen_toks} new tokens, CPU")
    print(f"ours   {ours:7.2f} s  ({card['run']['model_calls']} model calls, bootstrap {cfg.bootstrap} resamples)")
    print(f"lm-eval {theirs:6.2f} s  (no bootstrap)")
    print(f"ratio ours / lm-eval: {ours / theirs:.2f}")
    return {"ours_s": ours, "lm_eval_s": theirs, "model_calls": card["run"]["model_calls"], "limit": limit,
            "batch_size": batch_size, "gen_toks": gen_toks, "bootstrap": cfg.bootstrap}


def bootstrap_speed() -> float:
    import numpy as np

    from benchmark import metrics as M

    rng = np.random.default_rng(0)
    g, p = rng.integers(0, 6, 10_000), rng.integers(0, 7, 10_000)
    start = time.perf_counter()
    M.point_and_ci(M.macro_f1, g, p, 6, 1000, seed=0)
    seconds = time.perf_counter() - start
    print(f"\n== bootstrap: macro F1, 10k samples x 1000 resamples: {seconds:.3f} s")
    return seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-root", type=Path, default=REPO.parent / "shared" / "data")
    ap.add_argument("--limit", type=int, default=200)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--gen-toks", type=int, default=16)
    args = ap.parse_args()
    data_root = args.data_root.resolve()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "default").mkdir()
        default_command(work / "default", data_root)
        utterance_baseline(work / "default", data_root)
        bootstrap_speed()
        against_lm_eval(work, data_root, args.limit, args.batch_size, args.gen_toks)


if __name__ == "__main__":
    main()
