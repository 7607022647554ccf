"""The board as its first visitor after a restart sees it: a real Streamlit server and headless Chromium, with
synthetic cards (leaderboard_load.py's), served both ways: `streamlit run leaderboard/serve.py` (the server loads
the cards as soon as it starts) and `streamlit run leaderboard/app.py` (the first visit loads them).

For each way and each repeat, a fresh server on a store of check results kept by an earlier process; printed:
- start: from starting the server until it answers its health check;
- first visit, at once: from the browser's first request, made as soon as the server answers, until the
  overview's table shows its rows (serve.py: its loading, still under way, included);
- first visit, later: the same with the first request made once serve.py's loading is done (after --settle s);
- next visit: the same page loaded again (what every later visitor waits for, the browser's own work included).
The browser is started before the server and not timed. Needs Chromium and its driver (apt-get install -y chromium
chromium-driver). Asserts nothing.

    python benchmarks/leaderboard_browser.py [--sizes 1000] [--repeats 3] [--settle 10]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import leaderboard_load as L  # noqa: E402

BOARD = L.REPO / "leaderboard"
ROWS = '[data-testid="stDataFrame"] [role="gridcell"]'


def chromium():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    for arg in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--window-size=1400,1000"):
        options.add_argument(arg)
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def healthy(url: str) -> bool:
    """The server answers its health check: it takes visitors (a port can take connections before that)."""
    try:
        with urllib.request.urlopen(url + "_stcore/health", timeout=60) as r:
            return r.status == 200
    except OSError:
        return False


def shown(browser, url: str) -> float:
    """Seconds from asking for the page until the overview's table has rows."""
    from selenium.webdriver.support.ui import WebDriverWait

    t = time.perf_counter()
    browser.get(url)
    WebDriverWait(browser, 600, poll_frequency=0.02).until(lambda d: d.execute_script(
        "return [...document.querySelectorAll(arguments[0])].some(c => c.textContent)", ROWS))  # one round trip
    return time.perf_counter() - t


def visit(browser, script: Path, root: Path, store: Path, log: Path, settle: float) -> dict:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE" and not k.startswith("STREAMLIT_")}
    env.update(BENCHMARK_SUBMISSIONS=str(root), BENCHMARK_CHECKS=str(store))
    with open(log, "w") as out:
        t = time.perf_counter()
        server = subprocess.Popen([sys.executable, "-m", "streamlit", "run", str(script), "--server.port", str(port),
                                   "--server.headless", "true", "--browser.gatherUsageStats", "false"], env=env,
                                  stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            url = f"http://127.0.0.1:{port}/"
            while not healthy(url):
                if server.poll() is not None:
                    raise SystemExit(f"{script.name} stopped: {log.read_text()[-2000:]}")
                time.sleep(0.01)
            start = time.perf_counter() - t
            time.sleep(settle)
            return {"start": start, "first": shown(browser, url), "next": shown(browser, url)}
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(server.pid, signal.SIGTERM)
            server.wait(timeout=30)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--sizes", type=int, nargs="*", default=[1000])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--settle", type=float, default=10.0, help="seconds before the later first visit")
    args = p.parse_args()
    browser = chromium()
    results = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            for n in args.sizes:
                root, store = tmp / f"cards-{n}", tmp / f"checks-{n}.sqlite"
                root.mkdir()
                L.synthesize(root, n)
                L.S.load(root, thorough=True, data_root=os.environ.get("BENCHMARK_DATA_ROOT"), store=L.CheckStore(store))
                L.render(root, store, "plain")  # what each card can show, kept too, as after any earlier server
                for _ in range(args.repeats):  # interleaved, so that a busier moment falls on each
                    for script in (BOARD / "serve.py", BOARD / "app.py"):
                        for settle in (0.0, args.settle):
                            results.append((n, script.name, settle,
                                            visit(browser, script, root, store, tmp / "server.log", settle)))
    finally:
        browser.quit()
    print(f"{'cards':>6} {'served by':>9} {'start':>7} {'first visit, at once':>21} {'first visit, later':>19} "
          f"{'next visit':>11}   (medians)")
    for n in args.sizes:
        for name in ("serve.py", "app.py"):
            mine = [(settle, r) for m, s, settle, r in results if m == n and s == name]
            med = {k: statistics.median(r[k] for _, r in mine) for k in ("start", "next")}
            at_once = statistics.median(r["first"] for settle, r in mine if not settle)
            later = statistics.median(r["first"] for settle, r in mine if settle)
            print(f"{n:6d} {name:>9} {med['start']:6.2f}s {at_once:20.2f}s {later:18.2f}s {med['next']:10.2f}s")


if __name__ == "__main__":
    main()
