"""Submissions: packaging a run, every validation rule with a failing example, verification, and the published folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from conftest import copy_published

from benchmark import submissions as S
from benchmark.paths import REPO_ROOT
from benchmark.identity import model_sha256
from benchmark.submissions import configs, privacy, rules, signing
from benchmark.submissions import samples as SF
from benchmark.identity import sha256_json
from benchmark.run.runner import run
from benchmark.identity import file_sha256
from benchmark.cli.submit import main as submit_main
from benchmark.submissions.package import package, validate
from benchmark.submissions.verify import verify
from benchmark.run.card_record import ScoreCard, Verification, VerificationResult

SEED = "profanity-check"  # a published folder every test can copy: one card on diasafety


@pytest.fixture
def verifier_key(tmp_path, monkeypatch) -> Path:
    """A verifier key pair made for the test, listed as the only trusted key."""
    from benchmark.submissions.signing import keygen

    key = tmp_path / "verifier.pem"
    keys = tmp_path / "verifier_keys.json"
    keys.write_text(keygen(key))
    monkeypatch.setenv("BENCHMARK_VERIFIER_KEYS", str(keys))
    return key


@pytest.fixture
def folder(tmp_path) -> Path:
    """A copy of one published model folder, without its verification (tests edit the card)."""
    root = tmp_path / "submissions"
    copy_published(SEED, root / SEED)
    card_path = root / SEED / "diasafety.json"
    card = json.loads(card_path.read_text())
    card.pop("verification", None)
    card_path.write_text(json.dumps(card))
    return root / SEED


def edit_card(folder: Path, change, name: str = "diasafety.json") -> None:
    path = folder / name
    card = json.loads(path.read_text())
    change(card)
    path.write_text(json.dumps(card))


def problems_of(folder: Path, allow_remote_code: bool = False) -> list[str]:
    valid, problems = validate([folder], allow_remote_code)
    return [str(p) for p in problems]


def test_the_published_folder_validates_with_its_samples():
    valid, problems = validate([S.SUBMISSIONS_DIR])
    assert problems == [] and valid >= 12
    cards = S.load(S.SUBMISSIONS_DIR).cards
    assert {c.card["task"]["name"] for c in cards} >= {"diasafety", "diasafety_chatbot", "ricota"}
    assert all(c.card.get("verification", {}).get("verified") for c in cards)


def test_a_copied_folder_validates(folder):
    assert problems_of(folder) == []


def _set(path, value):
    def change(card):
        *parents, last = path
        node = card
        for p in parents:
            node = node[p]
        if value is KeyError:
            del node[last]
        else:
            node[last] = value
    return change


@pytest.mark.parametrize("change, field, message", [
    (_set(["metrics"], KeyError), "metrics", "is missing"),
    (_set(["task", "name"], "no_such_task"), "task.name", "unknown task 'no_such_task'"),
    (_set(["task", "version"], 7), "task.version", "7: task diasafety's version is 1"),
    (_set(["dataset", "sha256"], "0" * 64), "dataset.sha256", "is not the hash of task diasafety's data"),
    (_set(["run", "limit"], 100), "run.limit", "covers the whole split"),
    (_set(["metrics", "macro_f1", "value"], 1.7), "metrics.macro_f1", "a share must lie in [0, 1]"),
    (_set(["metrics", "accuracy", "ci_low"], 0.99), "metrics.accuracy", "does not contain the value"),
    (_set(["metrics", "accuracy", "value"], float("nan")), "metrics.accuracy.value", "not a finite number"),
    (_set(["samples", "sha256"], "f" * 64), "samples.sha256", "does not match diasafety.samples.jsonl.gz"),
    (_set(["samples", "file"], "other.jsonl.gz"), "samples.file", "must be diasafety.samples.jsonl.gz"),
    (_set(["model", "name"], "someone-else"), "model.name", "is not the folder's name"),
    (_set(["dataset", "source"], "/home/alice/data/test.json"), "dataset.source", "an absolute local path"),
    (_set(["model", "config", "base_url"], "http://10.1.2.3:8000/v1"), "model.config.base_url",
     "a private host name"),
    (_set(["model", "config", "_target_"], "os.system"), "model.config._target_", "never code"),
    (_set(["verification"], {"verified": True, "at": "x", "seed": 0, "n": 1, "verdict_agreement": 1,
                              "output_agreement": 1, "min_agreement": 0.5, "card_sha256": "0" * 64, "key_id": "x",
                              "signature": ""}),
     "verification", "only `python -m benchmark.submit verify` writes it"),
    (_set(["task", "headline"], "accuracy"), "task.headline", "task diasafety's headline is 'macro_f1'"),
    # a card relabelled as of another language moves on the Tasks page
    (_set(["task", "language"], "ko"), "task.language", "'ko': task diasafety's language is 'en'"),
    (_set(["run", "budget"], {"tokens": 10, "cost": None, "spent_tokens": 10_000, "spent_cost": 0.0, "currency": None,
                              "exceeded": False, "cannot_stop": []}), "run.budget.exceeded",
     "False: it spent 10000 tokens"),
    (_set(["dataset", "n"], 1000), "dataset.n", "a published card of task diasafety covers all 1095 of its 1095"),
    (_set(["metrics", "macro_f1", "value"], 0.12), "metrics.macro_f1", "is not what the samples give"),
    (_set(["metrics", "macro_f1", "unit"], "%"), "metrics.macro_f1", "is not what the samples give"),
    (_set(["metrics", "made_up"], {"value": 0.5, "ci_low": 0.4, "ci_high": 0.6, "n": 3}), "metrics.made_up",
     "not a metric the task computes"),
    (_set(["model", "metadata", "parameters"], "500B"), "model.metadata", "differs from the metadata in model.yaml"),
    (_set(["model", "metadata", "open_weights"], [1]), "model.metadata.open_weights", ""),
    (_set(["task", "name"], "cpad"), "dataset.sha256", "task cpad has no pinned data yet"),
])
def test_each_card_rule_rejects_with_file_and_field(folder, change, field, message):
    edit_card(folder, change)
    found = problems_of(folder)
    assert found, "the edited card must be rejected"
    assert any(f"diasafety.json: {field}: " in p and message in p for p in found), found
    if not message:  # a schema rule: the wording after the field is the validator's
        assert sum(f"diasafety.json: {field}: " in p for p in found) == 1, found


def test_a_gap_between_two_rates_may_be_negative_but_a_share_may_not():
    from benchmark.run.card_record import Metric
    from benchmark.submissions.rules import _metric_problems

    def problems(name, value, low, high):
        return _metric_problems(name, {name: Metric(value=value, ci_low=low, ci_high=high, n=1)}, "c.json")

    assert problems("asr_gap.language.ko", -0.013, -0.076, 0.051) == []
    assert [p.message for p in problems("asr_gap.language.ko", -0.5, -1.2, 0.1)] == [
        "a difference of two shares must lie in [-1, 1]; got {'value': -0.5, 'ci_low': -1.2, 'ci_high': 0.1}"]
    assert "a share must lie in [0, 1]" in problems("asr.language.ko", 0.1, -0.1, 0.2)[0].message


def test_a_self_made_verification_is_rejected(folder, verifier_key):
    """Anyone can compute a card's hash; only a listed verifier's signature marks it verified."""
    path = folder / "diasafety.json"
    card = json.loads(path.read_text())
    block = {"verified": True, "at": "now", "seed": 0, "n": 20, "failed": 0, "verdict_agreement": 1.0,
             "output_agreement": 1.0, "min_agreement": 0.95, "card_sha256": signing.card_sha256(card),
             "key_id": "0123456789abcdef", "signature": "AAAA"}
    edit_card(folder, _set(["verification"], block))
    assert any("verification.key_id: '0123456789abcdef' is not a verifier key" in p for p in problems_of(folder))
    signed = signing.sign(card, {k: v for k, v in block.items() if k not in ("key_id", "signature")}, verifier_key)
    edit_card(folder, _set(["verification"], signed))
    assert problems_of(folder) == []
    signed["verdict_agreement"] = 0.5  # a signed block changed afterwards
    edit_card(folder, _set(["verification"], signed))
    assert any("verification.signature: does not match" in p for p in problems_of(folder))


def _rewrite_samples(folder: Path, change) -> None:
    path = folder / "diasafety.samples.jsonl.gz"
    samples = S.read_samples(path)
    samples = change(samples)
    edit_card(folder, _set(["samples", "sha256"], SF.write_samples(samples, path)))


@pytest.mark.parametrize("change, message", [
    (lambda ss: [ss[0]] * len(ss), "repeated sample ids"),
    (lambda ss: [{**s, "id": "${oc.env:HOME}" + s["id"]} for s in ss], "sample ids are letters, digits"),
    (lambda ss: [{**s, "error": "http://10.0.0.7:8000/v1 refused"} if i == 3 else s for i, s in enumerate(ss)],
     "a private host name"),
    (lambda ss: [{k: v for k, v in s.items() if k != "prediction"} for s in ss], "None is not what the output gives"),
])
def test_each_samples_rule_rejects(folder, change, message):
    _rewrite_samples(folder, change)
    found = problems_of(folder)
    assert any(message in p for p in found), found


def test_unreadable_samples_are_a_problem_not_a_traceback(folder):
    path = folder / "diasafety.samples.jsonl.gz"
    path.write_bytes(b"\x1f\x8b" + b"not a gzip stream at all")
    edit_card(folder, _set(["samples", "sha256"], file_sha256(path)))
    assert any("diasafety.samples.jsonl.gz: unreadable" in p for p in problems_of(folder))


def test_samples_holding_the_data_sets_texts_are_rejected(folder):
    path = folder / "diasafety.samples.jsonl.gz"
    samples = S.read_samples(path)
    samples[0]["input"] = {"context": "a text from the data set"}
    sha = SF.write_samples(samples, path)
    edit_card(folder, _set(["samples", "sha256"], sha))
    found = problems_of(folder)
    assert any("diasafety.samples.jsonl.gz: input: holds the data set's own text" in p for p in found), found


def test_a_missing_samples_file_is_rejected(folder):
    (folder / "diasafety.samples.jsonl.gz").unlink()
    assert any("samples.file: diasafety.samples.jsonl.gz is missing" in p for p in problems_of(folder))


def _model_yaml(folder: Path, text: str) -> None:
    (folder / "model.yaml").write_text(text)


def _without_keys_of(extra: str, text: str) -> str:
    """`text` without the top-level entries (a key's line and its indented block) that `extra` sets again."""
    import re

    keys = set(re.findall(r"^([^\s:#][^:]*):", extra, re.M))
    out, skipping = [], False
    for line in text.splitlines(keepends=True):
        if line[:1] not in (" ", "\t", "-", "#", "\n"):
            skipping = line.split(":", 1)[0] in keys
        if not skipping:
            out.append(line)
    return "".join(out)


def test_a_repeated_key_is_rejected_not_silently_replaced(folder):
    _model_yaml(folder, (folder / "model.yaml").read_text() + "input: context+response\n")
    found = problems_of(folder)
    assert any("model.yaml: line " in p and "key 'input' appears twice" in p for p in found), found
    assert S.load(folder.parent).cards == []


@pytest.mark.parametrize("extra, field, message", [
    ("_target_: subprocess.call\n", "_target_", "never code"),
    ("generation:\n  until: !function utils.stop\n", "", "tag !function is not allowed"),
    ("system_prompt: !!python/object/apply:os.system ['id']\n", "", "is not allowed"),
    ("pretrained: ${oc.env:HOME}/model\n", "pretrained", "interpolation"),
    ("description: a fine model\n", "description", "unknown key"),
    ("metadata:\n  sponsor: me\n", "metadata.sponsor", "unknown key"),
    ("batch_size: many\n", "batch_size", "could not be converted to Integer"),
    ("args:\n  trust_remote_code: 1\n", "trust_remote_code", "a maintainer must review that code"),
    ("trust_remote_code: 'yes'\n", "trust_remote_code", "a maintainer must review that code"),
    ("args:\n  worker_extension_cls: os.system\n", "args.worker_extension_cls", "not allowed in a submitted config"),
    ("args: [1]\n", "args", "must be a mapping"),
    ("1: one\n", "1", "keys must be strings"),
    ("phrases: &a [x, x]\nstop: *a\n", "", "YAML aliases (*name) are not allowed"),
])
def test_each_model_config_rule_rejects_with_file_and_field(folder, extra, field, message):
    _model_yaml(folder, _without_keys_of(extra, (folder / "model.yaml").read_text()) + extra)
    found = problems_of(folder)
    assert any(f"model.yaml: {field}: " in p and message in p if field else "model.yaml: " in p and message in p
               for p in found), found
    # the folder's cards are left out, never shown with a config that failed
    assert S.load(folder.parent).cards == []


def test_a_model_yaml_that_is_not_utf8_is_a_problem(folder):
    (folder / "model.yaml").write_bytes(b"name: \xff\xfe\n")
    assert any("model.yaml: not UTF-8 text (byte 0xff at offset 6)" in p for p in problems_of(folder))


def test_a_folder_without_model_yaml_fails_validation(folder):
    (folder / "model.yaml").rename(folder / "model.yml")
    valid, problems = validate([folder])
    assert valid == 0 and any("model.yaml: missing" in str(p) for p in problems)
    assert submit_main(["validate", str(folder)]) == 1


def test_remote_code_needs_a_reviewers_flag(folder):
    text = (folder / "model.yaml").read_text().replace("trust_remote_code: false", "trust_remote_code: true")
    _model_yaml(folder, text)
    edit_card(folder, _set(["model", "config", "trust_remote_code"], True))
    edit_card(folder, lambda card: card["model"].update(
        config_sha256=model_sha256(configs.model_config_node(card["model"]["config"]))))
    assert any("model.yaml: trust_remote_code: true" in p and "--allow-remote-code" in p for p in problems_of(folder))
    assert problems_of(folder, allow_remote_code=True) == []


def test_a_card_whose_config_differs_from_model_yaml_is_rejected(folder):
    edit_card(folder, _set(["model", "config", "threshold"], 0.9))
    assert any("model.config: differs from the folder's model.yaml" in p for p in problems_of(folder))


def test_an_unreadable_card_is_reported_not_raised(folder):
    (folder / "diasafety.json").write_text("{not json")
    loaded = S.load(folder.parent)
    assert loaded.cards == [] and any("not a readable JSON score card" in str(p) for p in loaded.rejected)


def test_scrub_strips_what_is_private(monkeypatch):
    monkeypatch.setenv("MY_SERVICE_KEY", "s3cr3t-value-123")
    monkeypatch.setenv("TASK", "diasafety")  # an ordinary variable's value stays
    data = {"pretrained": "/home/alice/models/llama", "base_url": "http://192.168.1.20:8000/v1",
            "public": "https://api.openai.com/v1", "args": {"api_key": "abc", "note": "uses s3cr3t-value-123"},
            "api_key_env": "OPENAI_API_KEY", "prompt": "sk-" + "a" * 30, "max_new_tokens": 8,
            "local": str(REPO_ROOT / "checkpoints" / "x")}
    out = privacy.scrub(data)
    assert out["pretrained"] == "<local>/llama" and out["base_url"] == "http://<host>:8000/v1"
    assert out["public"] == "https://api.openai.com/v1" and out["api_key_env"] == "OPENAI_API_KEY"
    assert out["args"] == {"api_key": "<removed>", "note": "uses <env:MY_SERVICE_KEY>"}
    assert out["prompt"] == "<removed>" and out["max_new_tokens"] == 8 and out["local"] == "checkpoints/x"
    assert privacy.private_values(out) == []
    more = privacy.scrub({"url": "https://alice:hunter2@api.example.com/v1?api_key=abc", "file": "file:///home/alice/m.gguf",
                    "inline": "pretrained=/home/alice/llama,dtype=auto", "openai_key": "abc", "aws": "AKIA" + "A" * 16,
                    "task": "diasafety"})
    assert more == {"url": "https://api.example.com/v1?<removed>", "file": "file://<local>/m.gguf",
                    "inline": "pretrained=<local>/llama,dtype=auto", "openai_key": "<removed>", "aws": "<removed>",
                    "task": "diasafety"}
    assert privacy.private_values(more) == []
    assert {w for _, w in privacy.private_values({"a": "see /home/bob/x", "b": "https://u:p@host.example/v1"})} == {
        "an absolute local path", "a private host name or credentials in a URL"}


def test_a_packaged_card_keeps_its_tasks_definition_whole(compose):
    """The task's definition is the suite's task file: a data join's `key: id` is no secret to remove (a card of
    safetybench_zh would otherwise no longer be its task's), while the rest of the card is scrubbed as ever."""
    from omegaconf import OmegaConf

    task = {"name": "safetybench_zh", "config": OmegaConf.to_container(compose("task=safetybench_zh").task)}
    assert task["config"]["data"]["join"]["key"] == "id"
    card = {"task": task, "model": {"config": {"pretrained": "/home/alice/models/llama", "api_key": "abc"}},
            "verification": {"verified": True}}
    out = privacy.scrub_card(card)
    assert out["task"] == task and out["model"]["config"] == {"pretrained": "<local>/llama", "api_key": "<removed>"}
    assert "verification" not in out
    assert privacy.scrub(card)["task"]["config"]["data"]["join"]["key"] == "<removed>"  # what scrub alone would do


def test_strip_sample_hashes_data_texts_wherever_they_recur():
    seed = "a harmless opening sentence from the data set"
    sample = {"id": "toxic-chat:1", "input": {"source": "toxic-chat", "seed": seed}, "target": "Offending User",
              "turns": [{"turn": 1, "attacker": seed, "target": "a reply", "verdict": "none"}],
              "error": "could not reach http://192.168.0.9:8000/v1"}
    out = SF.strip_sample(sample)
    assert "input" not in out and out["input_sha256"] == sha256_json(sample["input"])
    assert out["turns"][0]["attacker"].startswith("sha256:") and out["turns"][0]["target"] == "a reply"
    assert out["target"] == "Offending User" and out["error"] == "could not reach http://<host>:8000/v1"


def test_an_answer_that_is_one_of_the_tasks_labels_is_kept_where_the_data_holds_it_too(compose):
    """A model answering "Offending User" gives the task's label, which the record's category also is: packaged as
    the answer, so validation parses it again to the same prediction."""
    from omegaconf import OmegaConf

    task = OmegaConf.to_container(compose("task=diasafety").task, resolve=True)
    sample = {"id": "7", "input": {"context": "a user's message", "category": "Offending User"},
              "prompt": [{"role": "user", "content": "a user's message"}], "output": "Offending User",
              "prediction": "Offending User"}
    assert SF.strip_sample(sample)["output"].startswith("sha256:")
    assert SF.strip_sample(sample, SF.task_strings(task))["output"] == "Offending User"
    copied = {**sample, "output": "a user's message"}  # a copy of the data's own text is still hashed
    assert SF.strip_sample(copied, SF.task_strings(task))["output"].startswith("sha256:")


def test_verify_names_the_records_judged_otherwise_on_the_same_outputs(compose, data_root, monkeypatch):
    """Where both runs gave the same output but its judges voted otherwise, the card is not verified and the result
    names those records (misjudged_ids, a field of the verification record)."""
    from benchmark.kinds import make_kind
    from benchmark.kinds.base import KindView
    from benchmark.submissions.signing import verified_from
    from benchmark.submissions.verify import _compared

    cfg = compose("model=profanity-check", "task=diasafety", "limit=8")
    card, path = run(cfg)
    # a judge whose votes differ from run to run: every sample object its own vote
    monkeypatch.setattr(KindView, "judgements", staticmethod(lambda sample: id(sample)))
    samples = {s["id"]: s for s in (json.loads(line) for line in open(path.parent / "samples.jsonl"))}
    again = {i: dict(s) for i, s in samples.items()}  # the same outputs, read again
    record = ScoreCard.model_validate(card)
    found = _compared(make_kind(cfg.task, cfg.model), sorted(samples), samples, again, record, record)
    assert found["judgement_mismatches"] == 8 and found["misjudged_ids"] == sorted(samples)
    result = VerificationResult.model_validate({"verified": False, "at": "2026-01-01T00:00:00+00:00", "seed": 1,
                                                "min_agreement": 0.95, **found})
    assert not verified_from(result) and result.misjudged_ids == sorted(samples)


def test_package_a_run_then_verify_it(compose, data_root, tmp_path, verifier_key):
    card, path = run(compose("model=profanity-check", "task=diasafety"))
    root = tmp_path / "subs"
    out, _ = package(path.parent, root, str(data_root))
    folder = out.parent
    assert sorted(p.name for p in folder.iterdir()) == ["diasafety.json", "diasafety.samples.jsonl.gz", "model.yaml"]
    packed = json.loads(out.read_text())
    assert packed["metrics"] == card["metrics"] and privacy.private_values(packed) == []
    samples = S.read_samples(folder / "diasafety.samples.jsonl.gz")
    original = [json.loads(line) for line in open(path.parent / "samples.jsonl")]
    assert [s["id"] for s in samples] == [s["id"] for s in original]
    assert all("input" not in s and "prompt" not in s for s in samples)
    assert samples[0]["input_sha256"] == sha256_json(original[0]["input"])
    assert samples[0]["prediction"] == original[0]["prediction"]
    assert packed["samples"]["sha256"] == file_sha256(folder / "diasafety.samples.jsonl.gz")

    unsigned = verify(out, n=15, seed=3, data_root=str(data_root))
    assert unsigned.verified and "verification" not in json.loads(out.read_text())  # no key: nothing written
    result = verify(out, n=15, data_root=str(data_root), key=verifier_key)
    assert result.verified and result.n == 15 and result.verdict_agreement == 1.0
    assert Verification.model_validate(json.loads(out.read_text())["verification"]) == result
    assert validate([folder]) == (1, [])
    # editing a verified card breaks the binding
    edit_card(folder, _set(["metrics", "macro_f1", "value"], packed["metrics"]["macro_f1"]["ci_high"]))
    assert any("verification: does not belong to this card" in p for p in problems_of(folder))


def test_verify_catches_submitted_predictions_the_model_does_not_make(compose, data_root, tmp_path, verifier_key):
    _, path = run(compose("model=profanity-check", "task=diasafety"))
    out, _ = package(path.parent, tmp_path / "subs", str(data_root))
    samples_path = out.parent / "diasafety.samples.jsonl.gz"
    samples = S.read_samples(samples_path)
    for s in samples:  # a submitter who claims perfect predictions (and the metrics that follow from them)
        s["prediction"] = s["target"]
    sha = SF.write_samples(samples, samples_path)
    metrics, breakdown = rules.rescored(ScoreCard.model_validate_json(out.read_text()), samples)
    edit_card(out.parent, _set(["samples", "sha256"], sha))
    edit_card(out.parent, _set(["metrics"], metrics))
    edit_card(out.parent, _set(["breakdown"], breakdown))
    # consistent in itself, but each prediction is parsed again from the classifier's recorded verdict
    found = [str(p) for p in validate([out.parent])[1]]
    assert any(": prediction: " in p and "is not what the output gives" in p for p in found), found
    assert submit_main(["verify", str(out), "--n", "20", "--data-root", str(data_root),
                        "--key", str(verifier_key)]) == 2  # not re-run: it does not validate
    assert "verification" not in json.loads(out.read_text())


def test_packaging_into_a_folder_made_before_a_config_field_existed(compose, data_root, tmp_path, capsys):
    """A folder's model.yaml written before the schema gained a field (it reads as its default) holds the same
    config; one that differs in a value is refused."""
    _, path = run(compose("model=profanity-check", "task=diasafety"))
    folder = tmp_path / "subs" / "profanity-check"
    folder.mkdir(parents=True)
    config = json.loads((path.parent / "scorecard.json").read_text())["model"]["config"]
    older = {k: v for k, v in config.items() if k != "split_weights"}
    (folder / S.MODEL_FILE).write_text(yaml.safe_dump(older, sort_keys=False))
    out, _ = package(path.parent, tmp_path / "subs", str(data_root))
    assert validate([folder]) == (1, [])
    (folder / S.MODEL_FILE).write_text(yaml.safe_dump({**older, "threshold": 0.9}, sort_keys=False))
    out.unlink()
    assert submit_main([str(path.parent), "--to", str(tmp_path / "subs")]) == 2
    assert "holds another config of model profanity-check" in capsys.readouterr().err


def test_packaging_refuses_a_limited_run(compose, data_root, tmp_path, capsys):
    _, path = run(compose("model=profanity-check", "task=diasafety", "limit=5"))
    assert submit_main([str(path.parent), "--to", str(tmp_path / "subs")]) == 2
    assert "run.limit=5: a published card covers the whole split" in capsys.readouterr().err


def test_recall_takes_a_cards_answers_when_only_its_figures_are_stale(tmp_path, data_root):
    """A rebuild after a scoring change (submissions/reproduce.sh): the card's figures are no longer what today's
    scoring computes, but its answers are still its model's, so recall puts them in the cache; any other problem
    (here: data that is not the task's) still stops it."""
    from benchmark import BenchmarkError
    from benchmark.submissions.recall import recall

    folder = copy_published("blenderbot-small", tmp_path / "submissions" / "blenderbot-small", ("diasafety_chatbot",))
    card_path = folder / "diasafety_chatbot.json"

    def stale(card):
        card.pop("verification", None)
        card["metrics"]["unsafe_rate"]["value"] += 0.01
        # as after the validity record is measured again: the procedure's flags the record gives are others
        flagged = card["judging_validation"]["flagged"]
        card["judging_validation"]["flagged"] = ("1" if flagged[0] == "0" else "0") + flagged[1:]

    edit_card(folder, stale, card_path.name)
    stale_fields = {p.field for p in S.load_folder(folder, True, only=card_path, data_root=str(data_root)).rejected}
    assert {"metrics.unsafe_rate", "judging_validation.flagged"} <= stale_fields
    cache = tmp_path / "cache"
    assert recall(card_path, str(data_root), cache) == 8080
    assert (cache / "responses.sqlite").is_file()

    edit_card(folder, lambda card: card["dataset"].update(sha256="0" * 64), card_path.name)
    with pytest.raises(BenchmarkError, match=r"(?s)does not validate.*dataset\.sha256: 0{64} is not the hash"):
        recall(card_path, str(data_root), tmp_path / "other-cache")


def test_recall_takes_the_answers_of_a_task_that_counts_its_judges_labels(tmp_path, data_root):
    """XSTest's rates count the refusal judge's labels: the judge a recall stands in for today's labels nothing, and
    the recall still fills the cache (it once stopped at scoring: "its judge gives no labels")."""
    from benchmark.submissions.recall import recall

    folder = copy_published("gpt-4-xstest", tmp_path / "submissions" / "gpt-4-xstest", ("xstest",))
    cache = tmp_path / "cache"
    assert recall(folder / "xstest.json", str(data_root), cache) == 450
    assert (cache / "responses.sqlite").is_file()


def test_a_backends_own_settings_are_allowed_in_args_and_no_other_backends():
    """A backend declares the args it reads as its own settings (reply-refusal's verdict rule); a submitted config of
    another backend may not set them."""
    from benchmark.submissions.configs import check_model_config

    refusal = {"name": "reply-refusal", "backend": "reply-refusal", "pretrained": "judges/reply-refusal",
               "args": {"short": 300, "on_topic": "sentence-transformers/all-MiniLM-L6-v2", "off_topic_below": 0.3}}
    assert [p.field for p in check_model_config(refusal, "model.yaml")] == []
    other = {"name": "x", "backend": "profanity-check", "args": {"short": 300}}
    assert [p.field for p in check_model_config(other, "model.yaml")] == ["args.short"]


def test_a_model_configs_node_is_shared_read_only_and_a_run_gets_a_fresh_one():
    """A card's checks ask for each of its configs' typed node many times: one node serves them all, and being
    read-only no check can change what another reads; verify, which sets a node into its run, gets its own."""
    from omegaconf.errors import ReadonlyConfigError

    card = S.SUBMISSIONS_DIR / "blenderbot-small" / "diasafety_chatbot.json"
    data = json.loads(card.read_text())["model"]["config"]
    shared = configs.model_config_node(data)
    assert configs.model_config_node(json.loads(json.dumps(data))) is shared
    with pytest.raises(ReadonlyConfigError):
        shared.name = "someone-else"
    fresh = configs.model_config_node(data, writable=True)
    fresh.name = "someone-else"
    assert fresh is not shared and configs.model_config_node(data).name == data["name"] == "blenderbot-small"
