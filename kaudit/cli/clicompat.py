"""Click classes as typer ships them.

Recent typer releases vendor click as ``typer._click``; older ones depend on
the ``click`` package. Import the classes from here so both work.
"""

from __future__ import annotations

from typer.core import TyperGroup as Group
from typer.core import TyperOption as Option

try:
    from typer._click import ClickException, Command
    from typer._click.core import Context, ParameterSource
    from typer._click.exceptions import BadParameter
    from typer._click.formatting import HelpFormatter
    from typer._click.types import FloatParamType
    from typer._types import TyperChoice as Choice
except ImportError:  # typer that depends on the click package
    from click import ClickException, Command  # type: ignore[assignment]
    from click.core import Context, ParameterSource  # type: ignore[assignment]
    from click.exceptions import BadParameter  # type: ignore[assignment]
    from click.formatting import HelpFormatter  # type: ignore[assignment]
    from click.types import Choice, FloatParamType  # type: ignore[assignment]

__all__ = ["BadParameter", "Choice", "ClickException", "Command", "Context", "FloatParamType",
           "Group", "HelpFormatter", "Option", "ParameterSource"]
