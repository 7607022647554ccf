"""Backend `replay`: recorded outputs (published generations, an LLM's stored predictions) answered by record id.

The recorded rows are read from data_root like any task data and numbered the same way, so a replay goes through
the task's own parser and metrics exactly as a live model's answers would.
"""

from __future__ import annotations

from .. import BenchmarkError
from ..templates import render
from .base import Backend


class Replay(Backend):
    def __init__(self, cfg, data_root: str | None):
        from ..data import load_rows, record_id

        spec = cfg.replay
        if spec is None:
            raise BenchmarkError(f"model {cfg.name}: backend replay needs a `replay:` section (path, output)")
        if not data_root:
            raise BenchmarkError(f"model {cfg.name}: replay reads {spec.path} under data_root; set data_root=DIR")
        rows, _ = load_rows(spec, data_root, f"model {cfg.name}")
        self.name = cfg.name
        self.template = spec.output
        self.rows = {record_id(row, i, spec.id_field): row for i, row in enumerate(rows)}

    def replay(self, items):
        outputs = []
        for item in items:
            row = self.rows.get(item["id"])
            if row is None:
                raise BenchmarkError(f"model {self.name}: no recorded output for record id {item['id']!r}")
            outputs.append(render(self.template, row, f"model {self.name}: replay.output"))
        return outputs
