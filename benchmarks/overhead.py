"""How much time the suite adds to the model's own: DiaSafety through the suite against the same requests sent to the
backend directly, where the suite's time goes, the suite against lm-eval, a rerun of a finished run, the bootstrap.

    python benchmarks/overhead.py [--data-root ../shared/data] [--hf-limit 400] [--lmeval-limit 200] [--no-lmeval]

(a) suite ÷ model: `runner.run` on the DiaSafety test split in a warm process (imports done, fresh results and
    cache folders), against the backend alone answering the same requests in the same chunks (loading included on
    both sides), for the replay backend, the profanity-check baseline and the tiny random Llama of the tests; then
    a cProfile of each suite run, grouped into templating, parsing, caching, metrics, bootstrap, writing, ...
(b) the suite against `lm_eval.simple_evaluate` on the same prompts and tiny model (benchmarks/diasafety_speed.py);
(c) a rerun of a finished run: the command's wall time and model calls;
(d) the bootstrap on 10k samples: macro F1 alone, and every DiaSafety metric of a card.
Prints figures and ratios side by side; asserts nothing.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "benchmarks"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

# a replay of recorded answers for the DiaSafety test split, numbered as the task numbers its records
REPLAY_MODEL = """name: diasafety-replay
backend: replay
replay:
  path: diasafety/test.json
  output: "{{ category if label == 'Unsafe' and context|length % 3 else 'Safe' }}"
"""


def compose(work: Path, *overrides: str):
    from benchmark.composition import compose as compose_run

    return compose_run([f"hydra.searchpath=[file://{work / 'conf'}]", "progress=false", *overrides])


def model_alone(cfg, data_root: Path) -> tuple[float, int]:
    """The backend alone on the requests the suite sends, in the suite's chunks: (seconds, requests)."""
    from benchmark.data import load_records
    from benchmark.kinds import make_kind
    from benchmark.models import load_backend

    kind = make_kind(cfg.task, cfg.model)
    records = load_records(cfg.task, str(data_root)).items[: cfg.limit]
    chunks = [records[i : i + cfg.chunk_size] for i in range(0, len(records), cfg.chunk_size)]
    backend_kind = cfg.model.backend
    if backend_kind == "replay":
        requests = [[{"task": cfg.task.name, "id": r["id"]} for r in c] for c in chunks]
    elif backend_kind == "profanity-check":
        requests = [[kind.classifier_input(r) for r in c] for c in chunks]
    else:
        requests = [[kind.messages(r) for r in c] for c in chunks]
    generation = kind.generation
    start = time.perf_counter()
    backend = load_backend(cfg.model, False, str(data_root))
    for batch in requests:
        if backend_kind == "replay":
            backend.replay(batch)
        elif backend_kind == "profanity-check":
            backend.classify(batch)
        else:
            backend.generate(batch, generation)
    return time.perf_counter() - start, len(records)


# --- where the suite's time goes: cProfile's per-caller times, summed into disjoint groups ----------------------
def _matching(stats: dict, file_part: str, name: str) -> list:
    return [k for k in stats if k[0].replace(os.sep, "/").endswith(file_part) and k[2] == name]


def _ct(stats, file_part, name) -> float:
    return sum(stats[k][3] for k in _matching(stats, file_part, name))


def _ct_from(stats, file_part, name, caller_part) -> float:
    """Time in `name` when called from a function in a file ending with `caller_part`."""
    total = 0.0
    for k in _matching(stats, file_part, name):
        for caller, edge in stats[k][4].items():
            if caller[0].replace(os.sep, "/").endswith(caller_part) or caller_part in caller[0]:
                total += edge[3]
    return total


def grouped(prof: cProfile.Profile, total: float) -> list[tuple[str, float]]:
    s = pstats.Stats(prof).stats
    b = "benchmark/"
    model_load = _ct(s, b + "models/__init__.py", "load_backend")
    model_answer = _ct(s, b + "models/cached.py", "_ask")
    bootstrap = _ct(s, b + "metrics.py", "point_and_ci")
    render_in_model = _ct_from(s, b + "templates.py", "render", b + "models/")
    render_in_data = _ct_from(s, b + "templates.py", "render", b + "data.py")
    validation = _ct(s, b + "scorecard.py", "validate")
    groups = [
        ("model: load", model_load),
        ("model: answer", model_answer),
        ("templating (prompts, classifier inputs, gold labels)",
         _ct(s, b + "templates.py", "render") - render_in_model - render_in_data),
        ("parsing answers", _ct(s, b + "judging/parsing.py", "__call__") + _ct(s, b + "judging/parsing.py", "extract_json")),
        ("caching (keys, lookups, inserts)",
         _ct(s, b + "models/cached.py", "__call__") - model_answer + _ct(s, b + "cache.py", "__init__")
         + _ct(s, b + "cache.py", "close")),
        ("metrics (point values, breakdowns)", _ct(s, b + "kinds/classify.py", "score") - bootstrap),
        ("bootstrap", bootstrap),
        ("writing (samples, card, hashes)",
         _ct(s, b + "runner.py", "_append") + _ct_from(s, "json/__init__.py", "dumps", b + "runner.py")
         + _ct(s, b + "scorecard.py", "write") - validation + _ct(s, b + "identity.py", "file_sha256")
         + _ct(s, b + "runner.py", "_prepare_dir") + _ct(s, b + "runner.py", "_check_manifest")),
        ("card validation (JSON Schema)", validation),
        ("loading records (datasets, resume)", _ct(s, b + "data.py", "load_records") + _ct(s, b + "runner.py", "read_samples")),
        ("config hashes", _ct(s, b + "identity.py", "model_sha256") + _ct_from(s, b + "identity.py", "sha256_json",
                                                                                    b + "runner.py")),
        ("run facts (library versions, git commit)", _ct(s, b + "scorecard.py", "versions")
         + _ct(s, b + "scorecard.py", "git_commit")),
    ]
    groups.append(("other", total - sum(t for _, t in groups)))
    return groups


