"""Qwen2.5-Coder-0.5B-Instruct, a real multilingual instruct model (zh, ko, en), from its six pip packages: the
model under test of the Korean and Chinese tasks and CPAD's question judge. Skips, with the install line, where its
packages are not installed."""

from __future__ import annotations

import json

import pytest
from conftest import QWEN

from benchmark.run.runner import run

MODEL = (f"model={QWEN}",)
PINNED = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"


def samples_of(path):
    return [json.loads(line) for line in (path.parent / "samples.jsonl").read_text(encoding="utf-8").splitlines()]


def test_answers_korean_conversations_in_json(compose, qwen, data_root):
    """RICoTA in its own protocol: the answers are JSON the task reads, and the card names the joined weights."""
    card, path = run(compose(*MODEL, "task=ricota", "limit=1"))  # one long conversation: about 25 s
    assert card["run"]["failed"] == 0 and card["run"]["model_calls"] == 1
    assert card["model"]["weights"]["files"] == [{"name": "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
                                                   "size": 491400064, "sha256": PINNED}]
    for s in samples_of(path):
        assert json.loads(s["output"]).keys() == {"conversation_type", "test_purpose"}
        assert all(label != "invalid" for label in s["prediction"].values())
        assert s["prompt"][0]["role"] == "system" and "루다" in s["prompt"][0]["content"]


def test_is_the_target_and_the_judge_of_cpad(compose, qwen, tmp_path):
    """CPAD on the fixture in CPAD's schema: Qwen answers each Chinese attack prompt in Chinese, then judges each
    answer with a label the task reads."""
    from test_cpad import SCORED, run_with_goal_judge

    card, path = run_with_goal_judge(compose, tmp_path, QWEN)
    assert card["run"]["model_calls"] == SCORED and card["run"]["judge_calls"] == {"goal": SCORED}
    assert card["run"]["failed"] == 0 and card["judges"][0]["name"] == QWEN
    for s in samples_of(path):
        response = s["responses"][0]
        assert any("\u4e00" <= c <= "\u9fff" for c in response["text"])  # it answers in Chinese
        vote = response["judgements"]["goal"]["votes"]["goal"]
        assert vote["label"] in ("是", "否")
    assert card["metrics"]["judge_invalid_rate"]["value"] == 0
