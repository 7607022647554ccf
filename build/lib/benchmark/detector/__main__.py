"""`python -m benchmark.detector train|evaluate [overrides]`: train a DiaSafety detector, or compare with the paper."""

import sys

import hydra

from .. import BenchmarkError
from ..paths import CONF_DIR
from ..schema import register

COMMANDS = ("train", "evaluate")


def _guard(fn, cfg) -> None:
    try:
        print(fn(cfg))
    except BenchmarkError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)


@hydra.main(config_path=str(CONF_DIR), config_name="detector_train", version_base="1.3")
def train_main(cfg) -> None:
    from .train import train

    _guard(lambda c: f"detector saved to {train(c)}", cfg)


@hydra.main(config_path=str(CONF_DIR), config_name="detector_evaluate", version_base="1.3")
def evaluate_main(cfg) -> None:
    from .evaluate import evaluate

    _guard(lambda c: f"report written to {evaluate(c)}", cfg)


def main() -> None:
    if len(sys.argv) < 2 or sys.argv[1] not in COMMANDS:
        print(f"usage: python -m benchmark.detector {{{'|'.join(COMMANDS)}}} [key=value ...]", file=sys.stderr)
        sys.exit(2)
    command = sys.argv.pop(1)
    register()
    (train_main if command == "train" else evaluate_main)()


if __name__ == "__main__":
    main()
