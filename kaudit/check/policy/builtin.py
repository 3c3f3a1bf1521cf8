"""Where the built-in profiles (``policies/*.yaml``) are found.

They live in the repository's top-level ``policies/`` folder. An installed
kaudit finds them in ``kaudit/check/policy/profiles/`` inside the package
(package data; in the repository that folder is a symlink to ``policies/``,
when present), a source checkout in ``policies/`` itself, and
``KAUDIT_POLICIES_DIR`` overrides both.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

ENV_DIR = "KAUDIT_POLICIES_DIR"


def _candidates() -> list[Path]:
    here = Path(__file__).resolve()
    dirs: list[Path] = []
    if os.environ.get(ENV_DIR):
        dirs.append(Path(os.environ[ENV_DIR]).expanduser())
    dirs.append(here.parent / "profiles")  # installed package data
    # A source checkout (or editable install): only when this really is the
    # repository, so an unrelated site-packages/policies is never picked up.
    repo = here.parents[3]  # kaudit/check/policy/builtin.py -> the checkout
    if (repo / "pyproject.toml").is_file():
        dirs.append(repo / "policies")
    return dirs


@lru_cache(maxsize=1)
def builtin_dir() -> Path | None:
    """The first folder that holds built-in profiles, if any."""
    for folder in _candidates():
        if folder.is_dir() and any(folder.glob("*.yaml")):
            return folder
    return None


def builtin_names() -> tuple[str, ...]:
    """Names of the built-in profiles, sorted."""
    folder = builtin_dir()
    if folder is None:
        return ()
    return tuple(sorted(p.stem for p in folder.glob("*.yaml")))


def builtin_path(name: str) -> Path | None:
    """The YAML file of built-in profile ``name``."""
    folder = builtin_dir()
    if folder is None or name not in builtin_names():
        return None
    return folder / f"{name}.yaml"
