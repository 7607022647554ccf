"""`python -m benchmark.judge train|evaluate NAME [key=value ...]`: train a shipped judge, or measure it on test."""

import sys

from .. import BenchmarkError
from . import DETECTOR

COMMANDS = ("train", "evaluate")


def main(argv: list[str] | None = None) -> int:
    from .train import shipped

    args = sys.argv[1:] if argv is None else argv
    if len(args) < 2 or args[0] not in COMMANDS:
        print(f"usage: python -m benchmark.judge {{{'|'.join(COMMANDS)}}} NAME [key=value ...]; NAME: "
              f"{', '.join(shipped())}", file=sys.stderr)
        return 2
    command, name, overrides = args[0], args[1], args[2:]
    if name == DETECTOR:  # the DiaSafety detector has its own trainer and report
        import subprocess

        return subprocess.call([sys.executable, "-m", "benchmark.detector", command, *overrides])
    try:
        if command == "train":
            from .train import train

            print(f"judge saved to {train(name, overrides)}")
        else:
            from .evaluate import evaluate

            print(f"report written to {evaluate(name, overrides)}")
    except BenchmarkError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
