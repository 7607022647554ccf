"""The suite's trained judges, trained and measured: `python -m benchmark.judge train|evaluate NAME`.

A classifier judge (train.py, evaluate.py) fine-tunes an encoder on a labelled set of conf/judge_validation.yaml (its
`train:` rows), as conf/judge_train/NAME.yaml declares; the learning rate, the epoch and the decision threshold are
chosen on a validation share carved from those rows, never on the set's test rows, which only measure the result.
The DiaSafety detector (detector_train.py, detector_evaluate.py; conf/detector_train.yaml) is trained on DiaSafety
train, chosen on val and compared with the paper on test. Both train by one loop (detector_train.Trainer) into
deltas over installed encoders; what reads a trained judge at run time is in models/ (classifier.py, detector.py).

torch, transformers, peft and scikit-learn are imported in the functions that use them: importing them takes 2.7,
1.3, 9.4 and 2.6 s on a 2-core machine (`python -c "import peft"`), which `python -m benchmark list`, the board and a
usage error should not pay. The suite's own modules are imported at the top.
"""

DETECTOR = "diasafety-detector"  # the judge with its own trainer and report (conf/detector_train.yaml)
