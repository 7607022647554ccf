"""Publishing score cards.

    python -m benchmark.submit RUN_DIR [--to submissions] [--replace]   package a finished run into submissions/<model>/
    python -m benchmark.submit validate [PATH ...] [--data-root DIR]    check submissions (default: the whole folder)
    python -m benchmark.submit verify CARD [--n 20] [--judge-sample 200] [--endpoint ROLE=URL] [--key-env ROLE=VAR]
                                   [--key PEM]                           re-run a random sample of a card's records
    python -m benchmark.submit recall CARD [--cache-dir DIR]             a card's answers into this machine's cache
    python -m benchmark.submit pin TASK [--data-root DIR]                derive a task's `pinned:` values from its data
    python -m benchmark.submit keygen PATH                               a verifier's key pair
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import yaml

from .. import BenchmarkError, submissions as S
from ..run.runner import pins
from ..submissions.package import package, validate
from ..submissions.recall import recall
from ..submissions.signing import keygen
from ..submissions.verify import verify


def _pairs(values: list[str], flag: str) -> dict[str, str]:
    out = {}
    for v in values or []:
        role, sep, value = v.partition("=")
        if not sep or not role or not value:
            raise BenchmarkError(f"{flag} {v!r}: give ROLE=VALUE (ROLE: model, attacker or judge:VOTER)")
        out[role] = value
    return out


COMMANDS = ("package", "validate", "verify", "recall", "pin", "keygen")


def _parser(command: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=f"python -m benchmark.submit {command}")
    data_root = os.environ.get("BENCHMARK_DATA_ROOT")
    if command == "package":
        p.add_argument("run_dir", type=Path, help="a finished run's folder (holds scorecard.json)")
        p.add_argument("--to", type=Path, default=S.SUBMISSIONS_DIR, help="the submissions folder")
        p.add_argument("--data-root", default=data_root)
        p.add_argument("--replace", action="store_true", help="replace a verified (signed) card of the same task")
    elif command == "validate":
        p.add_argument("paths", type=Path, nargs="*", default=[S.SUBMISSIONS_DIR])
        p.add_argument("--data-root", default=data_root,
                       help="the data sets: names the records whose gold labels or groups differ from the data's")
        p.add_argument("--allow-remote-code", action="store_true",
                       help="accept trust_remote_code: true (after a maintainer reviewed that code)")
    elif command == "pin":
        p.add_argument("task", help="a task's name")
        p.add_argument("--data-root", default=data_root)
    elif command == "keygen":
        p.add_argument("path", type=Path, help="where the new private key goes (keep it out of the repository)")
    elif command == "recall":
        p.add_argument("card", type=Path)
        p.add_argument("--data-root", default=data_root)
        p.add_argument("--cache-dir", type=Path, default=Path("results/.cache"),
                       help="the response cache a rebuild reads (a run's cache_dir; default results/.cache)")
    else:
        p.add_argument("card", type=Path)
        p.add_argument("--n", type=int, default=20, help="records to re-run")
        p.add_argument("--judge-sample", type=int, default=200,
                       help="rows of each labelled set re-asked of the judges, against the shipped validity record "
                            "their figures came from (0: every row)")
        p.add_argument("--seed", type=int, default=None, help="which records (default: drawn at random)")
        p.add_argument("--min-agreement", type=float, default=0.95)
        p.add_argument("--data-root", default=data_root)
        p.add_argument("--allow-remote-code", action="store_true")
        p.add_argument("--endpoint", action="append", metavar="ROLE=URL",
                       help="the chat completions URL of a role called over HTTP (model, attacker, judge:VOTER)")
        p.add_argument("--key-env", action="append", metavar="ROLE=VARIABLE",
                       help="the environment variable holding that endpoint's key")
        p.add_argument("--key", type=Path, default=os.environ.get("BENCHMARK_VERIFIER_KEY"),
                       help="a verifier's private key: sign the result into the card (default: "
                            "$BENCHMARK_VERIFIER_KEY; without one the result is only printed)")
    return p


def _command(command: str, args) -> int:
    if command == "package":
        out, replaced = package(args.run_dir, args.to, args.data_root, args.replace)
        if replaced is not None:
            print(f"replaced the card {replaced} (and its samples)")
        print(f"packaged {out} (and {out.parent / S.MODEL_FILE}); it validates")
    elif command == "validate":
        valid, problems = validate(args.paths, args.allow_remote_code, args.data_root)
        for problem in problems:
            print(f"rejected: {problem}")
        print(f"{valid} valid score card(s), {len(problems)} problem(s)")
        return 1 if problems or not valid else 0
    elif command == "pin":
        block = {"pinned": pins(args.task, args.data_root)}
        print(yaml.safe_dump(block, sort_keys=False, default_flow_style=None), end="")
    elif command == "recall":
        n = recall(args.card, args.data_root, args.cache_dir)
        print(f"{args.card}: {n} recorded answers in the response cache {args.cache_dir}; a run of its model and task "
              "now asks the model only for the rest")
    elif command == "keygen":
        entry = keygen(args.path)
        print(f"private key written to {args.path}; add this public key to submissions/verifier_keys.json: "
              f"{entry}")
    else:
        r = verify(args.card, args.n, args.seed, args.data_root, args.min_agreement, args.allow_remote_code,
                   args.key, _pairs(args.endpoint, "--endpoint"), _pairs(args.key_env, "--key-env"), args.judge_sample)
        state = "verified" if r.verified else "NOT verified"
        print(f"{args.card}: {state}: {r.n} records re-run (seed {r.seed}), verdicts agree on "
              f"{100 * r.verdict_agreement:.1f}%, outputs identical on {100 * r.output_agreement:.1f}%, "
              f"{r.failed} failed, {r.reference_mismatches} with other gold labels, groups or matching, "
              f"{r.judgement_mismatches} judged otherwise on the same outputs"
              + (f", the shipped judge record {'agrees' if r.judge_records_agree else 'DIFFERS'} on "
                 f"{sum(v.n for v in r.judge_records.values() if not isinstance(v, str))} re-asked rows"
                 if r.judge_records is not None else "")
              + ("; signed into the card" if args.key else "; not written (no --key)"))
        return 0 if r.verified else 1
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command = argv.pop(0) if argv and argv[0] in COMMANDS else "package"
    args = _parser(command).parse_args(argv)
    try:
        return _command(command, args)
    except BenchmarkError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
