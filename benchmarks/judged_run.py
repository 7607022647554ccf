"""What a first judged run costs beyond its judging: the same command from empty caches (a fresh results folder and
a fresh $BENCHMARK_CACHE, as on a new clone), once as a user runs it (the shipped judges' figures read from
judges/validity.json), once with judge_validity=false (no figures at all: the reference), and, with --measuring,
once with validity_record=false (the judges measured on their labelled sets, as every first run did before the
record shipped).

    python benchmarks/judged_run.py [--data-root ../shared/data] [--measuring] -- model=smollm2-135m-instruct task=toxicchat limit=5
    python benchmarks/judged_run.py -- model=qwen2.5-coder-0.5b-instruct task=multijail limit=20

Prints each run's wall time and its ratio to the reference, and whether the judge entries of the card that read the
record equal those of the card that measured them (with --measuring); asserts nothing. Both runs share the
machine's CPUs with whatever else runs: the script prints the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def timed(overrides: list[str], data_root: str, work: Path, name: str) -> tuple[float, dict]:
    """Wall seconds of `python -m benchmark OVERRIDES` from empty caches, and its card."""
    folder = work / name
    env = {**os.environ, "BENCHMARK_DATA_ROOT": data_root, "BENCHMARK_CACHE": str(folder / "cache"),
           "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "benchmark", *overrides, "progress=false",
                           f"results_dir={folder / 'results'}"], cwd=REPO, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"{name}: the run failed:\n{done.stderr[-3000:]}")
    card_path = done.stdout.strip().splitlines()[-1].removeprefix("score card: ")
    return seconds, json.loads(Path(card_path).read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-root", default=os.environ.get("BENCHMARK_DATA_ROOT", str(REPO.parent / "shared" / "data")))
    parser.add_argument("--measuring", action="store_true", help="also the run that measures its judges (slow)")
    parser.add_argument("overrides", nargs="+", help="the run's key=value arguments, after --")
    args = parser.parse_args()
    runs = [("reads the record", []), ("judge_validity=false", ["judge_validity=false"])]
    if args.measuring:
        runs.append(("validity_record=false", ["validity_record=false"]))
    print(f"python -m benchmark {' '.join(args.overrides)}; load average {os.getloadavg()[0]:.2f} at the start")
    with tempfile.TemporaryDirectory(prefix="judged-run-") as tmp:
        results = {name: timed(args.overrides + extra, args.data_root, Path(tmp), name.split("=")[0])
                   for name, extra in runs}
    reference = results["judge_validity=false"][0]
    for name, (seconds, card) in results.items():
        print(f"{name:<24} {seconds:8.1f} s   {seconds / reference:5.2f} x the run without judge figures   "
              f"model calls {card['run']['model_calls']}")
    if args.measuring:
        read, measured = results["reads the record"][1], results["validity_record=false"][1]
        same = [read.get(k) == measured.get(k) for k in ("judges", "judging_validation", "metrics")]
        print(f"the card that read the record, against the one that measured: judge entries equal {same[0]}, "
              f"judging_validation equal {same[1]}, metrics equal {same[2]}")
    print(f"load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
