"""A submission is untrusted: a forged score is never accepted or signed, a submitted config never reaches a secret
or a file outside its place, and no file takes the validator or the board down."""

from __future__ import annotations

import gzip
import json
import os
import shutil
from pathlib import Path

import pytest
from conftest import copy_published
import yaml
from test_api_retries import fake_api  # noqa: F401  (a fixture: a scripted chat-completions server)
from test_submissions import SEED, _set, edit_card, folder, problems_of, verifier_key  # noqa: F401  (fixtures)

from benchmark import BenchmarkError
from benchmark import submissions as S
from benchmark.run.runner import run
from benchmark.models.base import Backend
from benchmark.submissions import rules
from benchmark.submissions import samples as SF
from benchmark.cli.submit import main as submit_main
from benchmark.submissions.package import package, validate
from benchmark.submissions.verify import verify
from benchmark.run.card_record import ScoreCard


def _forge(folder: Path, change) -> list[dict]:
    """Rewrite the samples with `change`, then make the card consistent with them as a careful forger would: the
    samples' hash, the metrics and the breakdown recomputed from the forged samples."""
    path = folder / "diasafety.samples.jsonl.gz"
    card = json.loads((folder / "diasafety.json").read_text())
    samples = change(S.read_samples(path), card)
    metrics, breakdown = rules.rescored(ScoreCard.model_validate(card), samples)
    card.update(metrics=metrics, breakdown=breakdown)
    card["samples"].update(sha256=SF.write_samples(samples, path), n=len(samples))
    (folder / "diasafety.json").write_text(json.dumps(card))
    return samples


def test_gold_labels_set_to_the_predictions_are_rejected(folder, data_root):
    def perfect(samples, card):
        return [{**s, "target": s["prediction"] if s["prediction"] != "invalid" else s["target"]} for s in samples]

    forged = _forge(folder, perfect)
    card = json.loads((folder / "diasafety.json").read_text())
    assert card["metrics"]["macro_f1"]["value"] > 0.9  # what the forger would have shown
    found = problems_of(folder)
    assert any("diasafety.samples.jsonl.gz: target: the samples' ids, gold labels or groups are not the task's own"
               in p for p in found), found
    # with the data at hand, the records are named
    named = [str(p) for p in validate([folder], data_root=str(data_root))[1]]
    changed = [s["id"] for s, t in zip(forged, S.read_samples(S.SUBMISSIONS_DIR / SEED / "diasafety.samples.jsonl.gz"))
               if s["target"] != t["target"]]
    assert any(f"records that differ: {changed[:10]}" in p for p in named), named


def test_a_group_field_rewritten_is_rejected(folder):
    _forge(folder, lambda samples, card: [{**s, "group": {"category": "Offending User"}} for s in samples])
    assert any("are not the task's own" in p for p in problems_of(folder))


def test_wrong_records_dropped_as_malformed_are_rejected(folder):
    def drop(samples, card):
        wrong = [s for s in samples if s["prediction"] != s["target"]][:300]
        card["dataset"]["malformed"] = [{"id": s["id"], "error": "malformed"} for s in wrong]
        card["dataset"]["n"] = len(samples) - len(wrong)
        return [s for s in samples if s not in wrong]

    _forge(folder, drop)
    found = problems_of(folder)
    assert any("dataset.malformed: 300 records left out as malformed; task diasafety cannot score exactly 0" in p
               for p in found), found
    assert any("are not the task's own" in p for p in found), found


def test_a_lowered_record_count_is_rejected(folder):
    edit_card(folder, _set(["dataset", "n_total"], 795))
    edit_card(folder, _set(["dataset", "n"], 795))
    assert any("dataset.n: 795 of 795 records: a published card of task diasafety covers all 1095 of its 1095" in p
               for p in problems_of(folder))


@pytest.mark.parametrize("path, value, message", [
    (["breakdown", "per_class", "Offending User", "f1"], 0.99, "is not what the samples give"),
    (["breakdown", "per_class", "Safe", "precision"], float("nan"), "nan is not a finite number"),
    (["breakdown", "predictions", "Safe"], 1, "is not what the samples give"),
    (["breakdown", "majority_baseline", "label"], "Biased Opinion", "is not what the samples give"),
])
def test_a_forged_breakdown_is_rejected(folder, path, value, message):
    edit_card(folder, _set(path, value))
    found = problems_of(folder)
    assert any(f"diasafety.json: {'.'.join(path)}: " in p and message in p for p in found), found


