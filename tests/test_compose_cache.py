"""A run config composed once is read back without Hydra, equal to what Hydra composes, and composed afresh when any
input changes: an override, a config file's text, the run schema."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from omegaconf import OmegaConf
from omegaconf.errors import ConfigAttributeError

import benchmark.composition as S
from benchmark.run.runner import _plain_task


@pytest.fixture
def counted(monkeypatch, tmp_path):
    """compose with a cache folder of the test's own; the list of Hydra compositions it made."""
    monkeypatch.setenv("BENCHMARK_CACHE", str(tmp_path / "cache"))
    calls = []
    real = S._hydra_compose

    def hydra_compose(overrides, config_name):
        calls.append(list(overrides))
        return real(overrides, config_name)

    monkeypatch.setattr(S, "_hydra_compose", hydra_compose)
    return calls


@pytest.mark.parametrize("overrides", [[], ["task=goal_pair", "goals=suite", "limit=3"], ["task=cpad"]])
def test_a_config_read_back_is_the_one_hydra_composed(counted, overrides):
    first = S.compose(overrides)
    again = S.compose(overrides)
    assert counted == [overrides]
    assert OmegaConf.to_container(again, resolve=False) == OmegaConf.to_container(first, resolve=False)
    assert OmegaConf.get_type(again) is OmegaConf.get_type(first) and OmegaConf.is_struct(again)
    assert _plain_task(again.task) == _plain_task(first.task)
    assert again.cache_dir == first.cache_dir  # interpolations resolve when read, as Hydra's do
    with pytest.raises(ConfigAttributeError, match="bogus"):  # struct mode: no key the schema lacks
        again.bogus = 1


def test_an_override_or_a_changed_file_composes_afresh(counted, tmp_path):
    folder = tmp_path / "mine"
    (folder / "model").mkdir(parents=True)
    model = folder / "model" / "mine.yaml"
    model.write_text("name: mine\nbackend: profanity-check\n")
    overrides = [f"hydra.searchpath=[file://{folder}]", "model=mine"]
    assert S.compose(overrides).model.name == "mine"
    assert S.compose([*overrides, "limit=2"]).limit == 2
    model.write_text("name: renamed\nbackend: profanity-check\n")
    assert S.compose(overrides).model.name == "renamed"
    assert len(counted) == 3


def test_files_are_checked_before_hydra_reads_them_and_not_again_for_a_config_kept_from_them(counted, tmp_path,
                                                                                            monkeypatch):
    from benchmark import BenchmarkError, safe_yaml

    checked = []
    real = safe_yaml.check
    monkeypatch.setattr(safe_yaml, "check", lambda text, where, *a: checked.append(where) or real(text, where, *a))
    folder = tmp_path / "mine"
    (folder / "model").mkdir(parents=True)
    model = folder / "model" / "mine.yaml"
    model.write_text("name: mine\nbackend: profanity-check\n")
    overrides = [f"hydra.searchpath=[file://{folder}]", "model=mine"]
    S.compose(overrides)
    assert str(model) in checked and len(counted) == 1
    checked.clear()
    S.compose(overrides)  # kept after these very files passed: read back unchecked
    assert checked == [] and len(counted) == 1
    model.write_text("name: mine\nbackend: !!python/object/apply:os.system [x]\n")
    with pytest.raises(BenchmarkError, match="mine.yaml"):
        S.compose(overrides)
    assert len(counted) == 1  # refused before Hydra read it


def test_a_kind_registered_since_changes_what_composes(counted, monkeypatch):
    from benchmark import kinds
    from benchmark.kinds.classify import Classify

    S.compose([])

    @dataclass
    class Extra:
        field: str = "x"

    class WithSection(Classify):
        name, section, section_schema = "with_section", "extra", Extra

    monkeypatch.setitem(kinds.KINDS, "with_section", WithSection)
    cfg = S.compose([])
    assert len(counted) == 2 and "extra" in cfg.task
