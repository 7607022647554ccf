"""The two engines for GGUF weights side by side: `hf` (transformers, dequantised) and `llama-cpp` (llama.cpp, as the
file is), each as the whole suite runs it, against llama.cpp on its own.

    python benchmarks/engines.py [--models qwen2.5-coder-0.5b-instruct qwen2.5-coder-1.5b-instruct] [--n 48]
                                 [--workloads classify chatbot] [--data-root ../shared/data] [--threads 2]

Workloads, on the first n records:
  classify  task=diasafety: the taxonomy prompt (about 300 tokens), 32 new tokens, greedy: prefill-heavy
  chatbot   task=diasafety_chatbot_k1 made greedy (task.attack.generation.do_sample=false): a user's message, 64 new
            tokens: decode-heavy. Its card also judges the answers; only the model's seconds are the engine's.
Each suite run is `python -m benchmark model=M model.backend=E task=T limit=n` in a process of its own, asking the
model anew (the judges' own measurements cached once per workload beforehand). The reference (`llama.cpp alone`) is llama-cpp-python's own chat completion over the same messages, one at a
time, with the same threads, in a process of its own. Peak memory is each process's maximum resident set.
Tokens: the prompts read and the new tokens written, as each engine's tokenizer counts them; tok/s is both over the
model's seconds. Equal answers: hf against llama-cpp, and llama-cpp against llama.cpp alone. Prints the table;
asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WORKLOADS = {
    "classify": ("diasafety", []),
    "chatbot": ("diasafety_chatbot_k1", ["task.attack.generation.do_sample=false"]),
}


@dataclass
class Measured:
    wall: float  # the process, start to end
    model: float  # seconds asking the model (the card's run.seconds.model; generating, for the reference)
    loading: float
    peak_gb: float
    prompt_tokens: int
    completion_tokens: int
    answers: dict  # record id -> text


def run_measured(cmd: list[str], env: dict) -> tuple[float, float, str, str]:
    """Wall seconds, peak resident GB, stdout, stderr of one child process."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, env=env, cwd=REPO, stdout=out, stderr=err, text=True)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0), err.seek(0)
        stdout, stderr = out.read(), err.read()
    if proc.returncode != 0:
        sys.exit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{stderr[-3000:]}")
    return wall, usage.ru_maxrss / 1024 / 1024, stdout, stderr


def suite_command(model: str, engine: str, workload: str, n: int, data_root: str, out: Path) -> list[str]:
    task, extra = WORKLOADS[workload]
    # one cache per workload: the judges' measurements on their labelled sets are made once (warm_up), while the
    # model's answers are keyed by its config, the engine included, so every engine's are asked anew
    return [sys.executable, "-m", "benchmark", f"model={model}", f"model.backend={engine}", f"task={task}",
            f"limit={n}", f"data_root={data_root}", f"output_dir={out}", f"cache_dir={out.parent / workload}-cache",
            "progress=false", *extra]


def warm_up(workload: str, data_root: str, tmp: Path) -> None:
    """The judges' measurements into the workload's cache, by one record of another model."""
    run_measured(suite_command("smollm2-135m-instruct", "hf", workload, 1, data_root, tmp / f"warm-{workload}"),
                 dict(os.environ))


def suite(model: str, engine: str, workload: str, n: int, data_root: str, threads: int, tmp: Path) -> Measured:
    out = tmp / f"{model}-{engine}-{workload}"
    cmd = suite_command(model, engine, workload, n, data_root, out)
    if engine == "llama-cpp":
        cmd.append(f"+model.args.n_threads={threads}")
    env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
    wall, peak, _, _ = run_measured(cmd, env)
    card = json.loads((out / "scorecard.json").read_text())
    rows = [json.loads(x) for x in (out / "samples.jsonl").read_text().splitlines()]
    answers = {r["id"]: answer_of(r) for r in rows}
    tokens = card["run"]["tokens"]["model"]
    return Measured(wall, card["run"]["seconds"]["model"], card["run"]["seconds"].get("loading", 0.0), peak,
                    tokens["prompt"], tokens["completion"], answers)


def answer_of(row: dict) -> str:
    """The model's text in a sample: a classify answer's output, an attack's first response."""
    return row["output"] if "output" in row else row["responses"][0]["text"]


def messages_of(model: str, workload: str, n: int, data_root: str) -> dict[str, list[dict]]:
    from omegaconf import OmegaConf

    from benchmark.data import load_records
    from benchmark.kinds.common import render_messages
    from benchmark.composition import compose

    task = OmegaConf.to_object(compose([f"task={WORKLOADS[workload][0]}", f"data_root={data_root}"]).task)
    return {r["id"]: render_messages(task, r) for r in load_records(task, data_root).items[:n]}


