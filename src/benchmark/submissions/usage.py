"""What a card says its run read, wrote and cost, against what it can be: tokens only for the roles the card has,
counted only by what each role's backend can count with (a keyword list counts nothing, an API server counts for an
API model), and the cost derived again from those tokens at the prices the card's own configs declare (per role, in
its currency, and the total the sum of the roles). How many tokens a request really took rests on `submit verify`."""

from __future__ import annotations

from ..models.registry import backend_class
from ..models.usage import Tokens
from ..run.scorecard import run_cost
from .configs import model_config_node


def roles(card: dict) -> dict:
    """The card's model configs keyed as run.tokens is: model, attacker, `judge VOTER`."""
    out = {"model": card["model"]["config"]}
    if card.get("attacker"):
        out["attacker"] = card["attacker"]["config"]
    out.update({f"judge {j['voter']}": j["config"] for j in card.get("judges", [])})
    return out


def usage_problems(card: dict) -> list[tuple[str, str]]:
    run = card["run"]
    configs = {role: model_config_node(config) for role, config in roles(card).items()}
    problems, tokens = [], {}
    for role, counted in (run.get("tokens") or {}).items():
        at = f"run.tokens.{role}"
        if role not in configs:
            problems.append((at, f"the card has no role {role!r} (its roles: {', '.join(configs)})"))
            continue
        can = backend_class(configs[role]).counted_by(configs[role])
        claimed = set(counted.get("counted_by") or [])
        if not claimed <= can:
            problems.append((f"{at}.counted_by", f"{sorted(claimed)}: backend {configs[role].backend} counts with "
                                                 f"{' or '.join(sorted(can)) or 'nothing'}"))
        elif not claimed and any(counted.get(k) for k in ("prompt", "completion", "cached_prompt",
                                                          "cached_completion")):
            problems.append((at, "tokens counted by no one (counted_by is empty)"))
        tokens[role] = Tokens(counted["prompt"], counted["completion"], counted["cached_prompt"],
                              counted["cached_completion"], counted["uncounted"], claimed)
    try:
        expected = run_cost(tokens, configs)
    except Exception as e:  # a config's prices that cannot be read: its own rules say so
        return problems + [("run.cost", f"cannot be derived: {e}")]
    if run.get("cost") != expected:
        problems.append(("run.cost", f"{str(run.get('cost'))[:160]} is not what the tokens cost at the configs' "
                                     f"declared prices: {expected}"))
    return problems
