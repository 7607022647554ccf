"""A dialogue attack's conversations as they are played: the state of each, and what each side sees of it.

The target sees the kept turns (or, with `target_sees: last`, only this turn's message): a try it refused and that
was backtracked is taken out of its history. The attacker sees everything it wrote, each followed by what it read:
the target's reply, or the task's `feedback` rendered from the reply and its judging, or, after a refusal that was
backtracked, the task's backtrack message."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..templates import render


@dataclass
class Conversation:
    """One conversation being played. `turns` are the kept turns as the sample records them ({turn, attacker,
    target, verdict, judgements, attacker_judgements, and backtracked: the refused tries before it}); `tries` are the
    refused tries of the turn being played."""

    record: dict
    turns: list[dict] = field(default_factory=list)
    tries: list[dict] = field(default_factory=list)
    backtracks: int = 0
    written: int = 0  # the attacker's own utterances so far (a scripted attack's next line)
    asked: int = 0  # the target's replies requested
    activated: int | None = None  # the first flagged turn
    error: str | None = None
    done: bool = False

    @property
    def turn(self) -> int:
        """The number of the turn being played."""
        return len(self.turns) + 1


def said_to_target(turns: list[dict]) -> list[dict]:
    """The target's history of the kept turns: the attacker is the `user`."""
    history = []
    for t in turns:
        history += [{"role": "user", "content": t["attacker"]}, {"role": "assistant", "content": t["target"]}]
    return history


def target_view(spec, turns: list[dict], utterance: str) -> list[dict]:
    """The messages the target answers this turn."""
    return (said_to_target(turns) if spec.target_sees == "full" else []) + [{"role": "user", "content": utterance}]


def outcome(turn: dict) -> dict:
    """A judged turn's outcome as the feedback template reads it: verdict, flagged, judgements, and the reason
    (the first voter's answer) and score (its classifier score) of the step that decided, or of the last that judged."""
    judgements = turn.get("judgements") or {}
    step = turn.get("verdict") if turn.get("verdict") in judgements else next(reversed(judgements), None)
    first = next(iter((judgements.get(step) or {}).get("votes", {}).values()), {}) if step else {}
    return {"verdict": turn.get("verdict"), "flagged": turn.get("verdict") not in (None, "none"),
            "judgements": judgements, "reason": first.get("answer"), "score": first.get("score")}


def attacker_history(spec, task, conv: Conversation) -> list[dict]:
    """What the attacker has seen since its instructions: each of its utterances (`assistant`) and what it read
    after it (`user`); with `attacker_sees: last`, only what it read last."""
    base = {**conv.record, "options": task.options}
    events, used = [], 0
    for t in conv.turns + [None]:
        tries = t.get("backtracked", []) if t is not None else conv.tries
        for tried in tries:
            used += 1
            events.append((tried["attacker"], render(spec.backtrack.message, {
                **base, "turn": t["turn"] if t else conv.turn, "attacker": tried["attacker"],
                "response": tried["target"], "backtracks_left": spec.backtrack.max - used},
                f"task {task.name}: dialogue.backtrack.message")))
        if t is not None:
            read = t["target"] if spec.feedback is None else render(spec.feedback, {
                **base, "turn": t["turn"], "attacker": t["attacker"], "response": t["target"], **outcome(t)},
                f"task {task.name}: dialogue.feedback")
            events.append((t["attacker"], read))
    if spec.attacker_sees == "last":
        return [{"role": "user", "content": read} for _, read in events[-1:]]
    return [m for said, read in events for m in ({"role": "assistant", "content": said},
                                                 {"role": "user", "content": read})]
