"""How fast the suite generates with a real model on a CPU, against the references, in one process.

    python benchmarks/generation_speed.py [--model smollm2-135m-instruct] [--task diasafety] [--data-root ../shared/data]
                                          [--n 200] [--batch-size 16] [--new 32]

On the same prompts of the task (its first n records, chat-templated as the task renders them), the same batch size and
max_new_tokens, greedy:
  raw       transformers' model.generate over length-sorted, left-padded batches (the reference)
  lm-eval   lm-eval's HFLM.generate_until (the suite's generation path before the shared-prefix cache)
  suite     the whole run (python -m benchmark's `run`: templating, cache, samples, scoring) with a fresh cache,
            the model already loaded
and, for the suite's generator alone, where the time goes (prefill: max_new_tokens=1) and float32 against bfloat16.
Tokens are counted as the tokenizer encodes each answer. Prints figures and ratios; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
def prompts(task_name: str, n: int, data_root: str, tokenizer) -> list[str]:
    from omegaconf import OmegaConf

    from benchmark.data import load_records
    from benchmark.kinds.common import render_messages
    from benchmark.composition import compose

    task = OmegaConf.to_object(compose([f"task={task_name}"]).task)
    records = load_records(task, data_root).items[:n]
    return [tokenizer.apply_chat_template(render_messages(task, r), add_generation_prompt=True, tokenize=False)
            for r in records]


def tokens(tokenizer, answers: list[str]) -> int:
    return sum(len(tokenizer(a, add_special_tokens=False)["input_ids"]) for a in answers)


def raw_generate(model, tok, texts: list[str], batch: int, new: int) -> tuple[float, list[str]]:
    import torch

    tok.padding_side = "left"
    order = sorted(range(len(texts)), key=lambda i: -len(tok(texts[i], add_special_tokens=False)["input_ids"]))
    out = [""] * len(texts)
    start = time.perf_counter()
    for b in range(0, len(order), batch):
        rows = order[b: b + batch]
        enc = tok([texts[i] for i in rows], return_tensors="pt", padding=True, add_special_tokens=False)
        with torch.inference_mode():
            gen = model.generate(**enc, max_new_tokens=new, do_sample=False, pad_token_id=tok.pad_token_id)
        for i, text in zip(rows, tok.batch_decode(gen[:, enc["input_ids"].shape[1]:], skip_special_tokens=True)):
            out[i] = text
    return time.perf_counter() - start, out


def lm_eval_generate(lm, texts: list[str], new: int) -> tuple[float, list[str]]:
    from lm_eval.api.instance import Instance

    requests = [Instance(request_type="generate_until", doc={}, idx=i,
                         arguments=(t, {"until": [], "max_gen_toks": new, "do_sample": False, "temperature": 0.0}))
                for i, t in enumerate(texts)]
    start = time.perf_counter()
    out = lm.generate_until(requests, disable_tqdm=True)
    return time.perf_counter() - start, out


def suite_run(model: str, task: str, data_root: str, n: int, batch: int, new: int,
              work: Path) -> tuple[float, list[str]]:
    """The runner end to end on the first n records, the model loaded beforehand (a kept backend)."""
    from benchmark.run.runner import run
    from benchmark.composition import compose

    common = [f"model={model}", f"task={task}", f"data_root={data_root}", f"model.batch_size={batch}",
              f"model.generation.max_new_tokens={new}", "progress=false", f"results_dir={work}"]
    run(compose([*common, "limit=1", f"cache_dir={work / 'warm'}"]))  # loads the model, kept for the next run
    start = time.perf_counter()
    card, path = run(compose([*common, f"limit={n}", f"cache_dir={work / 'fresh'}"]))
    wall = time.perf_counter() - start
    samples = [json.loads(line) for line in (path.parent / "samples.jsonl").read_text().splitlines()]
    assert card["run"]["model_calls"] == n
    return wall, [s["output"] for s in samples]


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="smollm2-135m-instruct", help="a model config with GGUF weights (conf/model)")
    p.add_argument("--task", default="diasafety", help="a classify task whose prompts are generated from")
    p.add_argument("--data-root", default=os.environ.get("BENCHMARK_DATA_ROOT", str(REPO.parent / "shared/data")))
    p.add_argument("--n", type=int, default=200)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--new", type=int, default=32)
    args = p.parse_args()

    import torch

    from benchmark.models import load_backend
    from benchmark.models.generation import PrefixCachedGenerator
    from benchmark.models.weights import dequantised
    from benchmark.composition import compose

    cfg = compose([f"model={args.model}"]).model
    folder = dequantised(cfg)
    lm = load_backend(cfg, False).lm  # lm-eval's HFLM over the dequantised checkpoint, as the suite loads it
    lm.batch_size_per_gpu = args.batch_size
    model, tok = lm.model, lm.tokenizer
    texts = prompts(args.task, args.n, args.data_root, tok)
    encoded = [lm.tok_encode(t) for t in texts]
    print(f"{args.model}: {sum(p.numel() for p in model.parameters()) / 1e6:.1f}M parameters, {model.dtype}, "
          f"torch {torch.__version__} on {torch.get_num_threads()} threads; {args.n} {args.task} prompts of "
          f"{sum(map(len, encoded)) / len(encoded):.0f} tokens on average, batch {args.batch_size}, "
          f"{args.new} new tokens, greedy")

    raw_s, raw_out = raw_generate(model, tok, texts, args.batch_size, args.new)
    lme_s, lme_out = lm_eval_generate(lm, texts, args.new)
    with tempfile.TemporaryDirectory() as tmp:
        suite_s, suite_out = suite_run(args.model, args.task, args.data_root, args.n, args.batch_size, args.new,
                                       Path(tmp))
    rows = [("raw model.generate", raw_s, raw_out), ("lm-eval generate_until", lme_s, lme_out),
            ("suite (whole run, fresh cache)", suite_s, suite_out)]
    print(f"\n{'path':<34} {'seconds':>8} {'tokens':>7} {'tokens/s':>9} {'ratio to raw':>13} {'same answers':>13}")
    raw_rate = tokens(tok, raw_out) / raw_s
    for name, seconds, out in rows:
        n_tok = tokens(tok, out)
        same = sum(a == b for a, b in zip(out, raw_out))
        print(f"{name:<34} {seconds:8.1f} {n_tok:7d} {n_tok / seconds:9.1f} {n_tok / seconds / raw_rate:13.2f} "
              f"{same:>9d}/{len(out)}")

    print("\nthe suite's generator alone, where the time goes:")
    gen = PrefixCachedGenerator(model, tok, args.batch_size, lm.max_length)
    for new in (1, args.new):
        start = time.perf_counter()
        gen.generate(encoded, {"max_new_tokens": new, "do_sample": False})
        print(f"  max_new_tokens={new:<3} {time.perf_counter() - start:6.1f} s" +
              ("  (prefill of the prompts' own tails, the shared prefix once)" if new == 1 else ""))
    from transformers import AutoModelForCausalLM

    half = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.bfloat16).eval()
    gen_half = PrefixCachedGenerator(half, tok, args.batch_size, lm.max_length)
    start = time.perf_counter()
    half_out = gen_half.generate(encoded, {"max_new_tokens": args.new, "do_sample": False})
    half_s = time.perf_counter() - start
    full_out = gen.generate(encoded, {"max_new_tokens": args.new, "do_sample": False})
    print(f"  bfloat16 weights: {half_s:6.1f} s, {tokens(tok, half_out) / half_s:.1f} tokens/s; answers equal to "
          f"float32's: {sum(a == b for a, b in zip(half_out, full_out))}/{len(full_out)}")


if __name__ == "__main__":
    sys.path.insert(0, str(REPO / "src"))
    main()
