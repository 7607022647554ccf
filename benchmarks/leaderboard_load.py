"""How long the leaderboard's overview takes to load with 10, 100 and 1,000 score cards, and with the real folder.

Synthetic cards are the published ones copied under new model names (the samples files hard-linked), so every
card passes the same checks as a real one. For each size it prints: the validation load alone, the app's first
render (cold: loads and validates every card) and a rerun (the cached load), through Streamlit's AppTest.

    python benchmarks/leaderboard_load.py [--sizes 10 100 1000]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from benchmark import submissions as S  # noqa: E402
from benchmark.submissions import configs  # noqa: E402

APP = REPO / "leaderboard" / "app.py"


def synthesize(root: Path, n: int) -> None:
    """n cards: the published model folders copied round-robin under new names, one card each."""
    sources = [(folder, card) for folder in sorted(S.SUBMISSIONS_DIR.iterdir()) if folder.is_dir()
               for card in sorted(folder.glob("*.json"))]
    for i in range(n):
        folder, card_path = sources[i % len(sources)]
        name = f"{folder.name}-copy{i:04d}"
        out = root / name
        out.mkdir()
        model = configs.read_yaml(folder / S.MODEL_FILE)
        model["name"] = name
        (out / S.MODEL_FILE).write_text(yaml.safe_dump(model, sort_keys=False))
        card = json.loads(card_path.read_text())
        card.pop("verification", None)
        card["model"]["name"], card["model"]["config"] = name, model
        for key in card["metrics"]:  # spread the values a little, inside their CIs
            m = card["metrics"][key]
            m["value"] = m["ci_low"] + (m["ci_high"] - m["ci_low"]) * ((i * 37) % 100) / 100
        (out / card_path.name).write_text(json.dumps(card))
        samples = folder / card["samples"]["file"]
        os.link(samples, out / samples.name)


def measure(root: Path) -> dict:
    from streamlit.testing.v1 import AppTest

    S.task_registry.cache_clear()
    S.task_registry()  # composed once per process; timed separately below
    t = time.perf_counter()
    loaded = S.load(root)
    validate_s = time.perf_counter() - t
    os.environ["BENCHMARK_SUBMISSIONS"] = str(root)
    at = AppTest.from_file(str(APP), default_timeout=600)
    t = time.perf_counter()
    at.run()
    cold_s = time.perf_counter() - t
    assert not at.exception, at.exception
    t = time.perf_counter()
    at.run()
    warm_s = time.perf_counter() - t
    return {"cards": len(loaded.cards), "rejected": len(loaded.rejected), "validate_s": validate_s,
            "first_render_s": cold_s, "rerun_s": warm_s, "rows": len(at.dataframe[0].value)}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--sizes", type=int, nargs="*", default=[10, 100, 1000])
    args = p.parse_args()
    t = time.perf_counter()
    S.task_registry()
    print(f"composing the task registry: {time.perf_counter() - t:.2f} s (once per server process)\n")
    rows = [("the real submissions/", measure(S.SUBMISSIONS_DIR))]
    for n in args.sizes:
        with tempfile.TemporaryDirectory() as tmp:
            synthesize(Path(tmp), n)
            rows.append((f"{n} synthetic cards", measure(Path(tmp))))
    print(f"{'folder':24} {'cards':>6} {'rejected':>8} {'validate':>9} {'first render':>13} {'rerun':>7} "
          f"{'ms/card':>8}")
    for name, r in rows:
        print(f"{name:24} {r['cards']:6d} {r['rejected']:8d} {r['validate_s']:8.2f}s {r['first_render_s']:12.2f}s "
              f"{r['rerun_s']:6.2f}s {1000 * r['validate_s'] / max(r['cards'], 1):8.1f}")


if __name__ == "__main__":
    main()
