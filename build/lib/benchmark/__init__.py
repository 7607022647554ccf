"""A declarative benchmark suite for the safety of conversational models."""

__version__ = "0.2.0"


class BenchmarkError(Exception):
    """A problem with the user's input (config, data, command line): printed as one message, no traceback."""
