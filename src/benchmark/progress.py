"""A run's progress as requests are answered: one bar for the model under test (its planned requests, the rate and
the time left), and the judges' and the attacker's requests counted beside it."""

from __future__ import annotations


class Progress:
    def __init__(self, total: int, desc: str, enabled: bool = True, unit: str = "request"):
        self.bar = None  # progress=false: tqdm not even imported (a tenth of a quiet run's own start)
        if enabled:
            from tqdm import tqdm

            self.bar = tqdm(total=total, desc=desc, unit=unit, dynamic_ncols=True)
        self.total, self.answered_by_model = total, 0
        self.others: dict[str, int] = {}

    def answered(self, who: str, n: int) -> None:
        """`n` more requests of `who` answered (asked or found in the cache): "model", or a judge's or the attacker's
        name, counted beside the bar."""
        if not n:
            return
        if who == "model":
            self.answered_by_model += n
            if self.bar is not None:
                self.bar.update(n)
        else:
            self.others[who] = self.others.get(who, 0) + n
            if self.bar is not None:
                self.bar.set_postfix_str(", ".join(f"{k} {v}" for k, v in self.others.items()), refresh=False)

    def will_not_ask(self, n: int) -> None:
        """Planned requests that will not be made (a conversation that ended early): the time left shrinks."""
        if n:
            self.total = max(self.answered_by_model, self.total - n)
            if self.bar is not None:
                self.bar.total = self.total
                self.bar.refresh()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
