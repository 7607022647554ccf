"""What a model author reaches for around a run: list what exists, preview what a run asks, run from Python, and see
the run recorded as it was asked for."""

from __future__ import annotations

import json
import re

import pytest

from conftest import copy_published, run_cli
from test_dialogue import scripted  # noqa: F401  (a fixture: scripted seeds, attacker and target)

import benchmark


def test_list_names_every_config_with_a_line_about_it(tmp_path):
    done = run_cli("list", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    for header in ("tasks (", "models (", "judges (", "attackers ("):
        assert header in out
    assert re.search(r"\n  smollm2-135m-instruct +SmolLM2-135M-Instruct \(Hugging Face, Apache-2.0\)", out)
    assert re.search(r"\n  qwen2.5-coder-0.5b-instruct +Qwen2.5-Coder-0.5B-Instruct \(Alibaba's Qwen team, Apache-2.0\)", out)
    assert re.search(r"\n  toxicchat +en  dialogue_attack  Share of conversations", out)
    assert run_cli("list", "judges", cwd=tmp_path).stdout.startswith("judges (")
    wrong = run_cli("list", "nothing", cwd=tmp_path)
    assert wrong.returncode == 2 and "list nothing: choose one of tasks, models, judges, attackers" in wrong.stderr


def test_preview_shows_what_a_run_would_ask_and_loads_nothing(tmp_path, data_root):
    done = run_cli("task=diasafety_chatbot", "model=smollm2-135m-instruct", "model.pretrained=pip:not-installed-x",
                   "preview=2", cwd=tmp_path)  # no weights anywhere, no trained detector: nothing is loaded
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.count("== record ") == 2 and "-- the model, 10 time(s)" in out
    assert "-- judge step context (classifier)" in out and '"response": "<the model\'s response>"' in out
    # the whole run's tokens: 1,046 records x 10 samples, by length, since the weights (and tokenizer) are not here
    assert "1046 records x 10 request(s): about " in out and "about 4 characters per token: the tokenizer of" in out
    assert "at most 669,440 completion tokens (max_new_tokens 64 each)" in out  # 1,046 x 10 x the task's 64
    assert not (tmp_path / "results").exists()


def test_evaluate_runs_from_python_and_records_what_was_asked(tmp_path, data_root, monkeypatch):
    monkeypatch.chdir(tmp_path)
    card = benchmark.evaluate(model="profanity-check", task="diasafety", limit=12, progress=False,
                              overrides=["task.options.use_context=false", "model.input=context+response"])
    assert card["dataset"]["n"] == 12 and card["model"]["config"]["input"] == "context+response"
    assert card["run"]["overrides"] == ["model=profanity-check", "task=diasafety", "limit=12", "progress=false",
                                        "task.options.use_context=false", "model.input=context+response"]
    assert card["task"]["config"]["options"] == {"use_context": False}  # the task as it ran
    again = benchmark.evaluate(model="profanity-check", task="diasafety", limit=12, progress=False,
                               overrides=["task.options.use_context=false", "model.input=context+response"])
    assert again["run"]["resumed"] == 12 and again["metrics"] == card["metrics"]
    saved = json.loads(next((tmp_path / "results").glob("*/*/*/scorecard.json")).read_text())
    assert saved["run"]["overrides"] == card["run"]["overrides"]


def test_progress_counts_requests_as_they_are_answered(compose, data_root, monkeypatch, tmp_path):
    """Every request the model under test answers moves the bar as it comes (not a chunk of records at a time); the
    judges' are counted beside it; planned requests a run will not make leave the total."""
    from benchmark import progress as P
    from benchmark.run.runner import run

    updates, bars = [], []
    real_answered = P.Progress.answered

    def answered(self, who, n):
        updates.append((who, n))
        real_answered(self, who, n)

    monkeypatch.setattr(P.Progress, "answered", answered)
    real_init = P.Progress.__init__
    monkeypatch.setattr(P.Progress, "__init__", lambda self, total, desc, enabled=True, unit="request": (
        bars.append(self), real_init(self, total, desc, False))[-1])
    run(compose("model=profanity-check", "limit=100", "chunk_size=100", "model.batch_size=5"))
    assert bars[-1].total == 100 and bars[-1].answered_by_model == 100
    # one chunk of 100 records reaches the bar in slices of 4 batches (20 requests), not at the chunk's end
    assert [n for who, n in updates if who == "model" and n] == [20] * 5

    updates.clear()
    run(compose("model=blenderbot-small", "task=diasafety_chatbot", "limit=6", "task.attack.samples=3",
                "judge.models.context.backend=keywords", "judge.models.context.phrases=[idiot]",
                "judge.models.context.pretrained=null", f"cache_dir={tmp_path / 'fresh'}"))
    done = bars[-1]
    assert done.total == 6 and done.answered_by_model == 6  # a replay answers a record's 3 responses at once: 6 requests, not 18
    assert {who for who, _ in updates} == {"model", "judge utterance", "judge context", "judge refused",
                                             "judge harm"}


@pytest.mark.slow  # 14 s; the board's browser test and the viewer's AppTest tests run every time
def test_view_shows_your_own_runs_in_a_browser(compose, data_root, scripted, tmp_path):  # noqa: F811
    """python -m benchmark view: the leaderboard's pages over local run folders, a limited run marked, a dialogue
    turn by turn (your runs keep the seed sentence's text)."""
    import os
    import sys
    import time

    from test_dialogue import compose_scripted
    from test_leaderboard import ARTIFACTS, _chromium, served

    from benchmark.run.runner import run

    _chromium()  # skips at once where there is no browser
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as EC
    from selenium.webdriver.support.ui import WebDriverWait

    results = tmp_path / "results"
    card, path = run(compose("limit=20"))  # results/profanity-check/diasafety/<run>
    base, root, conf = scripted
    dialogue, _ = run(compose_scripted(base, root, conf, f"results_dir={results}"))

    def view(port):
        return [sys.executable, "-m", "benchmark", "view", str(results), "--port", str(port), "--no-browser"]

    with served(view, tmp_path / "view.log", cwd=tmp_path, env=os.environ) as (browser, port):
        wait = WebDriverWait(browser, 90)
        limited = f"profanity-check [{path.parent.name}, limit 20]"

        def table_text(d):
            cells = [c.get_attribute("textContent") for c in d.find_elements(
                By.CSS_SELECTOR, '[data-testid="stDataFrame"] [role="gridcell"]')]
            return cells if limited in cells else False

        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                browser.get(f"http://127.0.0.1:{port}/")
                texts = wait.until(table_text)
                break
            except Exception:  # the server is still starting, or its first page stayed blank
                time.sleep(1)
        else:
            raise AssertionError((tmp_path / "view.log").read_text()[-2000:])
        assert any(t.startswith("scripted-target [") for t in texts)
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        browser.save_screenshot(str(ARTIFACTS / "view-overview.png"))
        model = next(t for t in texts if t.startswith("scripted-target ["))
        from urllib.parse import quote

        browser.get(f"http://127.0.0.1:{port}/?page=Models&model={quote(model, safe='')}")
        toggle = wait.until(EC.element_to_be_clickable((By.XPATH, "//label[contains(., 'Show texts')]")))
        toggle.click()
        wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, '[data-testid="stChatMessage"]')) >= 2)
        first = browser.find_elements(By.CSS_SELECTOR, '[data-testid="stChatMessage"]')[0].text
        assert "attacker, turn 1" in first and "hello there" in first  # the seed itself, in your own run
        browser.save_screenshot(str(ARTIFACTS / "view-conversation.png"))


