"""Requests per second of the suite's API path at num_concurrent 1, 4 and 16, on the same requests.

The path is the whole of `model=openai-chat`: the runner, the response cache, lm-eval's chat-completions client with
the suite's per-request retries, over HTTP to `transformers serve` on 127.0.0.1 serving the tests' tiny random Llama
(built as tests/conftest.py builds it). Each run asks the same DiaSafety prompts (task=diasafety, limit=--requests;
synthetic pairs when the data set is absent) greedily, with an empty cache, so every request reaches the server.

    python benchmarks/api_throughput.py [--data-root ../shared/data] [--requests 96] [--gen-toks 16] [--repeats 3]
                                        [--concurrency 1 4 16] [--continuous-batching] [--server-threads 1]

Prints a table (median of --repeats runs per level, the levels taking turns) with each level's ratio to
num_concurrent=1; asserts nothing. The server and the suite share the machine's CPUs, so other load shows in the
figures: the script prints the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def data_root_for(args, work: Path) -> tuple[Path, str]:
    root = Path(args.data_root).expanduser() if args.data_root else None
    if root is not None and (root / "diasafety" / "test.json").is_file():
        return root, f"DiaSafety test split ({root})"
    from conftest import synthetic_diasafety

    folder = work / "data" / "diasafety"
    folder.mkdir(parents=True)
    (folder / "test.json").write_text(json.dumps(synthetic_diasafety(args.requests)))
    return work / "data", "synthetic DiaSafety-style pairs (the data set was not found)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-root", default=os.environ.get("BENCHMARK_DATA_ROOT", str(REPO.parent / "shared" / "data")))
    parser.add_argument("--requests", type=int, default=96)
    parser.add_argument("--gen-toks", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 16])
    parser.add_argument("--continuous-batching", action="store_true", help="start transformers serve with it")
    parser.add_argument("--server-threads", type=int, default=1,
                        help="the server's torch threads (OMP_NUM_THREADS); more makes a shared machine's figures jumpy")
    args = parser.parse_args()

    import logging

    logging.getLogger("lm_eval").setLevel(logging.ERROR)
    from conftest import ServeError, build_tiny_model, start_chat_server

    from benchmark.run import runner
    from benchmark.run.runner import run
    from benchmark.composition import compose

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        model_dir = build_tiny_model(work / "tiny-llama")
        root, source = data_root_for(args, work)
        serve_flags = ["--continuous-batching"] if args.continuous_batching else []
        try:
            proc, url = start_chat_server(model_dir, work / "serve.log", tuple(serve_flags),
                                          {"OMP_NUM_THREADS": str(args.server_threads)})
        except ServeError as e:
            sys.exit(str(e))
        try:
            base = ["model=openai-chat", f"model.base_url={url}", f"model.served_model={model_dir}",
                    "model.api_key_env=null", f"model.generation.max_new_tokens={args.gen_toks}", "task=diasafety",
                    f"data_root={root}", "progress=false", "bootstrap=100"]

            asking = [0.0]  # seconds inside the model's calls (cache look-ups, HTTP requests, cache writes)
            ask = runner.CachedModel.__call__

            def timed_ask(self, op, payloads):
                start = time.perf_counter()
                try:
                    return ask(self, op, payloads)
                finally:
                    asking[0] += time.perf_counter() - start

            runner.CachedModel.__call__ = timed_ask

            def timed(concurrent: int, limit: int, tag: str) -> tuple[float, float]:
                cfg = compose([*base, f"model.num_concurrent={concurrent}", f"limit={limit}",
                               f"results_dir={work / tag}"])  # a fresh results folder and response cache
                asking[0] = 0.0
                start = time.perf_counter()
                card, _ = run(cfg)
                wall = time.perf_counter() - start
                if card["run"]["failed"] or card["run"]["model_calls"] != limit:
                    sys.exit(f"num_concurrent={concurrent}: {card['run']['failed']} failed requests, "
                             f"{card['run']['model_calls']} model calls of {limit}")
                return asking[0], wall

            timed(4, 8, "warm-up")  # imports, the server's first requests
            load_before = os.getloadavg()[0]
            times: dict[int, list[tuple[float, float]]] = {c: [] for c in args.concurrency}
            for r in range(args.repeats):  # the levels take turns, so a change in the machine's load hits them alike
                for c in args.concurrency:
                    times[c].append(timed(c, args.requests, f"c{c}-r{r}"))
            load_after = os.getloadavg()[0]
            rows = []
            for c, t in times.items():
                asked = [a for a, _ in t]
                rows.append((c, statistics.median(asked), min(asked), max(asked), statistics.median(w for _, w in t)))
        finally:
            proc.terminate()
            proc.wait(timeout=30)

    import torch
    import transformers

    print(f"== the suite's API path (model=openai-chat) against transformers serve {transformers.__version__}"
          f"{' --continuous-batching' if args.continuous_batching else ''} on 127.0.0.1, "
          f"{args.server_threads} torch thread(s)")
    print(f"model: the tests' tiny random Llama (2 layers, hidden 32), greedy, max_new_tokens {args.gen_toks}; "
          f"{args.requests} requests per run, {source}; {os.cpu_count()} CPUs, torch {torch.__version__}; "
          f"median of {args.repeats} runs, each with an empty response cache; load average {load_before:.1f} "
          f"before, {load_after:.1f} after")
    print()
    base_rate = None
    print(f"{'num_concurrent':>14}  {'requests s (min-max)':>22}  {'requests/s':>10}  {'ratio to 1':>10}  "
          f"{'whole run s':>11}")
    for c, asked, lo, hi, wall in rows:
        rate = args.requests / asked
        base_rate = base_rate or rate
        print(f"{c:>14}  {asked:>8.2f} ({lo:5.2f}-{hi:5.2f})  {rate:>10.1f}  {rate / base_rate:>9.2f}x  {wall:>11.2f}")
    print("requests s: time inside the model's calls (cache look-ups, the HTTP requests, cache writes); whole run: "
          "also loading the records, scoring and writing the card")
    if args.concurrency[0] != 1:
        print(f"(ratios are to num_concurrent={args.concurrency[0]}, the first level measured)")


if __name__ == "__main__":
    main()