@pytest.mark.parametrize("path, message", [
    (["task", "config_sha256"], "is not the hash of task diasafety's definition"),
    (["model", "config_sha256"], "is not the hash of the config beside it"),
])
def test_forged_config_hashes_are_rejected(folder, path, message):
    edit_card(folder, _set(path, "0" * 64))
    assert any(f"{'.'.join(path)}: {message}" in p for p in problems_of(folder))


def test_a_card_with_failed_requests_is_not_publishable(folder):
    def fail_one(samples, card):
        card["run"]["failed"] = 1
        return [{**s, "error": "TimeoutError: the server did not answer", "prediction": "invalid"} if i == 0 else s
                for i, s in enumerate(samples)]

    _forge(folder, fail_one)
    found = problems_of(folder)
    assert any("run.failed: 1 requests failed; a published card has none" in p for p in found), found
    assert any("error: 1 samples failed" in p for p in found), found


def _listed_weights(card) -> str:
    """The card lists weight files (as a run of a local model folder does); their fingerprint's sha256."""
    from benchmark.models.weights import Fingerprint, WeightFile

    files = (WeightFile("model.safetensors", 1234, "a" * 64),)
    card["model"]["weights"] = {"sha256": Fingerprint(files).sha256, "files": [vars(f) for f in files]}
    return card["model"]["weights"]["sha256"]


def test_weights_a_card_lists_are_the_weights_its_config_pins(folder):
    from benchmark.identity import model_sha256
    from benchmark.submissions.configs import model_config_node

    assert problems_of(folder) == []  # the field is optional: a card without it, as every published one, is valid
    edit_card(folder, _listed_weights)
    assert any("model.config.sha256: does not pin the weights the card lists" in p for p in problems_of(folder))
    edit_card(folder, lambda card: card["model"]["weights"].update(sha256="b" * 64))
    assert any("model.weights.sha256: is not the hash of the files listed beside it" in p
               for p in problems_of(folder))

    def pinned(card):  # as packaging writes a run of a local model: the config pins the listed weights
        card["model"]["config"]["sha256"] = _listed_weights(card)
        card["model"]["config_sha256"] = model_sha256(model_config_node(card["model"]["config"]))
        (folder / "model.yaml").write_text(yaml.safe_dump(card["model"]["config"], sort_keys=False))

    edit_card(folder, pinned)
    assert problems_of(folder) == []


# ------------------------------------------------------------------------------------- configs and secrets


@pytest.mark.parametrize("field, value", [
    ("replay", {"path": "../../../../etc/os-release", "output": "{{ x }}"}),
    ("replay", {"path": "/etc/os-release", "output": "{{ x }}"}),
    ("pretrained", "/home/maintainer/private-model"),
    ("pretrained", "../../outside"),
    ("gguf_file", "../weights.gguf"),
    ("tokenizer", "../../../../etc"),  # every field that may name a file or folder, whatever its key
    ("args", {"on_topic": "/home/maintainer/encoder"}),
])
def test_a_submitted_config_names_no_path_outside_its_place(folder, field, value):
    model = yaml.safe_load((folder / "model.yaml").read_text())
    model[field] = value
    (folder / "model.yaml").write_text(yaml.safe_dump(model))
    edit_card(folder, _set(["model", "config", field], value))
    found = problems_of(folder)
    assert any(f"model.yaml: {field.split('.')[0]}" in p and "names no absolute path and no .." in p for p in found), found


@pytest.mark.parametrize("value", ["judges//tmp/x", "judges/../../x", "judges/reply-harm/../../x"])
def test_judges_slash_names_a_shipped_judge_and_nothing_else(folder, value):
    from benchmark import BenchmarkError
    from benchmark.paths import judge_folder

    model = yaml.safe_load((folder / "model.yaml").read_text())
    model["pretrained"] = value
    (folder / "model.yaml").write_text(yaml.safe_dump(model))
    edit_card(folder, _set(["model", "config", "pretrained"], value))
    assert any("model.yaml: pretrained" in p and ("judges/NAME names a shipped judge" in p or "no .." in p)
               for p in problems_of(folder))
    with pytest.raises(BenchmarkError, match="judges/NAME names a shipped judge"):
        judge_folder(value)


