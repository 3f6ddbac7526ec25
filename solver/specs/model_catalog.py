"""Resolve a model argument: catalog alias, Hugging Face id, a config.json path or a folder holding one."""
from __future__ import annotations

import difflib
from functools import lru_cache
from pathlib import Path

from solver.catalog import catalog_dir
from solver.errors import InputError
from solver.specs.model import ModelSpec, parse_model_config
from solver.specs.validation import load_json, load_yaml


def _norm(name: str) -> str:
    return name.strip().lower().replace("_", "-")


@lru_cache(maxsize=1)
def _index() -> dict[str, str]:
    """normalized alias -> file name. The file stem (org--name) and 'org/name' always resolve."""
    folder = catalog_dir("models")
    data = load_yaml(folder / "index.yaml") or {}
    table: dict[str, str] = {}
    for file, aliases in (data.get("models") or {}).items():
        stem = file.removesuffix(".json")
        for alias in [stem, stem.replace("--", "/"), *aliases]:
            table[_norm(alias)] = file
    for path in folder.glob("*.json"):
        table.setdefault(_norm(path.stem), path.name)
        table.setdefault(_norm(path.stem.replace("--", "/")), path.name)
    return table


def list_models() -> list[tuple[str, list[str]]]:
    """(file, aliases) for every catalog model."""
    data = load_yaml(catalog_dir("models") / "index.yaml") or {}
    return [(f, list(a)) for f, a in sorted((data.get("models") or {}).items())]


def published_counts() -> dict[str, dict]:
    """Published parameter counts per catalog alias, with what each counts (models/published.yaml)."""
    data = load_yaml(catalog_dir("models") / "published.yaml") or {}
    return dict(data.get("models") or {})


def _config_path(arg: str) -> Path | None:
    path = Path(arg).expanduser()
    if path.is_dir():
        cfg = path / "config.json"
        if not cfg.is_file():
            raise InputError("model", f"folder {arg} holds no config.json")
        return cfg
    if path.is_file():
        return path
    if arg.endswith(".json"):
        raise InputError("model", f"file not found: {arg}")
    return None


def resolve_model_file(arg: str) -> tuple[Path, str]:
    """(path to config.json, display name)."""
    path = _config_path(arg)
    if path is not None:
        return path, path.parent.name if path.name == "config.json" else path.stem
    table = _index()
    key = _norm(arg)
    if key in table:
        file = table[key]
        return catalog_dir("models") / file, file.removesuffix(".json").split("--", 1)[-1]
    close = difflib.get_close_matches(key, list(table), n=4, cutoff=0.5)
    hint = f"; close names: {', '.join(close)}" if close else "; see `shardplan models`"
    raise InputError("model", f"unknown model {arg!r}{hint}")


@lru_cache(maxsize=64)
def _load_cached(path: str, name: str) -> ModelSpec:
    return parse_model_config(load_json(Path(path)), name, origin=path)


def load_model(arg: str) -> ModelSpec:
    path, name = resolve_model_file(arg)
    return _load_cached(str(path), name)
