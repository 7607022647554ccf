"""`python -m benchmark model=NAME task=NAME [overrides]`: compose the config with Hydra, run, print the card.

With `--multirun` each job of the sweep runs here too; a job that fails is reported in the sweep's summary table
(cli/sweep.py) instead of stopping the others, and the command exits 1 when any job failed.
"""

import sys
import traceback
from pathlib import Path

from .. import BenchmarkError
from ..paths import CONF_DIR, other_checkout
from ..safe_yaml import check_config_dirs, search_path_folders


def _in_sweep() -> bool:
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    return HydraConfig.initialized() and HydraConfig.get().mode == RunMode.MULTIRUN


def main() -> None:
    """A run through @hydra.main: sweeps (--multirun) and Hydra's own flags (--cfg, --help, ...)."""
    import hydra
    from hydra.core.hydra_config import HydraConfig

    from ..composition import register

    register()  # the run's schema in Hydra's config store (compose registers it for a plain run)

    @hydra.main(config_path=str(CONF_DIR), config_name="config", version_base="1.3")
    def job(cfg):
        return _run_one(cfg, list(HydraConfig.get().overrides.task), _in_sweep())

    job()


def _run_one(cfg, overrides: list[str], in_sweep: bool):
    from ..run.report import table
    from ..run.runner import run

    try:
        if cfg.preview is not None:
            from .listings import preview

            print(preview(cfg, cfg.preview), flush=True)
            return None
        card, path = run(cfg, overrides)
    except BenchmarkError as e:
        print(f"error: {e}", file=sys.stderr, flush=True)
        if in_sweep:
            from . import sweep  # imports Hydra: only in a sweep

            return sweep.job_result(cfg, error=str(e))
        sys.exit(2)
    except Exception as e:
        if not in_sweep:
            raise
        from . import sweep

        traceback.print_exc()  # into the job's log; the summary names the error
        return sweep.job_result(cfg, error=f"{type(e).__name__}: {e}")
    print(table(card, path), flush=True)
    if not in_sweep:
        return None
    from . import sweep

    return sweep.job_result(cfg, card, path)


def _warn_other_checkout() -> None:
    other = other_checkout(Path.cwd())
    if other is not None:
        print(f"warning: this folder is inside the checkout {other}, but the installed suite reads its configs and "
              f"tasks from {CONF_DIR.parent}; install this one (pip install -e {other}) to run its files",
              file=sys.stderr, flush=True)


def _tool(argv: list[str]) -> int:
    """`python -m benchmark list [tasks|models|judges|attackers]`, `view [FOLDER]`, `export ...`."""
    command, rest = argv[0], argv[1:]
    try:
        if command == "list":
            from .listings import listing

            print(listing(rest[0] if rest else None))
            return 0
        from .tools import main as tool

        return tool(command, rest)
    except BenchmarkError as e:
        print(f"error: {e}", file=sys.stderr, flush=True)
        return 2


TOOLS = ("list", "view", "export")


def _single(argv: list[str]) -> int | None:
    """A plain run (overrides only, no Hydra flag such as --multirun or --cfg): composed once with Hydra's compose
    API, as in-process callers compose (@hydra.main composes twice), or read back where the same inputs composed it
    before (compose_cache.py); None for anything else, which goes to Hydra."""
    if any(a.startswith("-") for a in argv):
        return None
    import logging

    from ..run.collector import long_lived, one_command

    one_command()  # a sweep (--multirun) loads model after model: it goes on collecting as usual
    try:
        # the suite's modules and its config live as long as the process, and leave a megabyte or two of garbage in
        # cycles: frozen with them rather than walked for (0.04 s)
        with long_lived(collect=False):
            from ..run import runner  # noqa: F401  (the run's modules, loaded here with the config)
            from ..composition import compose

            cfg = compose(argv)  # every config file checked before Hydra first reads it (schema.compose)
    except BenchmarkError as e:
        print(f"error: {e}", file=sys.stderr, flush=True)
        return 2
    except Exception as e:
        from hydra.errors import HydraException
        from omegaconf.errors import OmegaConfBaseException

        if not isinstance(e, (HydraException, OmegaConfBaseException)):
            raise
        # as Hydra reports them: the message, no traceback
        print("\n".join(str(x) for x in (e, e.__cause__) if x is not None), file=sys.stderr, flush=True)
        return 1
    # Hydra's job logging as conf/config.yaml chooses it (hydra/job_logging: stdout): INFO and above, to stdout
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stdout)
    # the card records the task's overrides as Hydra's own overrides.task does: without Hydra's (hydra.searchpath=...)
    _run_one(cfg, [a for a in argv if not a.lstrip("+~").startswith(("hydra.", "hydra/"))], False)
    return 0


def command() -> None:
    """`python -m benchmark ARGS` (benchmark/__main__.py): a tool, a plain run, or a run through Hydra."""
    from ..run.collector import before_exit

    if len(sys.argv) > 1 and sys.argv[1] in TOOLS:
        sys.exit(_tool(sys.argv[1:]))
    _warn_other_checkout()
    done = _single(sys.argv[1:])
    if done is not None:
        before_exit()
        sys.exit(done)
    try:  # every config file Hydra may read, first: a bad one is one line, not a traceback or a hang
        check_config_dirs(search_path_folders(sys.argv[1:]))
    except BenchmarkError as e:
        print(f"error: {e}", file=sys.stderr, flush=True)
        sys.exit(2)
    main()
    from . import sweep

    if sweep.LAST_SWEEP.failed_jobs:
        sys.exit(1)