@pytest.fixture(scope="module")
def api_card(data_root, tmp_path_factory):
    """A packaged card of a model answered by a scripted chat-completions server (made once: a whole run of the
    task), and the server."""
    from test_api_retries import FakeChatServer

    from benchmark.composition import compose

    server, root = FakeChatServer(lambda n, body, attempt: {}), tmp_path_factory.mktemp("api-card")
    _, path = run(compose([f"results_dir={root / 'results'}", "progress=false", "model=openai-chat",
                           "model.name=api-model", f"model.base_url={server.url}", "model.served_model=m",
                           "model.api_key_env=null", "model.num_concurrent=16", "model.generation.max_new_tokens=4",
                           "task=diasafety"]))
    out, _ = package(path.parent, root / "subs", str(data_root))
    yield server, out
    server.close()


def _api_submission(api_card, tmp_path) -> tuple:
    """The server and a copy of the packaged card, this test's to change."""
    server, out = api_card
    shutil.copytree(out.parent, tmp_path / "subs" / out.parent.name)
    return server, tmp_path / "subs" / out.parent.name / out.name


def _resubmit(card_path: Path, change) -> None:
    """The card's model config changed by `change` as a submitter would: model.yaml, the card's copy, its hash."""
    from benchmark.identity import model_sha256
    from benchmark.submissions.configs import model_config_node

    model = yaml.safe_load((card_path.parent / "model.yaml").read_text())
    change(model)
    (card_path.parent / "model.yaml").write_text(yaml.safe_dump(model))
    card = json.loads(card_path.read_text())
    card["model"].update(config=model, backend=model["backend"], config_sha256=model_sha256(model_config_node(model)))
    card_path.write_text(json.dumps(card))


def test_verify_never_sends_a_secret_where_a_submitted_config_says(api_card, data_root, tmp_path, monkeypatch,
                                                                    verifier_key):  # noqa: F811
    """A submitter's config: a public base_url and api_key_env naming the maintainer's cloud secret."""
    server, out = _api_submission(api_card, tmp_path)
    _resubmit(out, lambda model: model.update(base_url="https://collector.example/v1/chat/completions",
                                              api_key_env="AWS_SECRET_ACCESS_KEY"))
    assert validate([out.parent]) == (1, [])  # a valid card: the rules cannot tell a bad endpoint from a good one

    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "the-maintainers-cloud-secret")
    with pytest.raises(BenchmarkError, match="the card's model .* calls out over the network; give the endpoint"):
        verify(out, n=5, data_root=str(data_root))
    sent_before = len(server.requests)
    monkeypatch.setenv("MAINTAINER_KEY", "the-maintainers-own-key")
    result = verify(out, n=5, data_root=str(data_root), endpoints={"model": server.url},
                    key_envs={"model": "MAINTAINER_KEY"})
    assert result.verified and len(server.requests) == sent_before + 5
    assert not any("the-maintainers-cloud-secret" in json.dumps(h) for h in server.headers)
    assert [h["Authorization"] for h in server.headers[-5:]] == ["Bearer the-maintainers-own-key"] * 5
    assert submit_main(["verify", str(out), "--endpoint", "judge=http://x", "--data-root", str(data_root)]) == 2


def _lm_eval_openai(model: dict) -> None:
    """lm-eval's own OpenAI client and no endpoint: lm-eval would call api.openai.com with $OPENAI_API_KEY."""
    model["backend"] = "lm-eval:openai-chat-completions"
    model.pop("base_url", None)
    model.pop("api_key_env", None)


