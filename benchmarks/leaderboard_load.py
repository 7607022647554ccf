"""How long the leaderboard's overview takes to open with 10, 100, 1,000 and 10,000 score cards, and with the real folder.

Synthetic cards are the published ones copied under new model names (the samples files hard-linked), so every card
passes the same checks as a real one. The board checks every card in full (its metrics derived again from its
samples) and keeps the results by content (submissions/checked.py). For each size it prints, through Streamlit's
AppTest in this process:

- checking with nothing kept (a board's very first start, or `python -m benchmark.submit validate`): every card
  checked, each distinct samples file scored once;
- the first render of a fresh server with the results kept by an earlier process (the store read from disk, every
  file's identity looked at, every card read): what a visitor waits for after a restart;
- a rerun (Streamlit's cached load).

    python benchmarks/leaderboard_load.py [--sizes 10 100 1000 10000]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
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


def render(root: Path, store: Path) -> tuple[float, float]:
    """A fresh app on root: its first render and a rerun, in seconds."""
    from streamlit.testing.v1 import AppTest

    os.environ["BENCHMARK_SUBMISSIONS"], os.environ["BENCHMARK_CHECKS"] = str(root), str(store)
    at = AppTest.from_file(str(APP), default_timeout=1800)
    t = time.perf_counter()
    at.run()
    first = time.perf_counter() - t
    assert not at.exception, at.exception
    t = time.perf_counter()
    at.run()
    return first, time.perf_counter() - t


def measure(root: Path, store_dir: Path) -> dict:
    import streamlit as st

    store = store_dir / f"{root.name}.sqlite"
    t = time.perf_counter()
    loaded = S.load(root, thorough=True, data_root=os.environ.get("BENCHMARK_DATA_ROOT"), store=CheckStore(store))
    check_s = time.perf_counter() - t  # nothing kept yet: every card checked, the results kept
    st.cache_data.clear()  # a fresh server: nothing in Streamlit's cache, the check results on disk
    first_s, rerun_s = render(root, store)
    return {"cards": len(loaded.cards), "rejected": len(loaded.rejected), "check_s": check_s,
            "first_render_s": first_s, "rerun_s": rerun_s}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--sizes", type=int, nargs="*", default=[10, 100, 1000, 10000])
    args = p.parse_args()
    t = time.perf_counter()
    S.task_registry()
    print(f"composing the task registry: {time.perf_counter() - t:.2f} s (once per server process)\n")
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
    print(f"{'folder':24} {'cards':>6} {'rejected':>8} {'check, none kept':>17} {'first render, kept':>19} "
          f"{'rerun':>7} {'ms/card first render':>21}")
    for name, r in rows:
        print(f"{name:24} {r['cards']:6d} {r['rejected']:8d} {r['check_s']:16.2f}s {r['first_render_s']:18.2f}s "
              f"{r['rerun_s']:6.2f}s {1000 * r['first_render_s'] / max(r['cards'], 1):21.2f}")


if __name__ == "__main__":
    main()
