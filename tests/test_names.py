"""A model's name and its results are its own (submissions/names.py): no name that looks like a published model's, no
published card's outputs copied under another name, no folder name that some common file system cannot hold. Each
forgery is built from a published folder and breaks only the rule under test: the same folder under a name of its
own validates."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from benchmark import BenchmarkError
from benchmark.files import unportable
from benchmark import submissions as S
from benchmark.submissions import names, signing
from benchmark.submissions import samples as SF
from benchmark.submissions.checked import CheckStore
from benchmark.submissions.package import validate

# the published folders the forgeries are made of (whole folders, or these cards of them)
CARDS = {"profanity-check": ["diasafety"], "ricota-solar": ["ricota"], "ricota-chatgpt-v1": ["ricota"],
         "smollm2-135m-instruct": ["diasafety", "ricota"]}
# every model published so far (some folders are rebuilt now and then, so not read from the folder)
PUBLISHED = ["blenderbot-large", "blenderbot-medium", "blenderbot-small", "dialogpt-large", "dialogpt-medium",
             "dialogpt-small", "diasafety-detector", "plato2-base", "plato2-large", "profanity-check",
             "qwen2.5-coder-0.5b-instruct", "ricota-chatgpt-v1", "ricota-solar", "smollm2-135m-instruct"]
LOOKS_LIKE = ("looks like the published model {!r} beside it (the same name once look-alike characters are read as "
              "one: 0 as o; 1, I, i and | as l; 5 as s; rn as m; Cyrillic and Greek letters as the Latin ones they "
              "look like): a model's name must not imitate a published model's")


@pytest.fixture
def key(tmp_path, monkeypatch) -> Path:
    """A verifier key made for the test, listed beside the published cards' keys (which still verify them)."""
    from benchmark.submissions.signing import keygen

    private = tmp_path / "verifier.pem"
    keys = {**json.loads(signing.VERIFIER_KEYS.read_text()), **json.loads(keygen(private))}
    (tmp_path / "verifier_keys.json").write_text(json.dumps(keys))
    monkeypatch.setenv("BENCHMARK_VERIFIER_KEYS", str(tmp_path / "verifier_keys.json"))
    return private


def _published(root: Path, name: str, into: str | None = None) -> Path:
    """A published folder as it is, its cards verified (the cards CARDS names, with their samples), in root/name (or
    root/into)."""
    folder = root / (into or name)
    folder.mkdir(parents=True)
    for file in [S.MODEL_FILE] + [t + suffix for t in CARDS[name] for suffix in (S.CARD_SUFFIX, S.SAMPLES_SUFFIX)]:
        shutil.copy(S.SUBMISSIONS_DIR / name / file, folder / file)
    return folder


def _as(root: Path, source: str, name: str, signed_with: Path | None = None) -> Path:
    """A published folder under another model name: its model.yaml's name and its cards' model name changed, its
    verification dropped (it no longer applies) or, with a verifier key, signed again for the new card."""
    folder = _published(root, source, into=name)
    model = yaml.safe_load((folder / S.MODEL_FILE).read_text())
    model["name"] = name
    (folder / S.MODEL_FILE).write_text(yaml.safe_dump(model, sort_keys=False, allow_unicode=True))
    for path in folder.glob("*" + S.CARD_SUFFIX):
        card = json.loads(path.read_text())
        block = card.pop("verification")
        card["model"].update(name=name, config=model)
        if signed_with is not None:
            figures = {k: v for k, v in block.items() if k not in ("key_id", "signature")}
            card["verification"] = signing.sign(card, {**figures, "card_sha256": signing.card_sha256(card)},
                                                signed_with)
        path.write_text(json.dumps(card, ensure_ascii=False))
    return folder


def _unverified(folder: Path) -> None:
    for path in folder.glob("*" + S.CARD_SUFFIX):
        card = json.loads(path.read_text())
        card.pop("verification")
        path.write_text(json.dumps(card))


def _rejected(root: Path, folder: Path) -> list[str]:
    """The problems of one folder when the whole submissions folder loads (the fast checks)."""
    return [str(p) for p in S.load(root).rejected if str(p).startswith(str(folder))]


