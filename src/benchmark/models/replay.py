"""Backend `replay`: recorded outputs (published generations, an LLM's stored predictions) instead of a model.

The recorded rows are read from data_root like any task data. By default a record's answer is the row with the same
id (numbered as the task numbers its records), so a replay goes through the task's own parser and metrics exactly
as a live model's answers would. With `replay.match`, rows are found by text instead (the record's `match` field
against the row's `id_field`, ignoring case and spacing): published generations made from an older version of a
data set are scored for the records they cover, and the others are reported as unmatched.
"""

from __future__ import annotations

from .. import BenchmarkError
from ..data import data_file, load_rows, record_id
from ..identity import file_sha256
from ..templates import render
from ..text import normalise
from .base import Backend, Reach
from .registry import register_backend


@register_backend("replay")
class Replay(Backend):
    model_kind = "recorded answers"
    fields = frozenset({"replay"})
    operations = frozenset({"replay"})  # and generate, for a replay matched by text (see generate)
    requests_go = Reach.LOCAL  # a recorded file under data_root

    def __init__(self, cfg, data_root: str | None):
        spec = cfg.replay
        if spec is None:
            raise BenchmarkError(f"model {cfg.name}: backend replay needs a `replay:` section (path, output)")
        if not data_root:
            raise BenchmarkError(f"model {cfg.name}: replay reads {spec.path} under data_root; set data_root=DIR")
        rows, _ = load_rows(spec, data_root, f"model {cfg.name}")
        self.name = cfg.name
        self.template = spec.output
        self.match = spec.match
        if spec.match:
            self.operations = frozenset({"replay", "generate"})
        if spec.match:
            if not spec.id_field:
                raise BenchmarkError(f"model {cfg.name}: replay.match needs replay.id_field (the file's text field)")
            self.rows = {}
            for row in rows:  # the first row of a text wins; later duplicates are ignored
                self.rows.setdefault(normalise(row.get(spec.id_field, "")), row)
        else:
            self.rows = {record_id(row, i, spec.id_field): row for i, row in enumerate(rows)}

    @classmethod
    def content_sha256(cls, cfg, data_root):
        if cfg.replay is None or not data_root:
            return None
        recorded = data_file(data_root, cfg.replay.path, f"model {cfg.name}: replay")
        return file_sha256(recorded) if recorded.is_file() and not recorded.is_symlink() else None

    @classmethod
    def content_source(cls, cfg) -> str:
        return f"the recorded file {cfg.replay.path} under data_root"

    def generate(self, conversations, generation, seeds=None):
        """Recorded answers to prompts: the row whose `id_field` text occurs in the last message (the longest such
        text wins). Lets fixed judge verdicts stand in for a judge model, keyed by e.g. each record's question."""
        if not self.match:
            raise BenchmarkError(f"model {self.name}: a replay answers prompts only with replay.match set")
        keys = sorted(self.rows, key=len, reverse=True)
        outputs = []
        for messages in conversations:
            text = normalise(messages[-1]["content"]) if messages else ""
            key = next((k for k in keys if k and k in text), None)
            if key is None:
                raise BenchmarkError(f"model {self.name}: no recorded answer for the prompt {text[:80]!r}…")
            outputs.append(render(self.template, self.rows[key], f"model {self.name}: replay.output"))
        return outputs

    def replay(self, requests):
        """By the record's id, or, with `match`, by the request's match text; unmatched texts answer None."""
        outputs = []
        for item in requests:
            if self.match:
                row = self.rows.get(normalise(item.match or ""))
                outputs.append(None if row is None else render(self.template, row, f"model {self.name}: replay.output"))
                continue
            row = self.rows.get(item.id)
            if row is None:
                raise BenchmarkError(f"model {self.name}: no recorded output for record id {item.id!r}")
            outputs.append(render(self.template, row, f"model {self.name}: replay.output"))
        return outputs
