"""A declarative benchmark suite for the safety of conversational models."""

__version__ = "0.2.0"


class BenchmarkError(Exception):
    """A problem with the user's input (config, data, command line): printed as one message, no traceback."""


def evaluate(model: str | None = None, task: str | None = None, overrides=(), **settings) -> dict:
    """Run `task` on `model` in this process and return the score card; see run/evaluate.py."""
    # imported on call: every module of the suite imports this package (BenchmarkError), the run wing among them
    from .run.evaluate import evaluate as run

    return run(model, task, overrides, **settings)