def top_suite_entries(prof: cProfile.Profile, n: int = 8) -> list[tuple[str, float, int]]:
    """The suite's own functions with the most time spent in their own code."""
    s = pstats.Stats(prof).stats
    rows = [(f"{Path(k[0]).name}:{k[1]}({k[2]})", v[2], v[1]) for k, v in s.items()
            if "/benchmark/" in k[0].replace(os.sep, "/")]
    return sorted(rows, key=lambda r: -r[1])[:n]


def suite_against_model(work: Path, data_root: Path, name: str, overrides: list[str]) -> dict:
    from benchmark.run.runner import run

    slug = "".join(c if c.isalnum() else "-" for c in name)
    suites, models = [], []
    for attempt in range(2):  # the better of two of each, alternated: the machine's other load varies
        cfg = compose(work, f"data_root={data_root}", f"results_dir={work / slug / f'plain{attempt}'}", *overrides)
        model, n = model_alone(cfg, data_root)  # the first also imports the backend's libraries, for both sides
        models.append(model)
        start = time.perf_counter()
        card, _ = run(cfg)
        suites.append(time.perf_counter() - start)
    model, n = model_alone(cfg, data_root)
    models.append(model)
    suite, model = min(suites), min(models[1:])
    prof = cProfile.Profile()
    cfg = compose(work, f"data_root={data_root}", f"results_dir={work / slug / 'profiled'}", *overrides)
    start = time.perf_counter()
    prof.enable()
    run(cfg)
    prof.disable()
    profiled = time.perf_counter() - start
    return {"name": name, "n": n, "suite_s": suite, "model_s": model, "calls": card["run"]["model_calls"],
            "groups": grouped(prof, profiled), "profiled_s": profiled, "top": top_suite_entries(prof)}


def rerun(work: Path, data_root: Path) -> dict:
    """`python -m benchmark` (profanity-check, whole test split) twice in fresh processes."""
    env = {**os.environ, "BENCHMARK_DATA_ROOT": str(data_root)}
    walls, cards = [], []
    for _ in range(2):
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "benchmark", "progress=false"], cwd=work, env=env,
                              capture_output=True, text=True, check=False)
        walls.append(time.perf_counter() - start)
        if proc.returncode:
            sys.exit(proc.stderr)
        cards.append(json.loads((work / proc.stdout.strip().splitlines()[-1].split("score card: ")[1]).read_text()))
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import benchmark.run.runner, hydra"], check=True)
    bare = time.perf_counter() - start
    return {"first_s": walls[0], "again_s": walls[1], "first_calls": cards[0]["run"]["model_calls"],
            "again_calls": cards[1]["run"]["model_calls"], "again_run_s": cards[1]["run"]["wall_s"],
            "resumed": cards[1]["run"]["resumed"], "imports_s": bare,
            "same_metrics": cards[0]["metrics"] == cards[1]["metrics"]}


