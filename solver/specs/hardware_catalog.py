"""The shipped hardware catalog: list it, and load a device by name or a user's YAML by path."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from solver.catalog import catalog_dir
from solver.errors import InputError
from solver.specs.close_names import close_names
from solver.specs.hardware import Hardware, load_hardware_file

_YAML_SUFFIXES = (".yaml", ".yml")


def list_hardware() -> list[str]:
    """Catalog names (file stems), sorted."""
    folder = catalog_dir("hardware")
    return sorted(p.stem for p in folder.iterdir() if p.suffix in _YAML_SUFFIXES and p.is_file())


def load_hardware(name_or_path: str) -> Hardware:
    """A catalog device ('h200-sxm', 'Atlas_A3', ...) or a user's hardware YAML file."""
    if _is_path(name_or_path):
        return load_hardware_file(Path(name_or_path).expanduser())
    key = _normalize(name_or_path)
    names = list_hardware()
    if key not in names:
        raise InputError("hardware", _unknown_message(name_or_path, key, names))
    return _load_catalog_entry(key)


def _is_path(text: str) -> bool:
    # Catalog names never carry a suffix or a separator, so either one (or an existing file) means a user file.
    looks_like_file = text.lower().endswith(_YAML_SUFFIXES) or "/" in text or "\\" in text
    try:
        return looks_like_file or Path(text).expanduser().is_file()
    except (OSError, ValueError):  # a name too long for a path, or with a NUL: not a file, so a catalog name
        return False


def _normalize(name: str) -> str:
    return name.strip().lower().replace("-", "_").replace(" ", "_")


@lru_cache(maxsize=None)
def _load_catalog_entry(key: str) -> Hardware:
    # Hardware is frozen, so one shared instance per catalog name is safe.
    folder = catalog_dir("hardware")
    path = next(folder / f"{key}{suffix}" for suffix in _YAML_SUFFIXES if (folder / f"{key}{suffix}").is_file())
    return load_hardware_file(path)


def _unknown_message(given: str, key: str, names: list[str]) -> str:
    close = close_names(key, {n: n for n in names}, limit=3, cutoff=0.6)
    if close:
        return f"unknown hardware '{given}'; close names: {', '.join(close)}"
    return f"unknown hardware '{given}'; known: {', '.join(names)}"