def test_view_without_runs_says_so(tmp_path):
    done = run_cli("view", str(tmp_path / "nothing"), cwd=tmp_path)
    assert done.returncode == 2 and "no run folder (no scorecard.json) under it" in done.stderr


def test_export_to_inspect_and_lm_eval(compose, data_root, scripted, tmp_path):  # noqa: F811
    from inspect_ai.log import read_eval_log
    from lm_eval.utils import make_table
    from test_dialogue import compose_scripted

    from benchmark.submissions.export import to_inspect, to_lm_eval
    from benchmark.run.runner import run

    card, path = run(compose("limit=30"))
    log = read_eval_log(str(to_inspect(path.parent, tmp_path / "run.eval")))
    assert log.status == "success" and log.eval.task == "diasafety" and len(log.samples) == 30
    assert log.results.scores[0].metrics["macro_f1"].value == card["metrics"]["macro_f1"]["value"]
    first = json.loads(path.parent.joinpath("samples.jsonl").read_text().splitlines()[0])
    assert log.samples[0].id == first["id"] and log.samples[0].target == json.dumps(first["target"])
    assert json.loads(log.samples[0].scores["diasafety"].value) == first["prediction"]

    base, root, conf = scripted
    dialogue, dpath = run(compose_scripted(base, root, conf))
    log = read_eval_log(str(to_inspect(dpath.parent, tmp_path / "dialogue.eval")))
    talk = [(m.role, m.content) for m in log.samples[0].messages]
    assert talk[:2] == [("user", "hello there"), ("assistant", "hi friend")]  # the conversation, turn by turn

    results = json.loads(to_lm_eval(path.parent, tmp_path / "lm-eval").read_text())
    row = results["results"]["diasafety"]
    m = card["metrics"]["macro_f1"]
    assert row["macro_f1,none"] == m["value"]
    assert abs(row["macro_f1_stderr,none"] - (m["ci_high"] - m["ci_low"]) / 3.92) < 1e-12
    assert "macro_f1" in make_table(results)  # lm-eval's own table reads it