def test_verify_runs_an_lm_eval_api_model_only_against_the_maintainers_endpoint(api_card, data_root, tmp_path,
                                                                                monkeypatch, capsys):
    server, out = _api_submission(api_card, tmp_path)
    _resubmit(out, _lm_eval_openai)
    assert validate([out.parent]) == (1, [])
    monkeypatch.setenv("OPENAI_API_KEY", "the-maintainers-openai-key")
    sent_before = len(server.requests)

    assert submit_main(["verify", str(out), "--n", "3", "--data-root", str(data_root)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: the card's model (api-model, backend "
                                                   "lm-eval:openai-chat-completions) calls out over the network; "
                                                   "give the endpoint to verify it with: --endpoint model=URL"), err
    assert len(server.requests) == sent_before

    monkeypatch.setenv("MAINTAINER_KEY", "the-maintainers-own-key")
    verify(out, n=5, data_root=str(data_root), endpoints={"model": server.url}, key_envs={"model": "MAINTAINER_KEY"})
    assert len(server.requests) == sent_before + 5  # the maintainer's endpoint answered them all
    assert not any("the-maintainers-openai-key" in json.dumps(h) for h in server.headers)
    assert [h["Authorization"] for h in server.headers[-5:]] == ["Bearer the-maintainers-own-key"] * 5


def test_lm_eval_api_models_send_only_the_key_their_config_names(compose, data_root, fake_api,  # noqa: F811
                                                                 monkeypatch):
    server = fake_api()
    monkeypatch.setenv("OPENAI_API_KEY", "a-key-nobody-named")
    run(compose("model=openai-chat", "model.backend=lm-eval:openai-chat-completions", f"model.base_url={server.url}",
                "model.api_key_env=null", "limit=3"))
    assert len(server.headers) == 3 and not any("a-key-nobody-named" in json.dumps(h) for h in server.headers)
    monkeypatch.setenv("NAMED_KEY", "the-named-key")
    run(compose("model=openai-chat", "model.backend=lm-eval:openai-chat-completions", f"model.base_url={server.url}",
                "model.api_key_env=NAMED_KEY", "limit=4"))
    assert server.headers[-1]["Authorization"] == "Bearer the-named-key"


@pytest.mark.parametrize("backend, reach", [
    ("hf", "local"), ("profanity-check", "local"), ("detoxify", "local"), ("diasafety-detector", "local"),
    ("keywords", "local"), ("replay", "local"),
    ("local-chat-completions", "endpoint"), ("lm-eval:openai-chat-completions", "endpoint"),
    ("lm-eval:local-completions", "endpoint"), ("lm-eval:openai-completions", "endpoint"),
    ("lm-eval:azure-openai-chat-completions", "endpoint"),
    # each reads its own keys, through a library of its own or straight from the environment
    ("lm-eval:anthropic-chat", "anywhere"), ("lm-eval:litellm", "anywhere"), ("lm-eval:textsynth", "anywhere"),
    ("lm-eval:watsonx_llm", "anywhere"), ("lm-eval:gguf", "anywhere"), ("lm-eval:dummy", "anywhere"),
])
def test_every_backend_says_where_its_requests_go(compose, backend, reach):
    from benchmark.models.registry import backend_class

    cfg = compose("model=openai-chat", f"model.backend={backend}").model
    assert backend_class(cfg).reach(cfg) == reach


class Undeclared(Backend):
    """A classifier that says nothing of where its requests go (its verdicts are profanity-check's)."""

    operations = frozenset({"classify"})
    verdict_fields = frozenset({"unsafe", "score"})

    def __init__(self, cfg, data_root=None):
        pass


def test_a_backend_that_does_not_say_is_never_verified(compose, data_root, tmp_path, monkeypatch):
    """A new backend that declares nothing is taken to call out wherever it decides: verify does not run it."""
    from benchmark.models import registry
    from benchmark.models.base import Backend, Reach

    assert Undeclared.reach(None) is Reach.ANYWHERE
    for name, target in registry.builtin().items():  # each of the suite's own says
        module, _, attr = target.partition(":")
        cls = getattr(__import__(module, fromlist=[attr]), attr)
        assert "requests_go" in vars(cls) or cls.reach.__func__ is not Backend.reach.__func__, name
    _, path = run(compose("model=profanity-check", "task=diasafety"))
    out, _ = package(path.parent, tmp_path / "subs", str(data_root))
    monkeypatch.setitem(registry.REGISTERED, "profanity-check", Undeclared)
    with pytest.raises(BenchmarkError, match=r"the card's model \(profanity-check, backend profanity-check\) may "
                                             "call out over the network wherever its backend decides"):
        verify(out, n=2, data_root=str(data_root))


# ------------------------------------------------------------------------------------------ bounded reading


def test_a_card_that_is_a_symlink_to_an_endless_file_is_rejected_at_once(folder):
    (folder / "diasafety.json").unlink()
    os.symlink("/dev/zero", folder / "diasafety.json")
    _copy_seed_as(folder.parent, "another-model")
    loaded = S.load(folder.parent, thorough=True)  # never read: it is not a regular file
    assert [c.card["model"]["name"] for c in loaded.cards] == ["another-model"]  # the other folder still loads
    assert any("diasafety.json: not a regular file" in str(p) for p in loaded.rejected)


def _copy_seed_as(root: Path, name: str) -> None:
    dst = root / name
    copy_published(SEED, dst)
    model = yaml.safe_load((dst / "model.yaml").read_text())
    model["name"] = name
    (dst / "model.yaml").write_text(yaml.safe_dump(model))
    card = json.loads((dst / "diasafety.json").read_text())
    card.pop("verification")
    card["model"].update(name=name, config=model)
    (dst / "diasafety.json").write_text(json.dumps(card))


def test_a_gzip_bomb_of_samples_stops_with_one_problem(folder):
    path = folder / "diasafety.samples.jsonl.gz"
    line = json.dumps({"id": "0", "prediction": "Safe", "output": "x" * 1000}) + "\n"
    with gzip.open(path, "wt") as f:  # 100 MiB of lines, about 0.5 MB compressed
        for _ in range(100 * 1024):
            f.write(line)
    from benchmark.identity import file_sha256

    edit_card(folder, _set(["samples", "sha256"], file_sha256(path)))
    found = problems_of(folder)
    assert any("more than 64 MiB or 100,000 lines once decompressed" in p for p in found), found


def test_a_card_with_a_hundred_thousand_metrics_is_one_problem(folder):
    edit_card(folder, lambda card: card["metrics"].update(
        {f"m{i}": {"value": 0.5, "ci_low": 0.4, "ci_high": 0.6, "n": 1} for i in range(124_000)}))
    found = problems_of(folder)  # one problem from the bound on keys, whatever the machine's speed
    n = len(json.loads((folder / "diasafety.json").read_text())["metrics"])
    assert [p for p in found if "diasafety.json" in p] == [
        f"{folder / 'diasafety.json'}: metrics: {n:,} keys in one object; at most 2,000"]


def test_problems_are_capped_per_file(folder):
    edit_card(folder, lambda card: card["metrics"].update(
        {f"made_up_{i}": {"value": 0.5, "ci_low": 0.4, "ci_high": 0.6, "n": 1} for i in range(60)}))
    found = [p for p in problems_of(folder) if p.startswith(str(folder / "diasafety.json"))]
    assert len(found) == 21 and found[-1].endswith("and 40 more problems")


def test_one_folder_that_breaks_the_checks_leaves_the_others(folder, monkeypatch):
    _copy_seed_as(folder.parent, "another-model")
    real = rules.check_card

    def breaks_on_one(path, card, *args, **kwargs):
        if card["model"]["name"] == SEED:
            raise MemoryError("a pathological card")
        return real(path, card, *args, **kwargs)

    monkeypatch.setattr(S.loading, "check_card", breaks_on_one)
    loaded = S.load(folder.parent)
    assert [c.card["model"]["name"] for c in loaded.cards] == ["another-model"]
    assert any(f"{folder}: could not be checked: MemoryError" in str(p) for p in loaded.rejected)


# ----------------------------------------------------------------------------------------------- packaging


def test_packaging_never_silently_replaces_a_signed_card(compose, data_root, tmp_path, verifier_key, capsys):
    _, path = run(compose("model=profanity-check", "task=diasafety"))
    root = tmp_path / "subs"
    out, replaced = package(path.parent, root, str(data_root))
    assert replaced is None
    verify(out, n=5, data_root=str(data_root), key=verifier_key)
    signed = out.read_text()
    assert submit_main([str(path.parent), "--to", str(root)]) == 2
    assert "is a verified (signed) card; packaging would replace it" in capsys.readouterr().err
    assert out.read_text() == signed
    assert submit_main([str(path.parent), "--to", str(root), "--replace"]) == 0
    assert f"replaced the card {out}" in capsys.readouterr().out
    assert "verification" not in json.loads(out.read_text())


def test_packaging_and_export_read_no_samples_file_outside_the_run(compose, data_root, tmp_path):
    """A run's samples file is read (and a torn last line cut) only inside the run's folder."""
    from benchmark.submissions.export import to_inspect

    _, path = run(compose("model=profanity-check", "task=diasafety"))
    outside = tmp_path / "elsewhere.jsonl"
    shutil.copy(path.parent / "samples.jsonl", outside)
    with open(outside, "ab") as f:
        f.write(b'{"id": "torn')  # a torn line that reading a run's samples would cut off
    before = outside.read_bytes()
    card = json.loads(path.read_text())
    card["samples"]["file"] = str(outside)
    path.write_text(json.dumps(card))
    with pytest.raises(BenchmarkError, match="samples.file: .* leads outside"):
        package(path.parent, tmp_path / "subs", str(data_root))
    with pytest.raises(BenchmarkError, match="samples.file: .* leads outside"):
        to_inspect(path.parent, tmp_path / "log.json")
    assert outside.read_bytes() == before
