"""A local data file's rows are kept by content (data._local_rows): read again without `datasets`, and read afresh
when the bytes change."""

from __future__ import annotations

import json
import sys

from omegaconf import OmegaConf

from benchmark.data import load_rows


def _data(path: str):
    return OmegaConf.create({"path": path, "format": "json", "json_field": None})


def test_the_same_bytes_are_read_once_and_other_bytes_again(tmp_path, monkeypatch):
    monkeypatch.setenv("BENCHMARK_CACHE", str(tmp_path / "cache"))
    (tmp_path / "data").mkdir()
    file = tmp_path / "data" / "rows.json"
    file.write_text(json.dumps([{"id": 1, "text": "a"}, {"id": 2, "text": "b"}]))
    first, _ = load_rows(_data("rows.json"), str(tmp_path / "data"), "test")
    assert first == [{"id": 1, "text": "a"}, {"id": 2, "text": "b"}]
    assert len(list((tmp_path / "cache" / "records").glob("*.json"))) == 1

    with monkeypatch.context() as m:
        m.setitem(sys.modules, "datasets", None)  # importing it now fails: the kept rows must do
        again, _ = load_rows(_data("rows.json"), str(tmp_path / "data"), "test")
    assert again == first

    file.write_text(json.dumps([{"id": 1, "text": "changed"}]))
    changed, _ = load_rows(_data("rows.json"), str(tmp_path / "data"), "test")
    assert changed == [{"id": 1, "text": "changed"}]
    assert len(list((tmp_path / "cache" / "records").glob("*.json"))) == 2