def reference_child(args) -> None:
    """In its own process: llama.cpp alone over the messages in args.reference (a JSON file), printing a JSON line."""
    from llama_cpp import Llama

    job = json.loads(Path(args.reference).read_text())
    start = time.perf_counter()
    llm = Llama(model_path=job["gguf"], n_ctx=8192, n_threads=job["threads"], verbose=False)
    loading = time.perf_counter() - start
    answers, prompt, completion = {}, 0, 0
    start = time.perf_counter()
    for key, messages in job["messages"].items():
        out = llm.create_chat_completion(messages, max_tokens=job["new"], temperature=0.0, min_p=0.0,
                                         repeat_penalty=1.0)
        answers[key] = out["choices"][0]["message"]["content"]
        prompt += out["usage"]["prompt_tokens"]
        completion += out["usage"]["completion_tokens"]
    print(json.dumps({"loading": loading, "model": time.perf_counter() - start, "answers": answers,
                      "prompt": prompt, "completion": completion}))
    llm.close()


def reference(model: str, workload: str, n: int, data_root: str, threads: int, tmp: Path) -> Measured:
    from benchmark.models.llamacpp import gguf_path
    from benchmark.composition import compose

    cfg = compose([f"model={model}", "model.backend=llama-cpp"]).model
    new = 32 if workload == "classify" else 64
    job = tmp / f"{model}-{workload}-reference.json"
    job.write_text(json.dumps({"gguf": str(gguf_path(cfg)), "threads": threads, "new": new,
                               "messages": messages_of(model, workload, n, data_root)}))
    wall, peak, stdout, _ = run_measured([sys.executable, __file__, "--reference", str(job)], dict(os.environ))
    got = json.loads(stdout.strip().splitlines()[-1])
    return Measured(wall, got["model"], got["loading"], peak, got["prompt"], got["completion"], got["answers"])


def equal(a: dict, b: dict) -> str:
    keys = sorted(set(a) & set(b))
    return f"{sum(a[k].strip() == b[k].strip() for k in keys)}/{len(keys)}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", nargs="+", default=["qwen2.5-coder-0.5b-instruct", "qwen2.5-coder-1.5b-instruct"])
    ap.add_argument("--workloads", nargs="+", default=list(WORKLOADS), choices=list(WORKLOADS))
    ap.add_argument("--n", type=int, default=48)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--data-root", default=os.environ.get("BENCHMARK_DATA_ROOT", str(REPO.parent / "shared" / "data")))
    ap.add_argument("--reference", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.reference:
        return reference_child(args)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    print(f"{args.n} records, {args.threads} threads, greedy; each run in a process of its own, the model asked anew\n")
    head = (f"{'model':<30} {'workload':<9} {'engine':<16} {'wall s':>7} {'load s':>7} {'model s':>8} {'prompt':>7} "
            f"{'new':>5} {'tok/s':>6} "
            f"{'peak GB':>8} {'equal answers':>24} {'wall vs llama.cpp alone':>24}")
    print(head)
    with tempfile.TemporaryDirectory() as tmp:
        for workload in args.workloads:
            warm_up(workload, args.data_root, Path(tmp))
        for model in args.models:
            for workload in args.workloads:
                ref = reference(model, workload, args.n, args.data_root, args.threads, Path(tmp))
                runs = {e: suite(model, e, workload, args.n, args.data_root, args.threads, Path(tmp))
                        for e in ("hf", "llama-cpp")}
                lc = runs["llama-cpp"]
                rows = [("suite, hf", runs["hf"], f"{equal(runs['hf'].answers, lc.answers)} with llama-cpp"),
                        ("suite, llama-cpp", lc, f"{equal(lc.answers, ref.answers)} with alone"),
                        ("llama.cpp alone", ref, "")]
                for name, m, eq in rows:
                    rate = (m.prompt_tokens + m.completion_tokens) / m.model
                    print(f"{model:<30} {workload:<9} {name:<16} {m.wall:7.1f} {m.loading:7.1f} {m.model:8.1f} "
                          f"{m.prompt_tokens:7d} {m.completion_tokens:5d} {rate:6.1f} {m.peak_gb:8.2f} {eq:>24} "
                          f"{m.wall / ref.wall:23.2f}x")
                sys.stdout.flush()


if __name__ == "__main__":
    main()
