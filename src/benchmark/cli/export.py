"""A run in the formats other tools read, and a submission pushed to a dataset repository:

    python -m benchmark export inspect RUN_FOLDER [--out FILE.eval]   an Inspect AI eval log (`inspect view` shows it)
    python -m benchmark export lm-eval RUN_FOLDER [--out FOLDER]      lm-eval's results JSON (`results_<time>.json`)
    python -m benchmark export hub SUBMISSION_FOLDER --repo ORG/NAME  a Hugging Face dataset repo (huggingface_hub)

A run folder holds scorecard.json and samples.jsonl (results/<model>/<task>/<run>/). The Inspect log carries every
sample: its input, the model's output (each response of an attack, the turns of a dialogue), the gold label and the
verdict as a score; the lm-eval file carries the card's metrics, each interval as a standard error (its half-width
over 1.96), and the configs.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..submissions.export import to_hub, to_inspect, to_lm_eval


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmark export")
    sub = p.add_subparsers(dest="format", required=True)
    for name in ("inspect", "lm-eval"):
        one = sub.add_parser(name)
        one.add_argument("run_folder", type=Path)
        one.add_argument("--out", type=Path, default=None)
    hub = sub.add_parser("hub")
    hub.add_argument("submission_folder", type=Path)
    hub.add_argument("--repo", required=True, help="ORG/NAME of a dataset repository")
    hub.add_argument("--endpoint", default=None, help="another Hub than huggingface.co (default: $HF_ENDPOINT)")
    args = p.parse_args(argv)
    if args.format == "inspect":
        print(f"wrote {to_inspect(args.run_folder, args.out)} (open it with `inspect view`)")
    elif args.format == "lm-eval":
        print(f"wrote {to_lm_eval(args.run_folder, args.out)}")
    else:
        print(f"pushed {args.submission_folder} to {to_hub(args.submission_folder, args.repo, None, args.endpoint)}")
    return 0