def bootstrap_figures(work: Path, data_root: Path) -> dict:
    """Every DiaSafety metric of a card (with its breakdowns) on 10k samples, 1000 resamples; macro F1 alone."""
    import numpy as np
    from diasafety_speed import bootstrap_speed

    from benchmark.kinds import make_kind

    one = bootstrap_speed()
    cfg = compose(work, f"data_root={data_root}")
    kind = make_kind(cfg.task, cfg.model)
    labels = ["Safe", "Offending User", "Risk Ignorance", "Unauthorized Expertise", "Toxicity Agreement",
              "Biased Opinion"]
    rng = np.random.default_rng(0)
    gold = rng.choice(labels, 10_000)
    pred = np.where(rng.random(10_000) < 0.6, gold, rng.choice(labels + ["Unsafe", "invalid"], 10_000))
    samples = [{"target": g, "prediction": p, "group": {"category": g}} for g, p in zip(gold, pred)]
    start = time.perf_counter()
    metrics, _ = kind.score(samples, 1000, 0)
    return {"macro_f1_s": one, "card_s": time.perf_counter() - start, "metrics": len(metrics)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-root", type=Path, default=REPO.parent / "shared" / "data")
    ap.add_argument("--hf-limit", type=int, default=400, help="records for the tiny Llama in (a)")
    ap.add_argument("--lmeval-limit", type=int, default=200)
    ap.add_argument("--no-lmeval", action="store_true", help="skip (b)")
    ap.add_argument("--threads", type=int, default=1,
                    help="torch CPU threads (1: steady figures on a machine whose cores other jobs share)")
    args = ap.parse_args()
    data_root = args.data_root.resolve()
    os.environ["BENCHMARK_DATA_ROOT"] = str(data_root)

    import datasets  # noqa: F401  the imports a run needs, done before anything is timed
    import torch

    torch.set_num_threads(args.threads)

    from conftest import build_tiny_model

    import benchmark.run.runner  # noqa: F401

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "conf" / "model").mkdir(parents=True)
        (work / "conf" / "model" / "diasafety-replay.yaml").write_text(REPLAY_MODEL)
        tiny = build_tiny_model(work / "tiny")
        from benchmark.run.runner import run

        run(compose(work, f"data_root={data_root}", "model=diasafety-replay", f"results_dir={work / 'warm'}",
                    "limit=10"))  # first-time costs (the datasets cache of the file) are not the suite's
        runs = [
            suite_against_model(work, data_root, "replay", ["model=diasafety-replay"]),
            suite_against_model(work, data_root, "profanity-check", ["model=profanity-check"]),
            suite_against_model(work, data_root, "tiny Llama (hf)", [
                "model=hf", f"model.pretrained={tiny}", f"limit={args.hf_limit}", "model.batch_size=8",
                "model.generation.max_new_tokens=16"]),
        ]
        print("== DiaSafety test split: the suite against the same requests sent to the backend alone")
        print(f"{'backend':<18} {'records':>7} {'model s':>8} {'suite s':>8} {'suite/model':>11} {'added ms/record':>15}")
        for r in runs:
            print(f"{r['name']:<18} {r['n']:>7} {r['model_s']:8.3f} {r['suite_s']:8.3f} "
                  f"{r['suite_s'] / r['model_s']:11.2f} {1000 * (r['suite_s'] - r['model_s']) / r['n']:15.2f}")
        for r in runs:
            print(f"\n-- where the suite's time goes: {r['name']} (cProfile, {r['profiled_s']:.2f} s profiled)")
            for label, t in r["groups"]:
                print(f"   {label:<54} {t:7.3f} s  {100 * t / r['profiled_s']:5.1f}%")
            print("   top suite functions by own time:")
            for where, own, calls in r["top"]:
                print(f"     {where:<60} {own:7.3f} s  {calls:>7} calls")

        lm = None
        if not args.no_lmeval:
            from diasafety_speed import against_lm_eval

            lm = against_lm_eval(work, data_root, args.lmeval_limit, 8, 16)
        (work / "rerun").mkdir()
        re_ = rerun(work / "rerun", data_root)
        print(f"\n== rerun of a finished run (python -m benchmark, {re_['resumed']} records)")
        print(f"first run {re_['first_s']:.2f} s, {re_['first_calls']} model calls; rerun {re_['again_s']:.2f} s "
              f"({re_['again_run_s']:.2f} s in the runner, the rest is interpreter and imports: "
              f"`import benchmark.run.runner, hydra` alone takes {re_['imports_s']:.2f} s), {re_['again_calls']} model "
              f"calls; same metrics: {re_['same_metrics']}")
        boot = bootstrap_figures(work, data_root)
        print(f"== bootstrap: every DiaSafety metric of a card ({boot['metrics']}, with breakdowns), 10k samples x "
              f"1000 resamples: {boot['card_s']:.3f} s")

        print("\n== summary")
        print(f"{'figure':<58} {'measured':>12} {'target':>10}")
        for r in runs:
            print(f"{'suite / model time, ' + r['name']:<58} {r['suite_s'] / r['model_s']:12.2f} {'<= 1.1':>10}")
            print(f"{'  time the suite adds per record, ms':<58} "
                  f"{1000 * (r['suite_s'] - r['model_s']) / r['n']:12.2f} {'':>10}")
        if lm:
            print(f"{'suite / lm-eval, same prompts and tiny model':<58} {lm['ours_s'] / lm['lm_eval_s']:12.2f} "
                  f"{'':>10}")
        print(f"{'rerun of a finished run: model calls':<58} {re_['again_calls']:12d} {'0':>10}")
        print(f"{'rerun of a finished run: wall s (fresh process)':<58} {re_['again_s']:12.2f} {'':>10}")
        print(f"{'bootstrap, 10k samples, macro F1: s':<58} {boot['macro_f1_s']:12.3f} {'< 1':>10}")
        print(f"{'bootstrap, 10k samples, every metric of a card: s':<58} {boot['card_s']:12.3f} {'< 1':>10}")


if __name__ == "__main__":
    main()
