"""What a card says its run read, wrote and cost, against what it can be: tokens only for the roles the card has,
counted only by what each role's backend can count with (a keyword list counts nothing, an API server counts for an
API model), and the cost derived again from those tokens at the prices the card's own configs declare (per role, in
its currency, and the total the sum of the roles). How many tokens a request really took rests on `submit verify`."""

from __future__ import annotations

from ..models.registry import backend_class
from ..models.usage import Tokens
from ..run.card_record import ScoreCard
from ..run.scorecard import run_cost
from .configs import model_config_node


def roles(card: ScoreCard) -> dict:
    """The card's model configs keyed as run.tokens is: model, attacker, `judge VOTER`."""
    out = {"model": card.model.config}
    if card.attacker is not None:
        out["attacker"] = card.attacker.config
    out.update({f"judge {j.voter}": j.config for j in card.judges or []})
    return out


def usage_problems(card: ScoreCard) -> list[tuple[str, str]]:
    run = card.run
    configs = {role: model_config_node(config) for role, config in roles(card).items()}
    problems, tokens = [], {}
    for role, counted in (run.tokens or {}).items():
        at = f"run.tokens.{role}"
        if role not in configs:
            problems.append((at, f"the card has no role {role!r} (its roles: {', '.join(configs)})"))
            continue
        can = backend_class(configs[role]).counted_by(configs[role])
        claimed = set(counted.counted_by)
        if not claimed <= can:
            problems.append((f"{at}.counted_by", f"{sorted(claimed)}: backend {configs[role].backend} counts with "
                                                 f"{' or '.join(sorted(can)) or 'nothing'}"))
        elif not claimed and any((counted.prompt, counted.completion, counted.cached_prompt,
                                  counted.cached_completion)):
            problems.append((at, "tokens counted by no one (counted_by is empty)"))
        tokens[role] = Tokens(counted.prompt, counted.completion, counted.cached_prompt, counted.cached_completion,
                              counted.uncounted, claimed)
    try:
        expected = run_cost(tokens, configs)
    except Exception as e:  # a config's prices that cannot be read: its own rules say so
        return problems + [("run.cost", f"cannot be derived: {e}")]
    stated = run.cost.model_dump(exclude_unset=True) if run.cost is not None else None
    if stated != expected:
        problems.append(("run.cost", f"{str(stated)[:160]} is not what the tokens cost at the configs' "
                                     f"declared prices: {expected}"))
    return problems