class FakeHub:
    """The three Hub endpoints an upload of small files uses (create a repo, preupload, commit), on 127.0.0.1;
    records what each commit carried."""

    def __init__(self):
        import base64
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        hub = self
        self.files, self.requests = {}, []

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                hub.requests.append((self.path, self.headers.get("Authorization")))
                base = f"http://127.0.0.1:{self.server.server_address[1]}"
                if self.path.endswith("/api/repos/create"):
                    return self.send(200, {"url": f"{base}/datasets/o/r"})
                if "/preupload/" in self.path:
                    return self.send(200, {"files": [{"path": f["path"], "uploadMode": "regular", "shouldIgnore": False}
                                                     for f in json.loads(body)["files"]]})
                if "/commit/" in self.path:
                    for line in body.decode().splitlines():
                        entry = json.loads(line)
                        if entry["key"] == "file":
                            hub.files[entry["value"]["path"]] = base64.b64decode(entry["value"]["content"])
                    return self.send(200, {"commitUrl": f"{base}/datasets/o/r/commit/{'a' * 40}",
                                           "commitOid": "a" * 40})
                self.send(404, {})

            def do_GET(self):
                self.send(404, {})

            def send(self, code, obj):
                data = json.dumps(obj).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()


def test_a_submission_is_pushed_to_a_dataset_repo(tmp_path, monkeypatch):
    import pytest

    from benchmark import BenchmarkError
    from benchmark.submissions.export import to_hub

    from huggingface_hub import constants

    monkeypatch.setattr(constants, "is_offline_mode", lambda: False)  # the tests are offline; this Hub is local
    folder = tmp_path / "profanity-check"
    copy_published("profanity-check", folder)
    hub = FakeHub()
    try:
        url = to_hub(folder, "o/r", token="hf_test_token", endpoint=hub.url)
        assert url.endswith("/commit/" + "a" * 40)
        assert dict(hub.files) == {f"profanity-check/{f.name}": f.read_bytes()
                                                       for f in folder.iterdir()}
        assert all(auth == "Bearer hf_test_token" for _, auth in hub.requests)
        (folder / "diasafety.json").write_text("{}")  # what does not validate is not pushed
        sent = len(hub.requests)
        with pytest.raises(BenchmarkError, match="does not validate, so it is not pushed"):
            to_hub(folder, "o/r", token="hf_test_token", endpoint=hub.url)
        assert len(hub.requests) == sent
    finally:
        hub.close()
