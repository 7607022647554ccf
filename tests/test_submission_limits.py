"""A forged submission is rejected with one problem naming the file and the field: JSON read strictly, every field of
a card's run checked, no number, nesting, string or object that takes the validator or the board down, no folder
shown with any problem, no look-alike model names. Each test forges a copy of a published folder."""

from __future__ import annotations

import gzip
import json
import shutil
import sys
import time
from pathlib import Path

import pytest

from test_submissions import _set, edit_card, folder, problems_of  # noqa: F401  (fixtures)
from test_trust import _copy_seed_as

from benchmark import submissions as S
from benchmark.identity import file_sha256
from benchmark.submissions import privacy
from benchmark.submissions import samples as SF
from benchmark.cli.submit import main as submit_main
from benchmark.submissions.package import validate

SAMPLES = "diasafety.samples.jsonl.gz"


def _write_lines(folder: Path, lines: list[str]) -> None:
    """The samples file as these lines, exactly as written, and the card's hash of it."""
    path = folder / SAMPLES
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.writelines(line + "\n" for line in lines)
    edit_card(folder, _set(["samples", "sha256"], file_sha256(path)))


def _sample_lines(folder: Path) -> list[str]:
    with gzip.open(folder / SAMPLES, "rt", encoding="utf-8") as f:
        return f.read().splitlines()


# ------------------------------------------------------------------------------------------------ strict JSON


def test_a_key_twice_in_a_card_is_rejected(folder):
    """Python keeps the last of two keys, another reader the first: the forged metrics come first."""
    path = folder / "diasafety.json"
    card = json.loads(path.read_text())
    forged = {k: {**m, "value": m["ci_high"]} for k, m in card["metrics"].items()}
    path.write_text('{"metrics": ' + json.dumps(forged) + ", " + json.dumps(card)[1:])
    assert problems_of(folder) == [f"{path}: not a readable JSON score card: key 'metrics' appears twice in one "
                                   "object; a JSON reader would silently keep the last"]
    assert S.load(folder.parent).cards == []


def test_a_key_twice_in_a_sample_line_is_rejected(folder):
    lines = _sample_lines(folder)
    sample = json.loads(lines[0])
    lines[0] = lines[0][:-1] + ', "prediction": ' + json.dumps(sample["prediction"]) + "}"
    lines[0] = '{"prediction": "Biased Opinion", ' + lines[0][1:]
    _write_lines(folder, lines)
    assert problems_of(folder) == [f"{folder / SAMPLES}: line 1: key 'prediction' appears twice in one object; a "
                                   "JSON reader would silently keep the last"]


@pytest.mark.parametrize("key, raw, message", [
    ("score", "NaN", "line 1: output.score: nan is not a finite number"),  # a rule "score >= threshold" holds on NaN
    ("score", "-Infinity", "line 1: output.score: -inf is not a finite number"),
    ("score", "1e309", "line 1: output.score: inf is not a finite number"),  # Python reads it as infinity
    ("prediction", '"\\ud83d"', "line 1: prediction: a lone surrogate ('\\ud83d') at character 0: not text"),
])
def test_a_number_that_is_not_one_or_text_that_is_not_text_is_rejected_at_its_field(folder, key, raw, message):
    lines = _sample_lines(folder)
    sample = json.loads(lines[0])
    old = f'"{key}": {json.dumps(sample["output"].get(key, sample.get(key)))}'
    assert old in lines[0]
    lines[0] = lines[0].replace(old, f'"{key}": {raw}', 1)
    _write_lines(folder, lines)
    found = problems_of(folder)
    assert found == [f"{folder / SAMPLES}: {message}"], found


def test_a_card_with_a_number_that_is_not_one_is_rejected_at_its_field(folder):
    path = folder / "diasafety.json"
    path.write_text(path.read_text().replace('"value": ', '"value": NaN, "was": ', 1))
    found = problems_of(folder)
    assert len(found) == 1 and found[0].startswith(f"{path}: metrics.") and "nan is not a finite number" in found[0]


# ------------------------------------------------------------------------------------------- the run's fields


