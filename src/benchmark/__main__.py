"""`python -m benchmark model=NAME task=NAME [overrides]`: compose the config with Hydra, run, print the card."""

import sys

import hydra

from . import BenchmarkError
from .paths import CONF_DIR
from .schema import register

register()


@hydra.main(config_path=str(CONF_DIR), config_name="config", version_base="1.3")
def main(cfg) -> None:
    from .report import table
    from .runner import run

    try:
        card, path = run(cfg)
    except BenchmarkError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
    print(table(card, path))


if __name__ == "__main__":
    main()
