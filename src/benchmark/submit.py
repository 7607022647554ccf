"""`python -m benchmark.submit ...`: the command's code is cli/submit.py."""

import sys

from .cli.submit import main

if __name__ == "__main__":
    sys.exit(main())
