"""A published card as read from its folder (Card, Loaded), and a card file read within the limits."""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from .. import BenchmarkError
from ..files import inside
from ..run.card_record import ScoreCard, parsed
from .base import MAX_CARD_BYTES, MAX_VALUES, OutOfBounds, Problem, json_values, strict_json
from .panel import panel_status, protocol_status
from .summary import Summary


class Card:
    """One accepted score card, with its model folder's config: `card` as its JSON reads, `record` as the typed
    score card (run/card_record.py) that every reader of its fields reads.

    With a check store, a card whose bytes were checked before comes with its summary and the sha256 of the bytes
    checked, and is read whole only when a page asks for `card`: the bytes read then must be those checked."""

    def __init__(self, path: Path, card: dict | None, model_config: dict, known_panel: tuple[str | None] | None = None,
                 summary: Summary | None = None, sha256: str | None = None, check_key: str | None = None,
                 record: ScoreCard | None = None):
        if card is None and (summary is None or sha256 is None):
            raise ValueError("a card read later needs its summary and the sha256 of the bytes checked")
        self.path, self.model_config, self.known_panel = path, model_config, known_panel  # (panel,) where kept
        self.check_key = check_key  # the key its check results are kept under, with a store
        self.sha256 = sha256  # of the bytes checked
        self._card, self._record, self._summary = card, record, summary  # each read or made once, when asked for

    @property
    def card(self) -> dict:
        if self._card is None:
            raw = card_bytes(self.path)
            if hashlib.sha256(raw).hexdigest() != self.sha256:
                raise BenchmarkError(f"{self.path}: changed since it was checked; it is checked again when the cards "
                                     "are loaded again")
            self._card = json.loads(raw)
        return self._card

    @property
    def record(self) -> ScoreCard:
        """Parsed once, from bytes that passed the checks (BenchmarkError for a card the record refuses, which no
        reader of its fields then sees)."""
        if self._record is None:
            record, refused = parsed(self.card)
            if record is None:
                field, what = refused[0]
                raise BenchmarkError(f"{self.path}: field {field}: {what}")
            self._record = record
        return self._record

    @property
    def summary(self) -> Summary:
        if self._summary is None:
            self._summary = Summary.of(self.record)
        return self._summary

    @functools.cached_property
    def panel(self) -> str | None:
        """Why its judges are not its task's declared panel, or None (panel.py); kept with its check results."""
        if self.known_panel is not None:
            return self.known_panel[0]
        try:
            return panel_status(self.record) or protocol_status(self.record)
        except Exception:  # a run of a task file this suite does not ship (view mode): it declares no panel here
            return None

    @property
    def samples_path(self) -> Path:
        """The card's samples file, inside the card's folder (BenchmarkError for a name that leads outside it)."""
        return inside(self.path.parent, self.record.samples.file, f"{self.path}: samples.file")


@dataclass
class Loaded:
    cards: list[Card] = field(default_factory=list)
    rejected: list[Problem] = field(default_factory=list)


def read_card(path: Path) -> dict:
    """A card file as JSON: a regular file of at most MAX_CARD_BYTES (read that far and no further)."""
    return parse_card(path, card_bytes(path))


def card_bytes(path: Path) -> bytes:
    try:
        if path.is_symlink() or not path.is_file():
            raise BenchmarkError(f"{path}: not a regular file (a symlink or a device is never read)")
        with open(path, "rb") as f:
            raw = f.read(MAX_CARD_BYTES + 1)
    except OSError as e:
        raise BenchmarkError(f"{path}: not a readable JSON score card: {e}") from None
    if len(raw) > MAX_CARD_BYTES:
        raise BenchmarkError(f"{path}: larger than {MAX_CARD_BYTES // 2**20} MiB; a score card is a summary")
    return raw


def parse_card(path: Path, raw: bytes) -> dict:
    try:
        text = raw.decode("utf-8")
        if json_values(text) > MAX_VALUES:
            raise BenchmarkError(f"{path}: more than {MAX_VALUES:,} JSON values; a score card is a summary")
        card = strict_json(text)
    except OutOfBounds as e:
        raise BenchmarkError(f"{path}: {e}") from None
    except (UnicodeDecodeError, ValueError) as e:
        raise BenchmarkError(f"{path}: not a readable JSON score card: {e}") from None
    if not isinstance(card, dict):
        raise BenchmarkError(f"{path}: a score card is a JSON object")
    return card
