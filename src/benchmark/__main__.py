"""`python -m benchmark ...`: the command's code is cli/main.py."""

from .cli.main import command

command()
