"""The API path against a scripted chat-completions server (stdlib http.server in a thread): retries, backoff,
Retry-After, timeouts, concurrency, per-request failures, and how a run with failures reports them."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from benchmark.run.report import table
from benchmark.run.runner import run


def completion(text: str) -> dict:
    return {"id": "cmpl-1", "object": "chat.completion", "model": "fake",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}]}


class FakeChatServer:
    """Answers request n (0-based, in arrival order) as `plan(n, body, attempt)` says (attempt: 1 + how many times
    the same body came before): {"status", "headers", "delay", "text", "hang"}; the default is a chat completion
    saying "Safe". "hang": no answer until the server closes (a timeout, whatever the machine's speed). Records every
    request's arrival time and body, and the most requests it held at once."""

    def __init__(self, plan=lambda n, body, attempt: {}):
        self.plan, self.requests, self.headers, self.lock = plan, [], [], threading.Lock()
        self.in_flight = self.max_in_flight = 0
        self.closing = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with server.lock:
                    n = len(server.requests)
                    attempt = 1 + sum(b == body for _, b in server.requests)
                    server.requests.append((time.monotonic(), body))
                    server.headers.append(dict(self.headers))
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                released = []

                def release():
                    with server.lock:
                        if not released:
                            released.append(True)
                            server.in_flight -= 1

                try:
                    action = {"status": 200, "headers": {}, "delay": 0.0, "text": "Safe", **server.plan(n, body, attempt)}
                    if action.get("hang"):
                        server.closing.wait()
                    time.sleep(action["delay"])
                    status = action["status"]
                    data = json.dumps(action["raw"] if "raw" in action else completion(action["text"]) if status == 200
                                      else {"error": {"message": f"scripted {status}"}}).encode()
                    # no longer held once answered: a client may send its next request before this thread goes on
                    release()
                    self.send_response(status)
                    for key, value in {"Content-Type": "application/json", **action["headers"]}.items():
                        self.send_header(key, value)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:  # the client gave up (a timeout)
                    pass
                finally:
                    release()

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1/chat/completions"
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def close(self):
        self.closing.set()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def fake_api():
    servers = []

    def start(plan=lambda n, body, attempt: {}):
        servers.append(FakeChatServer(plan))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


def api(server, *more):
    return ("model=openai-chat", f"model.base_url={server.url}", "model.served_model=fake", "model.api_key_env=null",
            "model.retry_wait=0.05", *more)


def samples_of(path):
    return [json.loads(line) for line in (path.parent / "samples.jsonl").read_text(encoding="utf-8").splitlines()]


def test_429_and_503_are_retried_with_backoff_and_retry_after(compose, fake_api, data_root, monkeypatch):
    # the first request: 429 (Retry-After: 1), then 503, then 502, then an answer; the others answer at once
    from benchmark.models import api as api_module

    waits = []

    async def no_wait(seconds):  # record the waits asked for instead of waiting
        waits.append(seconds)

    monkeypatch.setattr(api_module, "pause", no_wait)
    first = {}
    plan = {1: {"status": 429, "headers": {"Retry-After": "1"}}, 2: {"status": 503}, 3: {"status": 502}}
    server = fake_api(lambda n, body, attempt: plan.get(attempt, {}) if first.setdefault("body", body) == body else {})
    card, path = run(compose(*api(server, "model.num_concurrent=1", "model.max_retries=3"), "limit=3"))
    assert card["run"]["failed"] == 0 and card["run"]["model_calls"] == 3
    samples = samples_of(path)
    assert [s["output"] for s in samples] == ["Safe"] * 3 and [s["prediction"] for s in samples] == ["Safe"] * 3
    assert len(server.requests) == 6 and server.max_in_flight == 1  # 4 attempts of the first, 1 of each other
    assert len(waits) == 3 and waits[0] == 1.0  # the 429's Retry-After: 1 wins over the 0.05 s backoff
    assert 0.1 <= waits[1] <= 0.125 and 0.2 <= waits[2] <= 0.25  # then 0.05 s doubled (plus up to 25% jitter)


def test_timeouts_are_retried(compose, fake_api, data_root):
    # the first prompt to arrive hangs once, the other always: one answer, one failure naming the timeout
    roles: dict = {}

    def plan(n, body, attempt):
        role = roles.setdefault(json.dumps(body, sort_keys=True), len(roles))
        return {"hang": True} if role == 1 or attempt == 1 else {}

    server = fake_api(plan)
    card, path = run(compose(*api(server, "model.timeout=1", "model.max_retries=1"), "limit=2"))
    assert len(server.requests) == 4 and card["run"]["failed"] == 1
    outcomes = sorted(((s["output"], s["error"]) for s in samples_of(path)), key=str)
    assert outcomes == [("Safe", None), (None, "no answer within 1 s (model.timeout) (after 2 attempts)")]


def test_client_errors_are_not_retried(compose, fake_api, data_root):
    server = fake_api(lambda n, body, attempt: {"status": 401})
    card, path = run(compose(*api(server, "model.max_retries=3"), "limit=2"))
    assert len(server.requests) == 2 and card["run"]["failed"] == 2
    assert all(s["error"] == 'HTTP 401 Unauthorized: {"error": {"message": "scripted 401"}} (not retried)'
               for s in samples_of(path))


def test_a_request_that_keeps_failing_is_recorded_counted_reported_and_asked_again(compose, fake_api, data_root):
    down = True
    server = fake_api(lambda n, body, attempt: {"status": 503} if down else {})
    overrides = (*api(server, "model.max_retries=2", "model.num_concurrent=2"), "limit=3")
    card, path = run(compose(*overrides))
    assert len(server.requests) == 3 * 3  # each record: one attempt and two retries; the run went on
    assert card["run"]["failed"] == 3 and card["run"]["model_calls"] == 3
    samples = samples_of(path)
    assert all(s["error"].startswith("HTTP 503 Service Unavailable") and s["error"].endswith("(after 3 attempts)")
               and s["output"] is None and s["prediction"] == "invalid" for s in samples)
    summary = table(card, path)
    assert "3 of 3 samples FAILED" in summary and "HTTP 503 Service Unavailable" in summary
    assert "counted as invalid answers" in summary and "rerun the same command" in summary

    down = False  # the server is back: the same command asks the failed requests again, and only those
    again, _ = run(compose(*overrides))
    assert again["run"]["failed"] == 0 and again["run"]["model_calls"] == 3 and len(server.requests) == 12
    assert "FAILED" not in table(again, path)


def test_one_failing_request_does_not_sink_the_others(compose, fake_api, data_root):
    # a permanent error on one request of a concurrent batch: the others are asked once, and their answers kept
    server = fake_api(lambda n, body, attempt: {"status": 400} if n == 1 else {"delay": 0.05})
    card, path = run(compose(*api(server, "model.num_concurrent=4"), "limit=6"))
    assert len(server.requests) == 6
    assert card["run"]["failed"] == 1 and card["run"]["model_calls"] == 6
    assert sum(s["output"] == "Safe" for s in samples_of(path)) == 5


@pytest.mark.parametrize("concurrent", [1, 4])
def test_num_concurrent_reaches_the_server(compose, fake_api, data_root, concurrent):
    # the first `concurrent` requests are held until all of them have arrived: they must be in flight together
    together = threading.Barrier(concurrent, timeout=30)

    def plan(n, body, attempt):
        if n < concurrent:
            together.wait()
        return {}

    server = fake_api(plan)
    card, _ = run(compose(*api(server, f"model.num_concurrent={concurrent}"), "limit=8"))
    assert card["run"]["failed"] == 0 and len(server.requests) == 8
    assert server.max_in_flight == concurrent


def test_no_key_is_sent_unless_the_config_names_one(compose, fake_api, data_root, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-" + "k" * 30)  # lm-eval's default would send this to any server
    server = fake_api()
    card, _ = run(compose(*api(server), "limit=1"))
    assert card["run"]["failed"] == 0 and server.headers and all("Authorization" not in h for h in server.headers)
    monkeypatch.setenv("MY_KEY", "secret-for-this-server")
    run(compose(*api(server), "model.api_key_env=MY_KEY", "limit=2"))
    assert server.headers[-1]["Authorization"] == "Bearer secret-for-this-server"


@pytest.mark.parametrize("answer", [
    {"choices": [{"message": None}]},
    {"choices": [{"index": 0, "message": {"role": "assistant", "content": None}, "finish_reason": "stop"}]},
    {"choices": [{"index": 0, "message": {"role": "assistant", "content": 5}}]},
])
def test_a_malformed_answer_is_retried_then_failed_never_cached(compose, fake_api, data_root, answer):
    server = fake_api(lambda n, body, attempt: {"raw": answer})
    card, path = run(compose(*api(server, "model.max_retries=1"), "limit=1"))
    assert len(server.requests) == 2 and card["run"]["failed"] == 1
    assert "not a chat completion" in samples_of(path)[0]["error"] or "has no text" in samples_of(path)[0]["error"]
    again, _ = run(compose(*api(server, "model.max_retries=1"), "limit=1"))
    assert len(server.requests) == 4  # nothing was cached: asked again


def test_bad_settings_name_the_key(compose, fake_api, data_root):
    from benchmark import BenchmarkError

    server = fake_api()
    with pytest.raises(BenchmarkError, match=r"model openai-chat: model.num_concurrent=0; it must be at least 1"):
        run(compose(*api(server, "model.num_concurrent=0"), "limit=1"))


def test_sampled_requests_carry_the_run_seed_and_their_sample_number(compose, fake_api, tmp_path):
    from test_cpad import write_conf, write_fixture

    root, conf = tmp_path / "data", tmp_path / "conf"
    write_fixture(root)
    write_conf(conf)
    server = fake_api(lambda n, body, attempt: {"text": f"回复 {body['seed']}"})
    card, path = run(compose(f"hydra.searchpath=[file://{conf}]", "task=cpad", f"data_root={root}",
                             "judge=cpad-one", *api(server), "task.attack.samples=3",
                             "+task.attack.generation.do_sample=true", "+task.attack.generation.temperature=1.0",
                             "seed=7", "limit=2"))
    assert card["run"]["failed"] == 0 and len(server.requests) == 6
    by_prompt = {}
    for _, body in server.requests:
        assert body["temperature"] == 1.0
        by_prompt.setdefault(body["messages"][-1]["content"], []).append(body["seed"])
    assert [sorted(seeds) for seeds in by_prompt.values()] == [[7, 8, 9], [7, 8, 9]]
    responses = [r["text"] for s in samples_of(path) for r in s["responses"]]
    assert sorted(responses) == sorted(f"回复 {seed}" for seed in (7, 8, 9, 7, 8, 9))