def _shown(root: Path) -> set[str]:
    return {c.card["model"]["name"] for c in S.load(root).cards}


# ---------------------------------------------------------------------------------------------- look-alike names


@pytest.mark.parametrize("skeleton_of, like", [
    ("dialogpt-Iarge", "dialogpt-large"),  # capital I for l
    ("qwen2.5-coder-O.5b-instruct", "qwen2.5-coder-0.5b-instruct"),  # letter O for zero
    ("pr0fanity-check", "profanity-check"),  # zero for o
    ("smo11m2-135m-instruct", "smollm2-135m-instruct"),  # ones for l
    ("ricota-5olar", "ricota-solar"),
    ("blenderbot-srnall", "blenderbot-small"),  # rn for m
    ("pr\u043efanity-check", "profanity-check"),  # Cyrillic o
    ("di\u0430l\u043egpt-l\u0430rge", "dialogpt-large"),  # Cyrillic a and o
    ("\u03a1rofanity-check", "profanity-check"),  # Greek capital rho
    ("\uff50rofanity-check", "profanity-check"),  # fullwidth p
    ("profanit\u00fd-check", "profanity-check"),  # an accent
    ("profanity\u200b-check", "profanity-check"),  # an invisible space
])
def test_look_alike_names_have_one_skeleton(skeleton_of, like):
    assert names.skeleton(skeleton_of) == names.skeleton(like)


def test_the_published_names_all_look_different():
    found = sorted(set(PUBLISHED) | {p.name for p in S.SUBMISSIONS_DIR.iterdir() if p.is_dir()})
    skeletons = {names.skeleton(n): n for n in found}
    assert len(skeletons) == len(found), sorted(found)
    assert names.skeleton("ricota-chatgpt-v1") != names.skeleton("ricota-chatgpt-v2")
    assert names.skeleton("blenderbot-small") != names.skeleton("blenderbot-large")


@pytest.mark.parametrize("forged, content", [
    ("pr0fanity-check", "ricota-solar"),  # zero for o
    ("Pr0fanity-Check", "ricota-chatgpt-v1"),  # and capitals
    ("prof\u0430nity-check", "ricota-solar"),  # a Cyrillic a (not ASCII either)
])
def test_a_name_that_looks_like_a_published_one_is_refused(tmp_path, forged, content):
    """Another published folder's results under a name that imitates a published model's: only the name is wrong
    (no folder beside it holds those results)."""
    root = tmp_path / "submissions"
    _published(root, "profanity-check")
    folder = _as(root, content, forged)
    found = _rejected(root, folder)
    assert f"{folder}: {LOOKS_LIKE.format('profanity-check')}" in found, found
    assert sum("looks like" in p for p in found) == 1
    assert _shown(root) == {"profanity-check"}  # the published model is not refused for it


@pytest.mark.parametrize("published, forged", [("dialogpt-large", "dialogpt-Iarge"),
                                               ("qwen2.5-coder-0.5b-instruct", "qwen2.5-coder-O.5b-instruct"),
                                               ("ricota-solar", "r1cota-solar")])
def test_the_audits_look_alike_names_are_refused(tmp_path, key, published, forged):
    """A model published under the name (its card signed by a listed key), beside another card under the look-alike
    name; validated in full, the one problem is the name."""
    root = tmp_path / "submissions"
    _as(root, "ricota-solar", published, signed_with=key)
    folder = _as(root, "ricota-chatgpt-v1", forged)
    valid, problems = validate([root])
    assert [str(p) for p in problems] == [f"{folder}: {LOOKS_LIKE.format(published)}",
                                          f"{folder}: 1 valid card(s) not shown while the folder has problems"]
    assert valid == 1 and _shown(root) == {published}
    # the folder validated on its own, or its card, sees the published folder beside it too
    assert f"{folder}: {LOOKS_LIKE.format(published)}" in [str(p) for p in validate([folder])[1]]
    assert f"{folder}: {LOOKS_LIKE.format(published)}" in [str(p) for p in validate([folder / "ricota.json"])[1]]


