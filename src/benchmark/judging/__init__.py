"""The judging wing: the step engine and its step types (engine.py), panels (panels.py), re-deriving votes
(derived.py), reading a judge's answer (parsing.py), the labelled sets (labelled.py) and measuring judges
on them (validity.py, with the shipped record of their validity: validity_record.py, and a verifier's
sample of it: recheck.py). Its modules stand on the floors of what they read (tests/test_layout.py); this
package imports none of them. What a submitted card's votes and judge figures must be (card_votes.py,
card_figures.py) is checked here too, on the submissions' floor: they read the card's record."""
