"""What validation derives again from a sample's own outputs and judgements, instead of believing the fields a
submitter could rewrite: a verdict from the judgements by the panel's rule (steps in order, the first that flags
decides), a judgement from its votes (majority, the task's tie policy), a question vote's label from the judge's
answer (the task's parser), a refusal from the text. What no sample can show (that a classifier judge said what its
vote records, that a record had no recorded answer) rests on `submit verify`, which re-runs the models."""

from __future__ import annotations

Problem = tuple[str, str]  # (field, what is wrong), for one sample


def vote_problems(step, vote, at: str) -> list[Problem]:
    if not isinstance(vote, dict) or vote.get("flagged") not in (True, False, None):
        return [(at, "a vote is {flagged: true, false or null, ...}")]
    return step.vote_problems(vote, at)


def judgement_problems(step, judgement, tie_policy: str, at: str) -> list[Problem]:
    """A step's judgement against its votes: flagged by majority, an even split a tie decided by the policy."""
    if not isinstance(judgement, dict) or not isinstance(judgement.get("votes"), dict) or not judgement["votes"]:
        return [(at, "a judgement is {flagged, tie, votes: {voter: vote}} with at least one vote")]
    problems = []
    for voter, vote in judgement["votes"].items():
        problems += vote_problems(step, vote, f"{at}.votes.{voter}")
    if problems:
        return problems
    yes = sum(v["flagged"] is True for v in judgement["votes"].values())
    no = sum(v["flagged"] is False for v in judgement["votes"].values())
    tie = yes == no and yes > 0
    flagged = (tie_policy == "flagged") if tie else yes > no
    if judgement.get("tie") is not tie or judgement.get("flagged") is not flagged:
        return [(at, f"flagged {judgement.get('flagged')}, tie {judgement.get('tie')}: its votes give flagged "
                     f"{flagged}, tie {tie}")]
    return []


def panel_problems(steps, judgements, verdict, tie_policy: str, at: str, none: str) -> list[Problem]:
    """The verdict of one judged item against its judgements: every step in order until one flags (none after it),
    and the verdict is that step's name, or `none` when no step flagged or a veto step did."""
    if not isinstance(judgements, dict):
        return [(f"{at}.judgements", "is not a {step: judgement} object")]
    names = [s.name for s in steps]
    stray = sorted(set(judgements) - set(names), key=str)
    if stray:
        return [(f"{at}.judgements.{stray[0]}", f"is not a judging step of the task ({', '.join(names)})")]
    expected = none
    for i, step in enumerate(steps):
        if step.name not in judgements:
            return [(f"{at}.judgements.{step.name}", "missing: the step judges every item no earlier step flagged")]
        problems = judgement_problems(step, judgements[step.name], tie_policy, f"{at}.judgements.{step.name}")
        if problems:
            return problems
        if judgements[step.name]["flagged"]:
            later = [n for n in names[i + 1:] if n in judgements]
            if later:
                return [(f"{at}.judgements.{later[0]}", f"a step after {step.name}, which flagged it, never judges it")]
            expected = none if getattr(step.spec, "veto", False) else step.name
            break
    if verdict != expected:
        return [(f"{at}.verdict", f"{verdict!r} is not what its judgements give: {expected!r}")]
    return []


def votes_of(judgements) -> dict:
    """{step: {voter: flagged}}: what a judged item's voters said, without their scores and answers' wording."""
    if not isinstance(judgements, dict):
        return {}
    return {step: {voter: v.get("flagged") for voter, v in (j.get("votes") or {}).items() if isinstance(v, dict)}
            for step, j in judgements.items() if isinstance(j, dict)}
