"""Where the shipped catalogs live.

In an installed wheel they sit in `solver/_catalog/<name>`; in a source checkout they are the repository's
top-level folders. Both layouts are tried so editable and non-editable installs behave the same.
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


@lru_cache(maxsize=None)
def catalog_dir(name: str) -> Path:
    """Folder of a shipped catalog: 'models', 'hardware' or 'references'."""
    for candidate in (_PACKAGE / "_catalog" / name, _PACKAGE.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"catalog folder {name!r} not found beside the package")


# the framework profile an answer uses where none is named: every knob, only divisibility rules (the method's own)
DEFAULT_FRAMEWORK = "generic"


def frameworks_dir() -> Path:
    """Framework profiles ship as package data."""
    return _PACKAGE / "frameworks"