@pytest.mark.parametrize("field, value, message, names", [
    (["run", "wall_s"], float("nan"), "run.wall_s: nan is not a finite number", ""),
    (["run", "samples_per_s"], float("inf"), "run.samples_per_s: inf is not a finite number", ""),
    (["run", "seconds", "loading"], float("inf"), "run.seconds.loading: inf is not a finite number", ""),
    (["run", "started_at"], "yesterday", "run.started_at: 'yesterday' is not an ISO 8601 date-time", ""),
    (["run", "started_at"], "2026-13-01T03:04:43+00:00", "run.started_at: '2026-13-01T03:04:43+00:00' is not an ISO", ""),
    (["run", "started_at"], "2026-12-01", "run.started_at: '2026-12-01' is not an ISO 8601 date-time", ""),
    (["run", "git_commit"], "main", "run.git_commit: ", "'main'"),
    (["run", "git_commit"], "a." * 30_000, "run.git_commit: ", "'a.a.a.a."),
    (["run", "seed"], -1, "run.seed: ", "-1"),
    (["run", "bootstrap"], 10**9, "run.bootstrap: 1000000000 resamples; validation draws them again", ""),
    (["run", "judge_calls"], {"x": 1.5}, "run.judge_calls.x: ", "1.5"),
    (["run", "note"], "anything", "run.note: ", "not a field"),
])
def test_every_run_field_is_typed_and_checked(folder, field, value, message, names):
    edit_card(folder, _set(field, value))
    found = problems_of(folder)
    assert any(p.startswith(f"{folder / 'diasafety.json'}: {message}") for p in found), found
    if names:  # a schema rule: past the field and the value it names, the wording is the validator's
        mine = [p for p in found if p.startswith(f"{folder / 'diasafety.json'}: {message}")]
        assert len(mine) == 1 and names in mine[0], found
    assert all(len(p) < 600 for p in found)  # a value is quoted, cut to a line


@pytest.fixture
def replay_folder(tmp_path) -> Path:
    """A published folder whose model is a replay of recorded answers (judged by two classifiers)."""
    dst = tmp_path / "submissions" / "blenderbot-small"
    shutil.copytree(S.SUBMISSIONS_DIR / "blenderbot-small", dst)
    edit_card(dst, lambda card: card.pop("verification"), "diasafety_chatbot.json")
    return dst


@pytest.mark.parametrize("field, value, message", [
    (["model", "backend"], "hf", "model.backend: 'hf' is not its config's backend ('replay')"),
    (["judges", 1, "backend"], "openai-chat", "judges[1].backend: 'openai-chat' is not its config's backend "
                                              "('diasafety-detector')"),
    (["judges", 0, "name"], "gpt-4o", "judges[0].name: 'gpt-4o' is not its config's name ('profanity-check')"),
])
def test_a_card_claiming_another_backend_than_its_config_is_rejected(replay_folder, field, value, message):
    assert problems_of(replay_folder) == []
    edit_card(replay_folder, _set(field, value), "diasafety_chatbot.json")
    assert f"{replay_folder / 'diasafety_chatbot.json'}: {message}" in problems_of(replay_folder)


def test_a_card_of_another_split_is_rejected(folder):
    edit_card(folder, _set(["dataset", "source"], "data_root:diasafety/val.json"))
    edit_card(folder, _set(["dataset", "split"], "val"))
    card = folder / "diasafety.json"
    assert problems_of(folder) == [
        f"{card}: dataset.split: 'val': task diasafety scores its 'test' split",
        f"{card}: dataset.source: 'data_root:diasafety/val.json' is not where task diasafety reads its data "
        "(bundled:diasafety/test.json or data_root:diasafety/test.json or https://raw.githubusercontent.com/thu-coai/DiaSafety/"
        "5106a041b1c7e36f30e02a97c44897a7f2057278/DiaSafety_dataset/test.json)"]


# --------------------------------------------------------------------------- one problem line, never a traceback

HUGE = 10**400  # JSON writes and reads it as an integer; no float holds it


