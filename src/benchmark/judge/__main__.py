"""`python -m benchmark.judge train|evaluate NAME [key=value ...]`: train a shipped judge, or measure it on test;
`python -m benchmark.judge measure [TASK ...] [key=value ...]`: record the shipped judges' validity (judge/measure.py);
`python -m benchmark.judge score NAME --input IN.jsonl --output OUT.jsonl`: a judge on rows of your own (judge/score.py)."""

import sys

from hydra import compose, initialize_config_dir
from hydra.errors import HydraException
from omegaconf.errors import OmegaConfBaseException

from .. import BenchmarkError
from ..paths import CONF_DIR
from .config import register
from . import DETECTOR, detector_evaluate, detector_train
from .evaluate import evaluate
from . import probe_train
from .measure import measure, table
from .score import main as score
from .train import shipped, train

COMMANDS = ("train", "evaluate")


def detector(command: str, overrides: list[str]) -> str:
    """The DiaSafety detector's training or report, its settings composed by Hydra (conf/detector_train.yaml,
    conf/detector_evaluate.yaml) with the overrides."""
    register()
    try:
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
            cfg = compose(config_name=f"detector_{command}", overrides=overrides)
    except (HydraException, OmegaConfBaseException) as e:  # a wrong key or value, named by Hydra
        raise BenchmarkError(f"conf/detector_{command}.yaml: {str(e).splitlines()[0]}") from None
    if command == "train":
        return f"detector saved to {detector_train.train(cfg)}"
    return f"report written to {detector_evaluate.evaluate(cfg)}"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["score"]:
        try:
            print(score(args[1:]))
        except BenchmarkError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        return 0
    if args[:1] == ["measure"]:
        try:
            print(table() if args[1:] == ["--table"] else measure(args[1:]))
        except BenchmarkError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        return 0
    if len(args) < 2 or args[0] not in COMMANDS:
        print(f"usage: python -m benchmark.judge {{{'|'.join(COMMANDS)}}} NAME [key=value ...]; NAME: "
              f"{', '.join(shipped())}; or python -m benchmark.judge measure [TASK ...] [key=value ...]; or python -m "
              "benchmark.judge score NAME --input IN.jsonl --output OUT.jsonl", file=sys.stderr)
        return 2
    command, name, overrides = args[0], args[1], args[2:]
    try:
        if name == DETECTOR:
            print(detector(command, overrides))
        elif name in probe_train.shipped():
            if command != "train":
                raise BenchmarkError(f"{name}: a probe is measured as it trains (its test figures: evaluation.json)")
            print(f"probe saved to {probe_train.train(name, overrides)}")
        elif command == "train":
            print(f"judge saved to {train(name, overrides)}")
        else:
            print(f"report written to {evaluate(name, overrides)}")
    except BenchmarkError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
