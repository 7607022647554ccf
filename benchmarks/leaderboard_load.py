"""How long the leaderboard's overview takes to open with 10, 100, 1,000 and 10,000 score cards, and with the real folder.

Synthetic cards are the published ones copied under new model names (the samples files hard-linked), so every card
passes the same checks as a real one. The board checks every card in full (its metrics derived again from its
samples) and keeps the results by content (submissions/checked.py). For each size it prints:

- checking with nothing kept (a board's very first start, or `python -m benchmark.submit validate`): every card
  checked, each distinct samples file scored once;
- a fresh server's start (its own process: Streamlit imported and started, through its AppTest), then its first
  render with the results kept by an earlier process (the store read from disk, every file's identity looked at,
  the overview built from the cards' kept summaries, the app's own imports) and a rerun (Streamlit's cached load),
  two ways: as `streamlit run leaderboard/serve.py` serves the board (the server imports what the pages draw with
  and loads the cards as soon as it starts: cards.warm, counted in its start here, so its first render is that of
  a visitor who comes once that is done), and as `streamlit run leaderboard/app.py` does (all of it in the first
  render). The first render is what the first visitor after a restart waits for.

    python benchmarks/leaderboard_load.py [--sizes 10 100 1000 10000]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from benchmark import submissions as S  # noqa: E402
from benchmark.submissions import configs  # noqa: E402
from benchmark.submissions.checked import CheckStore  # noqa: E402

APP = REPO / "leaderboard" / "app.py"


def synthesize(root: Path, n: int) -> None:
    """n cards: the published model folders copied round-robin under new names, one card each."""
    sources = [(folder, card) for folder in sorted(S.SUBMISSIONS_DIR.iterdir()) if folder.is_dir()
               for card in sorted(folder.glob("*.json"))]
    for i in range(n):
        folder, card_path = sources[i % len(sources)]
        name = f"{folder.name}-copy{i:05d}"
        out = root / name
        out.mkdir()
        model = configs.read_yaml(folder / S.MODEL_FILE)
        model["name"] = name
        (out / S.MODEL_FILE).write_text(yaml.safe_dump(model, sort_keys=False))
        card = json.loads(card_path.read_text())
        card.pop("verification", None)
        card["model"]["name"], card["model"]["config"] = name, model
        (out / card_path.name).write_text(json.dumps(card))
        samples = folder / card["samples"]["file"]
        os.link(samples, out / samples.name)


# A fresh server process: Streamlit imported and started (it scans every installed package for components once, at
# start, before any visitor), then the board's first render and a rerun. AppTest scans again for each new app, so
# the server's one scan is handed to the board's app as a running server's would be. "served": the server also gets
# the board ready as soon as it starts, as serve.py's lifespan does (cards.warm), and its first visitor comes after.
SERVER = """
import json, os, sys, time
t = time.perf_counter()
from streamlit import config
from streamlit.testing.v1 import AppTest
config._main_script_path = sys.argv[1]  # as `streamlit run` does: the config beside the app is read
config.get_config_options(force_reparse=True)
ready = AppTest.from_string("import streamlit as st\\nst.write('ready')")
ready.run()
if sys.argv[2] == "served":
    sys.path[:0] = [os.path.dirname(sys.argv[1]), os.path.join(os.path.dirname(sys.argv[1]), "..", "src")]
    from cards import warm
    warm()
start = time.perf_counter() - t
at = AppTest.from_file(sys.argv[1], default_timeout=1800)
at._bidi_component_manager = ready._bidi_component_manager
t = time.perf_counter()
at.run()
first = time.perf_counter() - t
assert not at.exception, at.exception
t = time.perf_counter()
at.run()
rerun = time.perf_counter() - t
shown = len(at.dataframe[0].value) if at.dataframe else 0
print(json.dumps({"start_s": start, "first_render_s": first, "rerun_s": rerun, "rows": shown}))
"""


def render(root: Path, store: Path, how: str) -> dict:
    """A fresh server on root, in its own process ("served" as serve.py, or "plain" as app.py alone): its start, the
    first render and a rerun, in seconds."""
    # as a server runs: modules' bytecode cached beside them (an environment that turns that off would compile the
    # board's and the suite's modules from source at every first render, which no installed server does)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(BENCHMARK_SUBMISSIONS=str(root), BENCHMARK_CHECKS=str(store))
    out = subprocess.run([sys.executable, "-c", SERVER, str(APP), how], env=env, capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(f"the board failed on {root}:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure(root: Path, store_dir: Path) -> dict:
    store = store_dir / f"{root.name}.sqlite"
    t = time.perf_counter()
    loaded = S.load(root, thorough=True, data_root=os.environ.get("BENCHMARK_DATA_ROOT"), store=CheckStore(store))
    check_s = time.perf_counter() - t  # nothing kept yet: every card checked, the results kept
    render(root, store, "plain")  # the first server after the check: what a card can show is kept too
    return {"cards": len(loaded.cards), "rejected": len(loaded.rejected), "check_s": check_s,
            "served": render(root, store, "served"), "plain": render(root, store, "plain")}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--sizes", type=int, nargs="*", default=[10, 100, 1000, 10000])
    args = p.parse_args()
    t = time.perf_counter()
    S.task_registry()
    print(f"composing the task registry: {time.perf_counter() - t:.2f} s (once per server process; then kept)\n")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        stores = Path(tmp) / "stores"
        stores.mkdir()
        rows.append(("the real submissions/", measure(S.SUBMISSIONS_DIR, stores)))
        for n in args.sizes:
            root = Path(tmp) / f"cards-{n}"
            root.mkdir()
            synthesize(root, n)
            rows.append((f"{n} synthetic cards", measure(root, stores)))
            shutil.rmtree(root)
    print(f"{'':43} {'':17} {'serve.py (visited once loaded)':^35} {'app.py alone':^28}")
    print(f"{'folder':24} {'cards':>6} {'rejected':>8} {'check, none kept':>17} {'start':>8} {'first render':>13} "
          f"{'rerun':>7}    {'start':>8} {'first render':>13} {'rerun':>7}")
    for name, r in rows:
        s, p = r["served"], r["plain"]
        print(f"{name:24} {r['cards']:6d} {r['rejected']:8d} {r['check_s']:16.2f}s {s['start_s']:7.2f}s "
              f"{s['first_render_s']:12.2f}s {s['rerun_s']:6.2f}s    {p['start_s']:7.2f}s {p['first_render_s']:12.2f}s "
              f"{p['rerun_s']:6.2f}s")
    print("\ngoals: first render <= 1 s for 1,000 cards and <= 5 s for 10,000")


if __name__ == "__main__":
    main()
