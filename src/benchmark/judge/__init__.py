"""Classifier judges the suite trains on human labels: `python -m benchmark.judge train NAME` fine-tunes an encoder
on a labelled set of conf/judge_validation.yaml (its `train:` rows), as conf/judge_train/NAME.yaml declares; the
learning rate, the epoch and the decision threshold are chosen on a validation share carved from those rows, never on
the set's test rows, which only measure the result (`python -m benchmark.judge evaluate NAME`)."""

MANIFEST = "judge.json"  # written beside the members' weights: settings, members, threshold, validation figures
EVALUATION = "evaluation.json"  # written by `evaluate`: the judge's figures on its set's test rows
DETECTOR = "diasafety-detector"  # the one shipped judge with its own trainer (python -m benchmark.detector train)