@pytest.mark.parametrize("path, message", [
    (["metrics", "accuracy", "value"], f"metrics.accuracy.value: {str(HUGE)[:40]} is not a finite number"),
    (["metrics", "accuracy", "n"], "metrics.accuracy: {'value': "),
    (["breakdown", "per_class", "Safe", "support"], f"breakdown.per_class.Safe.support: {str(HUGE)[:80]} is not what "
                                                    "the samples give: 594"),
    (["run", "model_calls"], f"run.model_calls: {str(HUGE)[:40]} is not a finite number"),
])
def test_an_integer_too_large_for_a_float_is_one_problem(folder, path, message):
    edit_card(folder, _set(path, HUGE))
    found = problems_of(folder)
    field = ".".join(path[:2]) if path[0] == "metrics" else ".".join(map(str, path))
    assert found and all(p.startswith(f"{folder / 'diasafety.json'}: {field}") for p in found), found
    assert any(p.startswith(f"{folder / 'diasafety.json'}: {message}") for p in found), found
    if path[-1] in ("value", "model_calls"):  # what the board's fast checks read
        assert S.load(folder.parent).cards == []


def test_a_model_yaml_nested_900_deep_is_one_problem(folder):
    text = (folder / "model.yaml").read_text().replace("args: {}", "args: " + "[" * 900 + "]" * 900)
    (folder / "model.yaml").write_text(text)
    line = text.splitlines().index("args: " + "[" * 900 + "]" * 900) + 1
    assert sorted(problems_of(folder)) == [f"{folder / 'diasafety.json'}: its folder's model.yaml was rejected",
                                           f"{folder / 'model.yaml'}: line {line}: args: nested deeper than 32 levels"]


def test_a_model_yaml_nested_deep_enough_to_crash_the_yaml_parser_is_one_problem(folder):
    """libyaml composes nodes recursively in C: 30,000 levels took the process down (a segmentation fault). Whether
    the suite's depth limit or the parser's own refuses it first depends on the PyYAML release (6.0.4's scanner
    stops at 1,000 flow levels before the suite sees level 33); either way it is one problem naming file and line."""
    (folder / "model.yaml").write_text("name: x\nargs: " + "[" * 30_000 + "]" * 30_000 + "\n")
    problems = problems_of(folder)
    about_yaml = [p for p in problems if p.startswith(f"{folder / 'model.yaml'}: ")]
    assert len(about_yaml) == 1 and about_yaml[0].startswith(f"{folder / 'model.yaml'}: line 2: ")
    assert sorted(problems) == sorted([f"{folder / 'diasafety.json'}: its folder's model.yaml was rejected",
                                       *about_yaml])


@pytest.mark.parametrize("depth, field", [(40, "output[0][0][0][0][0][0][0]…: "), (100_000, "")])
def test_a_sample_line_nested_deep_is_one_problem(folder, depth, field):
    lines = _sample_lines(folder)
    sample = json.loads(lines[0])
    lines[0] = json.dumps(sample).replace('"output": ' + json.dumps(sample["output"]),
                                          '"output": ' + "[" * depth + "]" * depth)
    _write_lines(folder, lines)
    assert problems_of(folder) == [f"{folder / SAMPLES}: line 1: {field}nested deeper than 32 levels"]


def test_a_model_folder_validated_on_its_own_has_the_folders_guard(folder, monkeypatch):
    def breaks(*args, **kwargs):
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(S.loading, "check_card", breaks)
    for path in (folder, folder / "diasafety.json"):  # a model folder, one card
        assert validate([path]) == (0, [S.Problem(str(folder), "", "could not be checked: RecursionError: maximum "
                                                                    "recursion depth exceeded")])
    assert submit_main(["validate", str(folder)]) == 1


# -------------------------------------------------------------------------------- patterns over submitted text