def test_the_same_forgery_under_a_name_of_its_own_validates(tmp_path, key):
    root = tmp_path / "submissions"
    _as(root, "ricota-solar", "dialogpt-large", signed_with=key)
    _as(root, "ricota-chatgpt-v1", "dialogpt-larger")
    assert validate([root]) == (2, [])


def test_look_alikes_of_which_none_is_published_are_not_this_rules(tmp_path):
    """Which of two look-alikes imitates the other is what is published: a folder with a verified card. Neither is
    here, so both show (unverified) until one is published; then the other is refused."""
    root = tmp_path / "submissions"
    _unverified(_published(root, "profanity-check"))
    _as(root, "ricota-solar", "pr0fanity-check")
    assert _shown(root) == {"profanity-check", "pr0fanity-check"}


def test_two_published_look_alikes_are_both_refused(tmp_path, key):
    root = tmp_path / "submissions"
    first = _as(root, "ricota-chatgpt-v1", "ricota-5olar", signed_with=key)
    _published(root, "ricota-solar")
    found = [str(p) for p in S.load(root).rejected]
    assert f"{first}: {LOOKS_LIKE.format('ricota-solar')}" in found
    assert f"{root / 'ricota-solar'}: {LOOKS_LIKE.format('ricota-5olar')}" in found
    assert _shown(root) == set()


# ---------------------------------------------------------------------------------------------- copied results


def _copied(root: Path, folder: Path, source: str, task: str) -> str:
    return (f"{folder / (task + S.CARD_SUFFIX)}: samples: the outputs in {task}{S.SAMPLES_SUFFIX} are those of the "
            f"published card {root / source / (task + S.CARD_SUFFIX)} (model {source!r}): a copy of another model's "
            "results under a new name is not a submission")


@pytest.mark.parametrize("source", ["profanity-check", "ricota-solar", "smollm2-135m-instruct"])
def test_a_published_models_results_under_another_name_are_refused(tmp_path, source):
    root = tmp_path / "submissions"
    _published(root, source)
    folder = _as(root, source, "my-new-model")
    valid, problems = validate([root])
    assert [str(p) for p in problems] == [_copied(root, folder, source, t) for t in CARDS[source]] + [
        f"{folder}: {len(CARDS[source])} valid card(s) not shown while the folder has problems"]
    assert valid == len(CARDS[source]) and _shown(root) == {source}


def test_a_copy_is_refused_however_its_samples_file_is_rewritten(tmp_path):
    """The samples in another order, written again: other bytes, another sha256, the same outputs."""
    root = tmp_path / "submissions"
    _published(root, "profanity-check")
    folder = _as(root, "profanity-check", "my-new-model")
    path = folder / "diasafety.samples.jsonl.gz"
    samples = S.read_samples(path)
    sha = SF.write_samples([dict(reversed(s.items())) for s in reversed(samples)], path)
    card = json.loads((folder / "diasafety.json").read_text())
    assert sha != card["samples"]["sha256"]
    card["samples"]["sha256"] = sha
    (folder / "diasafety.json").write_text(json.dumps(card))
    assert [str(p) for p in validate([root])[1]] == [
        _copied(root, folder, "profanity-check", "diasafety"),
        f"{folder}: 1 valid card(s) not shown while the folder has problems"]
    shutil.rmtree(root / "profanity-check")
    assert validate([root]) == (1, [])  # alone, the rewritten copy breaks no other rule


def test_a_copy_of_a_card_that_is_not_published_is_not_this_rules(tmp_path):
    """Two unverified folders with the same outputs: neither is the published one (the checks' own tests copy a
    folder under other names this way); once one is verified the other is refused."""
    root = tmp_path / "submissions"
    _unverified(_published(root, "profanity-check"))
    _as(root, "profanity-check", "my-new-model")
    assert _shown(root) == {"profanity-check", "my-new-model"}


