"""`python -m benchmark view [FOLDER]`: the leaderboard's pages over your own run folders;
`python -m benchmark export inspect|lm-eval RUN_FOLDER [--out PATH]`, `export hub SUBMISSION_FOLDER --repo ID`:
a run in the formats other tools read, a submission pushed to a Hugging Face dataset repository."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from .. import BenchmarkError
from ..paths import LEADERBOARD_APP
from .export import main as export


def view(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmark view",
                                description="The leaderboard's pages over your run folders (limited runs included)")
    p.add_argument("folder", nargs="?", default="results", type=Path)
    p.add_argument("--port", type=int, default=8501)
    p.add_argument("--address", default="127.0.0.1",
                   help="the address to listen on (default 127.0.0.1: this machine only; 0.0.0.0: every network "
                        "interface, so anyone who can reach this machine sees your runs)")
    p.add_argument("--no-browser", action="store_true", help="serve only; open the address yourself")
    args = p.parse_args(argv)
    folder = args.folder.expanduser().resolve()
    if not folder.is_dir() or not any(folder.rglob("scorecard.json")):
        raise BenchmarkError(f"{args.folder}: no run folder (no scorecard.json) under it; run something first, or "
                             "name the folder your runs went to")
    command = [sys.executable, "-m", "streamlit", "run", str(LEADERBOARD_APP), "--server.port", str(args.port),
               "--server.address", args.address, "--server.headless", str(args.no_browser).lower(),
               "--browser.gatherUsageStats", "false"]
    host = "localhost" if args.address in ("127.0.0.1", "localhost") else args.address
    print(f"your runs in {folder}: http://{host}:{args.port} (Ctrl-C stops)", flush=True)
    try:
        return subprocess.call(command, env={**os.environ, "BENCHMARK_RUNS": str(folder)})
    except KeyboardInterrupt:
        return 0


def main(command: str, argv: list[str]) -> int:
    if command == "view":
        return view(argv)

    return export(argv)
