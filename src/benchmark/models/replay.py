"""Backend `replay`: recorded outputs (published generations, an LLM's stored predictions) answered by record id.

The recorded rows are read from data_root like any task data and numbered the same way, so a replay goes through
the task's own parser and metrics exactly as a live model's answers would.
"""

from __future__ import annotations

from types import SimpleNamespace

from .. import BenchmarkError
from ..templates import render
from .base import Backend


class Replay(Backend):
    def __init__(self, cfg, data_root: str | None):
        from ..data import load_records

        spec = cfg.replay
        if spec is None:
            raise BenchmarkError(f"model {cfg.name}: backend replay needs a `replay:` section (path, output)")
        if not data_root:
            raise BenchmarkError(f"model {cfg.name}: replay reads {spec.path} under data_root; set data_root=DIR")
        source = SimpleNamespace(
            name=f"model {cfg.name}",
            data=SimpleNamespace(path=spec.path, format=spec.format, url=None, hub=None, split="replay",
                                 id_field=spec.id_field, required=[]),
            derived={},
            options={},
        )
        records = load_records(source, data_root)
        self.name = cfg.name
        self.template = spec.output
        self.rows = {r["id"]: r for r in records.items}

    def replay(self, items):
        outputs = []
        for item in items:
            row = self.rows.get(item["id"])
            if row is None:
                raise BenchmarkError(f"model {self.name}: no recorded output for record id {item['id']!r}")
            outputs.append(render(self.template, row, f"model {self.name}: replay.output"))
        return outputs