def test_the_board_sees_a_copy_once_its_original_is_published(tmp_path):
    """With results kept (the board's store), a folder unchanged since it was accepted is refused when the folder
    beside it becomes the published original of its outputs."""
    root = tmp_path / "submissions"
    original = _published(root, "profanity-check")
    verified = (original / "diasafety.json").read_bytes()
    _unverified(original)
    folder = _as(root, "profanity-check", "my-new-model")
    store = tmp_path / "checks.sqlite"
    loaded = S.load(root, thorough=True, store=CheckStore(store))
    assert {c.card["model"]["name"] for c in loaded.cards} == {"profanity-check", "my-new-model"}
    (original / "diasafety.json").write_bytes(verified)
    loaded = S.load(root, thorough=True, store=CheckStore(store))
    assert {c.card["model"]["name"] for c in loaded.cards} == {"profanity-check"}
    assert _copied(root, folder, "profanity-check", "diasafety") in [str(p) for p in loaded.rejected]
    again = S.load(root, thorough=True, store=CheckStore(store))  # kept: the same result without checking again
    assert [str(p) for p in again.rejected] == [str(p) for p in loaded.rejected]


def test_the_published_cards_all_record_different_outputs():
    """The replay models and the models run here: no two published cards of a task share their outputs."""
    seen: dict[tuple[str, str], str] = {}
    for path in sorted(S.SUBMISSIONS_DIR.glob("*/*" + S.SAMPLES_SUFFIX)):
        task = path.name.removesuffix(S.SAMPLES_SUFFIX)
        outputs, _ = names._read_outputs(path, task)
        if outputs is None:  # a file rebuilt right now
            continue
        assert (task, outputs) not in seen, (path.parent.name, seen.get((task, outputs)))
        seen[(task, outputs)] = path.parent.name
    assert len(seen) >= 5


# ---------------------------------------------------------------------------------------------- portable names


@pytest.mark.parametrize("name, why", [
    ("con", "CON is a device name Windows reserves"),
    ("NUL", "NUL is a device name Windows reserves"),
    ("Aux", "AUX is a device name Windows reserves"),
    ("com1", "COM1 is a device name Windows reserves"),
    ("lpt1.tar.gz", "LPT1 is a device name Windows reserves"),
    ("Con.model", "CON is a device name Windows reserves"),
    ("model<b>", "holds '<'"), ("model>b", "holds '>'"), ('model"b', "holds '\"'"), ("model:b", "holds ':'"),
    ("model\\b", "holds '\\\\'"), ("model|b", "holds '|'"), ("model?", "holds '?'"), ("model*", "holds '*'"),
    ("ricota-solar.", "ends with a dot: Windows drops a dot or a space at the end of a name"),
])
def test_a_folder_name_no_common_file_system_can_hold_is_refused(tmp_path, name, why):
    root = tmp_path / "submissions"
    folder = _as(root, "ricota-solar", name)
    found = _rejected(root, folder)
    assert any(p.startswith(f"{folder}: a model folder's name must name a folder on every file system: ")
               and why in p for p in found), found
    assert _shown(root) == set()


@pytest.mark.parametrize("name", ["ricota-solar ", "ricota\x01solar", "ricota-solar\n", "r" * 101])
def test_a_folder_name_with_a_control_character_a_space_at_its_end_or_too_long_is_refused(tmp_path, name):
    root = tmp_path / "submissions"
    folder = _as(root, "ricota-solar", name)
    assert f"{folder}: a model folder's name is printable ASCII, at most 100 characters, without a space at either " \
           "end" in _rejected(root, folder)
    assert _shown(root) == set()


def test_a_folder_name_of_100_characters_that_breaks_no_rule_validates(tmp_path):
    root = tmp_path / "submissions"
    _as(root, "ricota-solar", "r" * 100)
    assert _shown(root) == {"r" * 100}


@pytest.mark.parametrize("name", ["con", "nul.x", "COM9", "model.", "abc\n", "a/b", "a:b", "r" * 101])
def test_a_run_and_a_package_refuse_a_name_that_cannot_name_a_folder_everywhere(name):
    from benchmark.run.folder import check_name

    with pytest.raises(BenchmarkError, match="^model.name=.* cannot name a folder"):
        check_name("model.name", name)
    assert unportable(name)


@pytest.mark.parametrize("name", ["ricota-solar", "qwen2.5-coder-0.5b-instruct", "console", "com10", "nul-model",
                                  "r" * 100])
def test_portable_names_pass(name):
    from benchmark.run.folder import check_name

    check_name("model.name", name)
    assert unportable(name) is None
