"""Allow ``python -m kaudit``."""

from kaudit.cli.app import run

run()