@pytest.mark.parametrize("field", [["run", "git_commit"], ["run", "overrides", 0]])
def test_a_megabyte_string_is_rejected_for_its_length_before_any_pattern_reads_it(folder, monkeypatch, field):
    """The privacy check's URL pattern was quadratic: a megabyte of "a.a.a..." in any field hung validation and the
    board. No string longer than 64 KiB reaches a pattern now: the card is rejected as it is read."""
    edit_card(folder, _set(field, "a." * 2**19))
    checked = []
    monkeypatch.setattr(S.loading, "check_card", lambda *args, **kwargs: checked.append(args) or [])
    where = field[0] + "." + field[1] + "".join(f"[{f}]" for f in field[2:])
    assert problems_of(folder) == [f"{folder / 'diasafety.json'}: {where}: 1,048,576 characters in one string; at "
                                   "most 65,536"]
    assert checked == [] and S.load(folder.parent).cards == []


def test_the_patterns_over_submitted_text_are_linear():
    """Strings up to 64 KiB still reach them: quadratic, 40 KB of "a.a.a..." took 4.5 s, and a megabyte would take
    most of an hour; linear, a megabyte takes a fraction of a second (the bound is generous for a loaded machine)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "leaderboard"))
    import tables

    start = time.perf_counter()
    assert privacy.private_values({"git_commit": "a." * 2**19, "url": "a." * 2**19 + "://10.0.0.1/"}) == [
        ("url", "a private host name or credentials in a URL")]
    assert tables.parse_size(" " * 2**20 + "1B") == 1.0 and tables.parse_size(" " * 2**20) is None
    assert time.perf_counter() - start < 10


# ---------------------------------------------------------------------------------------- bounded objects


def _parses(monkeypatch) -> list[str]:
    """The sample lines the reader parses, from now on."""
    parsed = []
    real = SF.strict_json
    monkeypatch.setattr(SF, "strict_json", lambda line: parsed.append(line) or real(line))
    return parsed


def test_a_gzip_of_empty_objects_is_rejected_before_it_is_parsed(folder, monkeypatch):
    """61 KB of gzip, 60 MiB of `{}` in lines of 4 MiB: parsed, they took 1.5 GB. Each line's values are counted
    from its commas and brackets before it is parsed, so not even the first one is."""
    pad = "[" + ",".join(["{}"] * (4 * 2**20 // 3 - 20)) + "]"
    _write_lines(folder, [f'{{"id": "{i}", "output": {pad}}}' for i in range(15)])
    assert (folder / SAMPLES).stat().st_size < 100_000
    parsed = _parses(monkeypatch)
    assert problems_of(folder) == [f"{folder / SAMPLES}: more than 2,000,000 JSON values by line 1; no task's "
                                   "samples are that large"]
    assert parsed == []


def test_a_sample_with_a_field_its_kind_does_not_write_is_rejected_at_its_line(folder, monkeypatch):
    """The honest samples, each padded with an extra field to 63 MB (329 KB of gzip), were accepted at 1.1 GB."""
    pad = [{}] * 14_300
    _write_lines(folder, [json.dumps({**json.loads(line), "pad": pad}) for line in _sample_lines(folder)])
    parsed = _parses(monkeypatch)
    assert problems_of(folder) == [f"{folder / SAMPLES}: line 1: pad: not a field this task's samples hold (error, "
                                   "group, id, input, input_sha256, output, prediction, prompt, prompt_sha256, target, "
                                   "truncated_lines)"]
    assert len(parsed) == 1


def test_an_object_with_too_many_keys_is_rejected(folder):
    lines = _sample_lines(folder)
    sample = json.loads(lines[3])
    lines[3] = json.dumps({**sample, "group": {**sample["group"], **{f"k{i}": 0 for i in range(2_000)}}})
    _write_lines(folder, lines)
    assert problems_of(folder) == [f"{folder / SAMPLES}: line 4: group: 2,001 keys in one object; at most 2,000"]


# ---------------------------------------------------------------------------- a folder with a problem shows nothing

STRAY = "not part of a submission: a model folder holds model.yaml and, per task, TASK.json and TASK.samples.jsonl.gz"


def _index_html(folder):
    (folder / "index.html").write_text("<script>alert(1)</script>")


def _evil_py(folder):
    (folder / "evil.py").write_text("import os; os.system('id')\n")


def _dot_env(folder):
    (folder / ".env").write_text("OPENAI_API_KEY=sk-not-a-real-key\n")


def _binary(folder):
    (folder / "weights.bin").write_bytes(bytes(range(256)) * 4)


def _orphan_samples(folder):
    (folder / "ricota.samples.jsonl.gz").write_bytes((folder / SAMPLES).read_bytes())


@pytest.mark.parametrize("add, entry, message", [
    (_index_html, "index.html", STRAY),
    (_evil_py, "evil.py", STRAY),
    (_dot_env, ".env", STRAY),
    (_binary, "weights.bin", STRAY),
    (_orphan_samples, "ricota.samples.jsonl.gz", STRAY),
    (lambda folder: (folder / "extra").mkdir(), "extra", "not a regular file (a symlink or a folder is never read)"),
])
def test_a_folder_with_a_stray_entry_shows_none_of_its_cards(folder, add, entry, message):
    add(folder)
    valid, problems = validate([folder])
    assert valid == 0 and [str(p) for p in problems] == [
        f"{folder / entry}: {message}", f"{folder}: 1 valid card(s) not shown while the folder has problems"]
    loaded = S.load(folder.parent)  # the board's loader
    assert loaded.cards == [] and f"{folder / entry}: {message}" in map(str, loaded.rejected)


def test_a_folder_of_more_than_200_files_shows_none_of_its_cards(folder):
    for i in range(198):
        (folder / f"note-{i:03}.txt").write_text("x")
    found = problems_of(folder)
    assert f"{folder}: holds more than 200 files; only the first are read" in found
    assert S.load(folder.parent).cards == []


def test_one_rejected_card_hides_the_other_cards_of_its_folder(tmp_path):
    """The fast checks: every published card of one folder but the edited one is valid, and none is shown."""
    folder = tmp_path / "submissions" / "smollm2-135m-instruct"
    shutil.copytree(S.SUBMISSIONS_DIR / folder.name, folder)
    published = len(list(folder.glob("*.json")))
    assert published > 1 and len(S.load(folder.parent).cards) == published
    edit_card(folder, _set(["metrics", "activation_rate", "value"], 7.0), "toxicchat.json")
    loaded = S.load(folder.parent)
    assert loaded.cards == []
    assert [str(p) for p in loaded.rejected if str(p).startswith(f"{folder}:")] == [
        f"{folder}: {published - 1} valid card(s) not shown while the folder has problems"]


# ------------------------------------------------------------------------------------------- look-alike names


@pytest.mark.parametrize("twin", ["Profanity-Check", "profanity-check ", "profanity-check\n",
                                  "\uff50rofanity-check"])  # a fullwidth p: NFKC makes it p
def test_model_folders_whose_names_look_alike_are_a_problem_on_both(folder, twin):
    _copy_seed_as(folder.parent, twin)
    assert (folder.parent / twin).is_dir() and len(list(folder.parent.iterdir())) == 2
    found = [str(p) for p in validate([folder.parent])[1]]
    for name, other in ((folder.name, twin), (twin, folder.name)):
        assert f"{folder.parent / name}: looks like the model folder {other!r} beside it (the same name once " \
               "Unicode-normalised, case-folded and trimmed): a model's name must differ from every other's beyond " \
               "that" in found, found
    assert S.load(folder.parent).cards == []  # no look-alike rows on the board
    # the folder validated on its own, or one of its cards, sees the folder beside it too
    assert any("looks like the model folder" in str(p) for p in validate([folder / "diasafety.json"])[1])


@pytest.mark.parametrize("name", ["profanity-check ", " profanity-check", "profanity-check\n", "profanity\tcheck"])
def test_a_model_folder_name_with_spaces_at_an_end_or_control_characters_is_rejected(tmp_path, name):
    _copy_seed_as(tmp_path, name)
    assert f"{tmp_path / name}: a model folder's name is printable ASCII, at most 100 characters, without a space " \
           "at either end" in [str(p) for p in validate([tmp_path])[1]]
    assert S.load(tmp_path).cards == []
