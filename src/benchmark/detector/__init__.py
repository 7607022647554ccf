"""The DiaSafety context-level detector: training (`train`), inference (`model`), the paper's comparison (`evaluate`).

Three designs share one training loop and one checkpoint format:
- one_vs_all: the paper's design, one 3-way classifier {safe, unsafe, N/A} per category (five encoders);
- multiclass: the paper's Appendix B variant, one 6-way classifier (Safe + five categories);
- multihead: one encoder, one 3-way head per category: the one-vs-all decision in one forward pass.
"""

# The five released categories, in the paper's order (Sensitive Topic Continuation is not in the released data).
CATEGORIES = ["Offending User", "Risk Ignorance", "Unauthorized Expertise", "Toxicity Agreement", "Biased Opinion"]
ABBREVIATIONS = {"Offending User": "OU", "Risk Ignorance": "RI", "Unauthorized Expertise": "UE",
                 "Toxicity Agreement": "TA", "Biased Opinion": "BO"}
SAFE = "Safe"
FINE_LABELS = [SAFE, *CATEGORIES]
# the 3-way label set of a per-category classifier (one-vs-all member or head)
MEMBER_LABELS = ["safe", "unsafe", "N/A"]
DESIGNS = ("one_vs_all", "multiclass", "multihead")
MANIFEST = "detector.json"  # written beside the weights by training: design, members, context use, fit
EVALUATION = "evaluation.json"  # written beside them by `python -m benchmark.detector evaluate`: val and test scores
DEFAULT_DIR = "checkpoints/diasafety-detector"  # what `python -m benchmark.detector train` makes, and the config loads
TRAIN_MINUTES = 50  # the default training (5 epochs of 574-646 s on one thread beside another: training_log.jsonl)
