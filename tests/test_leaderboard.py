"""The leaderboard: each page through Streamlit's AppTest, then the real app in a headless Chromium."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from benchmark import submissions as S

REPO = Path(__file__).resolve().parents[1]
APP = REPO / "leaderboard" / "app.py"
PUBLISHED = ["profanity-check", "diasafety-detector", "blenderbot-small", "dialogpt-small", "ricota-solar"]
HOSTILE = "<img src=x onerror=alert(1)>"
ARTIFACTS = Path(os.environ.get("BENCHMARK_TEST_ARTIFACTS", REPO / "results" / "test-artifacts"))


def _copy_as(src: Path, dst: Path, name: str, organisation: str | None = None) -> None:
    """A published folder under another model name (its verification no longer applies)."""
    dst.mkdir(parents=True)
    for f in src.iterdir():
        shutil.copy(f, dst / f.name)
    model = S.read_yaml(dst / S.MODEL_FILE)
    model["name"] = name
    if organisation:
        model["metadata"]["organisation"] = organisation
    import yaml

    (dst / S.MODEL_FILE).write_text(yaml.safe_dump(model, sort_keys=False))
    for card_path in dst.glob("*.json"):
        card = json.loads(card_path.read_text())
        card.pop("verification", None)
        card["model"]["name"], card["model"]["config"] = name, model
        card["model"]["metadata"] = model["metadata"]
        card_path.write_text(json.dumps(card))


def _dialogue_card(src: Path, dst: Path) -> None:
    """A toxicchat card made by hand for the activation-by-turn chart (the suite has no published one yet)."""
    _copy_as(src, dst, dst.name)
    (dst / "diasafety.json").rename(dst / "toxicchat.json")
    (dst / "diasafety.samples.jsonl.gz").unlink()
    samples = [{"id": f"seed:{i}", "turns": [{"turn": 1, "attacker": "hi", "target": "hello", "verdict": "none"}],
                "activated_turn": [None, 1, 3][i % 3], "error": None} for i in range(30)]
    sha = S.write_samples(samples, dst / "toxicchat.samples.jsonl.gz")
    card = json.loads((dst / "toxicchat.json").read_text())
    card["task"].update(name="toxicchat", kind="dialogue_attack", headline="activation_rate")
    card["dataset"]["n"] = 30
    card["samples"] = {"file": "toxicchat.samples.jsonl.gz", "sha256": sha, "n": 30}
    card["breakdown"] = {}
    curve = {1: 10 / 30, 2: 10 / 30, 3: 20 / 30, 4: 20 / 30, 5: 20 / 30}
    card["metrics"] = {"activation_rate": {"value": 20 / 30, "ci_low": 0.5, "ci_high": 0.8, "n": 30}}
    for turn, v in curve.items():
        card["metrics"][f"activation_rate.by_turn.{turn}"] = {"value": v, "ci_low": v - 0.1, "ci_high": v + 0.1,
                                                              "n": 30}
    (dst / "toxicchat.json").write_text(json.dumps(card))


@pytest.fixture(scope="module")
def fixture_root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("submissions")
    for name in PUBLISHED:
        shutil.copytree(S.SUBMISSIONS_DIR / name, root / name)
    _copy_as(root / "profanity-check", root / HOSTILE, HOSTILE, organisation="**bold** <script>alert(2)</script>")
    _dialogue_card(root / "profanity-check", root / "dialogue-fixture")
    _copy_as(root / "profanity-check", root / "broken-card", "broken-card")
    (root / "broken-card" / "diasafety.json").write_text("{ this is not json")
    _copy_as(root / "profanity-check", root / "code-config", "code-config")
    with open(root / "code-config" / S.MODEL_FILE, "a") as f:
        f.write("_target_: os.system\n")
    return root


@pytest.fixture
def app(fixture_root, monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("BENCHMARK_SUBMISSIONS", str(fixture_root))
    monkeypatch.delenv("BENCHMARK_DATA_ROOT", raising=False)
    at = AppTest.from_file(str(APP), default_timeout=120)
    return at


def headline(root: Path, model: str, task: str) -> float:
    card = json.loads((root / model / f"{task}.json").read_text())
    head = S.task_registry()[task]["headline"]
    return 100 * card["metrics"][head]["value"]


def test_overview_shows_each_models_headlines_and_blank_missing_cells(app, fixture_root):
    at = app.run()
    assert not at.exception
    frame = at.dataframe[0].value
    assert set(frame["model"]) == {*PUBLISHED, HOSTILE, "dialogue-fixture"}
    by_model = frame.set_index("model")
    col = "diasafety · macro_f1 ↑"
    assert by_model.loc["diasafety-detector", col] == pytest.approx(headline(fixture_root, "diasafety-detector",
                                                                              "diasafety"))
    assert by_model.loc["blenderbot-small", "diasafety_chatbot · unsafe_rate ↓"] == pytest.approx(
        headline(fixture_root, "blenderbot-small", "diasafety_chatbot"))
    assert pd.isna(by_model.loc["blenderbot-small", col])  # no card: blank, not zero
    assert by_model.loc["blenderbot-small", "diasafety · 95% CI"] == ""
    table = at.dataframe[0].proto
    assert table.HasField("placeholder") and table.placeholder == ""  # shown as an empty cell, not "None"
    assert by_model.loc["diasafety-detector", "diasafety · 95% CI"].startswith("[")
    # sorted by the first task's headline, best first (macro F1: higher is better)
    ranked = frame[col].dropna().tolist()
    assert ranked == sorted(ranked, reverse=True)


def test_filters_change_the_rows(app):
    at = app.run()
    at.multiselect(key="f_language").set_value(["ko"]).run()
    frame = at.dataframe[0].value
    assert list(frame["model"]) == ["ricota-solar"]
    assert [c for c in frame.columns if "·" in c] == ["ricota · test_purpose.macro_f1 ↑", "ricota · 95% CI"]
    at.multiselect(key="f_language").set_value([]).run()
    at.selectbox(key="f_open").set_value("no").run()
    assert list(at.dataframe[0].value["model"]) == ["ricota-solar"]
    at.selectbox(key="f_open").set_value("any").run()
    at.multiselect(key="f_size").set_value(["10–100B"]).run()
    assert list(at.dataframe[0].value["model"]) == ["ricota-solar"]  # 10.7B
    at.multiselect(key="f_size").set_value(["< 1B"]).run()
    assert "ricota-solar" not in set(at.dataframe[0].value["model"])
    at.multiselect(key="f_size").set_value([]).run()
    at.checkbox(key="f_verified").check().run()
    assert HOSTILE not in set(at.dataframe[0].value["model"])  # its copied card is not verified


def test_malformed_cards_are_listed_and_the_page_still_renders(app):
    at = app.run()
    assert not at.exception and len(at.dataframe) >= 1
    rejected = [t.value for t in at.sidebar.text]
    assert any("broken-card" in r and "not a readable JSON score card" in r for r in rejected), rejected
    assert any("code-config" in r and "_target_" in r for r in rejected), rejected
    assert any("problem(s) with submitted cards" in w.value for w in at.warning)


def test_html_in_a_model_name_is_shown_as_text(app):
    at = app.run()
    assert HOSTILE in set(at.dataframe[0].value["model"])  # a dataframe cell is text
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(APP), default_timeout=120)  # a new session, opened by a link to the model's page
    at.query_params["page"] = "Models"
    at.query_params["model"] = HOSTILE
    at.run()
    assert not at.exception
    title = at.title[0].value
    # Markdown shows a backslash-escaped character as itself: no tag can form
    assert title == r"Model: \<img src=x onerror=alert\(1\)\>" and not re.search(r"(?<!\\)[<>]", title)
    assert "<script>" in at.dataframe[0].value["organisation"].iloc[0]  # shown as text in a cell


def test_task_page_table_and_breakdown_charts(app, fixture_root):
    at = app.run()
    at.sidebar.radio(key="page").set_value("Tasks").run()
    at.selectbox(key="task_pick").set_value("diasafety_chatbot").run()
    assert not at.exception
    frame = at.dataframe[0].value.set_index("model")
    assert set(frame.index) == {"blenderbot-small", "dialogpt-small"}
    assert frame.loc["dialogpt-small", "unsafe_rate"] == pytest.approx(
        headline(fixture_root, "dialogpt-small", "diasafety_chatbot"))
    charts = [e for e in at.main if e.type in ("vega_lite_chart", "arrow_vega_lite_chart")]
    assert charts, [e.type for e in at.main]
    tables = at.dataframe[1:]
    per_category = tables[0].value
    assert set(per_category["group"]) == {"biased_opinion", "offending_user", "risk_ignorance",
                                          "toxicity_agreement", "unauthorized_expertise"}
    assert per_category["ci_low"].notna().all()


def test_dialogue_task_page_draws_activation_by_turn(app):
    at = app.run()
    at.sidebar.radio(key="page").set_value("Tasks").run()
    at.selectbox(key="task_pick").set_value("toxicchat").run()
    assert not at.exception
    assert at.dataframe[0].value.set_index("model").loc["dialogue-fixture", "activation_rate"] == pytest.approx(
        100 * 20 / 30)
    assert any(e.type in ("vega_lite_chart", "arrow_vega_lite_chart") for e in at.main)
    by_turn = at.dataframe[1].value
    assert by_turn["group"].tolist() == ["1", "2", "3", "4", "5"]
    assert by_turn["value"].tolist() == pytest.approx([100 / 3, 100 / 3, 200 / 3, 200 / 3, 200 / 3])


def test_model_page_sample_browser_hides_texts_until_asked(app):
    at = app.run()
    at.sidebar.radio(key="page").set_value("Models").run()
    at.selectbox(key="model_pick").set_value("blenderbot-small").run()
    assert not at.exception
    assert any("Content warning" in w.value for w in at.warning)
    samples = at.dataframe[-1].value
    assert "outputs" not in samples.columns and len(samples) == 50
    at.toggle(key="show_texts").set_value(True).run()
    samples = at.dataframe[-1].value
    answered = samples["verdicts"] != ""  # contexts the published generations do not cover have no response
    assert answered.sum() > 10 and samples.loc[answered, "outputs"].str.len().gt(0).all()
    assert "input" not in samples.columns  # no local data: ids only


def test_sample_browser_joins_the_texts_from_a_local_data_copy(app, data_root, monkeypatch):
    monkeypatch.setenv("BENCHMARK_DATA_ROOT", str(data_root))
    at = app
    at.query_params["page"] = "Models"
    at.query_params["model"] = "diasafety-detector"
    at.run()
    at.toggle(key="show_texts").set_value(True).run()
    assert not at.exception
    samples = at.dataframe[-1].value
    records = json.loads((data_root / "diasafety" / "test.json").read_text())
    first = json.loads(samples["input"].iloc[0])
    assert samples["id"].iloc[0] == "0" and first["context"] == records[0]["context"]


def test_submit_page_is_the_readmes_section(app):
    at = app.run()
    at.sidebar.radio(key="page").set_value("Submit").run()
    text = "\n".join(m.value for m in at.markdown)
    readme = (REPO / "README.md").read_text()
    assert "python -m benchmark.submit validate" in text and text.strip() in readme


def test_csv_download_holds_the_table(fixture_root):
    sys.path.insert(0, str(REPO / "leaderboard"))
    import tables as T

    cards = S.load(fixture_root).cards
    frame = T.overview(cards, S.task_registry())
    back = pd.read_csv(pd.io.common.BytesIO(T.to_csv(frame)))
    assert list(back.columns) == list(frame.columns)
    assert back["diasafety · macro_f1 ↑"].tolist() == pytest.approx(frame["diasafety · macro_f1 ↑"].tolist(),
                                                                     nan_ok=True)


def test_the_hosted_app_needs_only_its_requirements():
    """Run as a host would run it: no torch, lm-eval or datasets is imported, and every package that the app's code
    and the suite modules it loads import is installed by leaderboard/requirements.txt."""
    code = ("import sys; from streamlit.testing.v1 import AppTest; "
            f"at = AppTest.from_file({str(APP)!r}, default_timeout=120).run(); assert not at.exception; "
            "print(' '.join(sorted({m.split('.')[0] for m in sys.modules}))); "
            "print(' '.join(sorted(m.__file__ for n, m in sys.modules.items() "
            "if n.split('.')[0] in ('benchmark', 'tables') and getattr(m, '__file__', None))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "BENCHMARK_DATA_ROOT": ""})
    assert out.returncode == 0, out.stderr[-2000:]
    modules_line, files_line = out.stdout.strip().splitlines()[-2:]
    assert not set(modules_line.split()) & {"torch", "transformers", "lm_eval", "datasets", "sklearn"}

    import ast
    import importlib.metadata as md

    from packaging.requirements import Requirement

    imported = set()
    for path in [str(APP), *files_line.split()]:
        for node in ast.walk(ast.parse(Path(path).read_text())):
            if isinstance(node, ast.Import):
                imported |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                imported.add(node.module.split(".")[0])
    third_party = imported - set(sys.stdlib_module_names) - {"benchmark", "tables", "__future__"}

    def closure(names):
        seen, todo = set(), list(names)
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            seen.add(name)
            for line in md.requires(name) or []:
                req = Requirement(line)
                if req.marker is None or req.marker.evaluate({"extra": ""}):
                    todo.append(req.name.lower().replace("_", "-"))
        return seen

    listed = {Requirement(line).name.lower() for line in
              (REPO / "leaderboard" / "requirements.txt").read_text().splitlines() if line and line[0].isalnum()}
    installed = closure(listed)
    dists = md.packages_distributions()
    missing = {m for m in third_party
               if not {d.lower().replace("_", "-") for d in dists.get(m, [m])} & installed}
    assert not missing, f"imported by the app's code but not installed by leaderboard/requirements.txt: {missing}"


# ------------------------------------------------------------------------------------------------ a real browser


def _chromium():
    for driver in ("/usr/bin/chromedriver", shutil.which("chromedriver")):
        if driver and Path(driver).exists():
            return driver
    pytest.skip("chromium-driver is not installed (apt-get install -y chromium chromium-driver)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_in_a_browser(fixture_root, tmp_path):
    driver_path = _chromium()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as EC
    from selenium.webdriver.support.ui import WebDriverWait

    port = _free_port()
    log = open(tmp_path / "streamlit.log", "w")
    server = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(APP), "--server.port", str(port), "--server.address",
         "127.0.0.1", "--server.headless", "true", "--browser.gatherUsageStats", "false"],
        env={**os.environ, "BENCHMARK_SUBMISSIONS": str(fixture_root)}, stdout=log, stderr=subprocess.STDOUT)
    options = webdriver.ChromeOptions()
    for arg in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--window-size=1400,1000"):
        options.add_argument(arg)
    browser = None
    try:
        deadline = time.time() + 60
        while time.time() < deadline:  # the server is up when its port answers
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.2)
        browser = webdriver.Chrome(service=Service(driver_path), options=options)
        wait = WebDriverWait(browser, 90)
        cells = '[data-testid="stDataFrame"] [role="gridcell"]'

        def table_text(d):
            texts = [c.get_attribute("textContent") for c in d.find_elements(By.CSS_SELECTOR, cells)]
            return texts if "diasafety-detector" in texts else False

        browser.get(f"http://127.0.0.1:{port}/")
        try:
            texts = wait.until(table_text)
        except Exception:  # a fresh server's first page can stay blank: load it once more
            browser.get(f"http://127.0.0.1:{port}/")
            texts = wait.until(table_text)
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        browser.save_screenshot(str(ARTIFACTS / "leaderboard-overview.png"))
        value = headline(fixture_root, "diasafety-detector", "diasafety")
        row = texts.index("diasafety-detector")
        assert any(abs(float(t) - value) < 1e-6 for t in texts[row:row + 4] if t.replace(".", "").isdigit())
        assert HOSTILE in texts  # as text in a cell
        assert not browser.find_elements(By.CSS_SELECTOR, 'img[src="x"]') and not browser.find_elements(
            By.XPATH, "//script[contains(., 'alert(2)')]")

        link = wait.until(EC.element_to_be_clickable((By.LINK_TEXT, "Task page and definition")))
        link.click()
        if len(browser.window_handles) > 1:  # Markdown links open in a new tab
            browser.switch_to.window(browser.window_handles[-1])
        wait.until(lambda d: "Task: " in d.find_element(By.TAG_NAME, "h1").text)
        wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, '[data-testid="stVegaLiteChart"]')))
        heading = browser.find_element(By.TAG_NAME, "h1").text
        assert heading.startswith("Task: diasafety")
        browser.save_screenshot(str(ARTIFACTS / "leaderboard-task.png"))
    finally:
        if browser is not None:
            browser.quit()
        server.terminate()
        server.wait(timeout=30)
        log.close()
