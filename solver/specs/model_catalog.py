"""Resolve a model argument: catalog alias, a config.json path or a folder holding one, or a Hugging Face
`org/name` found in the local hub cache (huggingface_hub.try_to_load_from_cache: HF_HUB_CACHE, else
HF_HOME/hub, else ~/.cache/huggingface/hub). `download=True` fetches config.json (and a separate
hf_quant_config.json when the repository has one) and nothing else; HF_HUB_OFFLINE=1 forbids it.
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from solver.catalog import catalog_dir
from solver.errors import InputError
from solver.specs.config.read import parse_model_config
from solver.specs.model import ModelSpec
from solver.specs.validation import load_json, load_yaml


def _norm(name: str) -> str:
    return name.strip().lower().replace("_", "-")


@lru_cache(maxsize=1)
def _index() -> dict[str, str]:
    """normalized alias -> file name. The file stem (org--name) and 'org/name' always resolve; so do the names of
    a checkpoint that stores a catalog config's architecture in other formats (_checkpoints), to that config."""
    folder = catalog_dir("models")
    data = load_yaml(folder / "index.yaml") or {}
    table: dict[str, str] = {}
    for file, aliases in (data.get("models") or {}).items():
        stem = file.removesuffix(".json")
        for alias in [stem, stem.replace("--", "/"), *aliases]:
            table[_norm(alias)] = file
    for alias, entry in _checkpoints().items():
        table[alias] = entry["config"]
    for path in folder.glob("*.json"):
        table.setdefault(_norm(path.stem), path.name)
        table.setdefault(_norm(path.stem.replace("--", "/")), path.name)
    return table


@lru_cache(maxsize=1)
def _checkpoints() -> dict[str, dict[str, Any]]:
    """normalized alias -> index.yaml's `checkpoints` entry: a published checkpoint whose config.json is a catalog
    config's architecture with a quantization_config of its own ({config, aliases, quantization_config,
    source}); its names load the config with that quantization_config."""
    data = load_yaml(catalog_dir("models") / "index.yaml") or {}
    table: dict[str, dict[str, Any]] = {}
    for name, entry in (data.get("checkpoints") or {}).items():
        for alias in [name, *entry.get("aliases", ())]:
            table[_norm(alias)] = entry
    return table


@lru_cache(maxsize=1)
def _file_notes() -> dict[str, str]:
    """catalog file -> index.yaml's `notes` entry: what the file lacks that its name says (a format kept in a file
    beside config.json that the catalog does not hold), said on every answer that reads it."""
    data = load_yaml(catalog_dir("models") / "index.yaml") or {}
    return {str(k): " ".join(str(v).split()) for k, v in (data.get("notes") or {}).items()}


def list_models() -> list[tuple[str, list[str]]]:
    """(file, aliases) for every catalog model; a checkpoint of a config's architecture in other formats
    (_checkpoints) is listed under its config's names."""
    data = load_yaml(catalog_dir("models") / "index.yaml") or {}
    more: dict[str, list[str]] = {}
    for name, entry in (data.get("checkpoints") or {}).items():
        more.setdefault(entry["config"], []).extend([name, *entry.get("aliases", ())])
    return [(f, [*a, *more.get(f, [])]) for f, a in sorted((data.get("models") or {}).items())]


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
    if arg.startswith(("/", "./", "../", "~")) or arg.count("/") > 1:
        # a path (a catalog name has no separator, a hub id one): the folder or file is missing, not a model name
        raise InputError("model", f"no such file or folder: {arg}")
    return None


def hub_cache_dir() -> Path:
    """Where huggingface_hub keeps downloads, read from the environment at call time."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    home = os.environ.get("HF_HOME") or os.path.join(os.environ.get("XDG_CACHE_HOME", "~/.cache"), "huggingface")
    return Path(home).expanduser() / "hub"


def _is_repo_id(arg: str) -> bool:
    parts = arg.split("/")
    return len(parts) == 2 and all(parts) and not arg.endswith(".json")


def _offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


HUB_CONNECT_TIMEOUT_S = 5.0  # one TCP connect to the hub; the hub client would retry an unreachable one for ~30 s


def _refuse_unreachable_hub(repo: str) -> None:
    """One quick connect to the hub's endpoint (HF_ENDPOINT) before fetching: without a network the hub client
    retries with backoff and logs each try, where one line saying the hub is unreachable is the answer."""
    import socket
    from urllib.parse import urlsplit

    from huggingface_hub import constants

    url = urlsplit(constants.ENDPOINT)
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        socket.create_connection((url.hostname or "", port), timeout=HUB_CONNECT_TIMEOUT_S).close()
    except OSError as exc:
        raise InputError("--download", f"cannot reach {constants.ENDPOINT} to fetch {repo}/config.json "
                         f"({type(exc).__name__}); pass a config.json path or a folder holding one") from None


def _from_hub(repo: str, download: bool) -> Path | None:
    """config.json of `repo` from the local hub cache, or fetched when `download` is set."""
    try:
        from huggingface_hub import hf_hub_download, try_to_load_from_cache
    except ImportError:
        raise InputError("model", f"{repo!r} is not in the catalog, and huggingface_hub is not installed to look "
                         "in the hub cache (pip install 'shardplan[hub]', or pass a config.json path)") from None
    cache = hub_cache_dir()
    found = try_to_load_from_cache(repo_id=repo, filename="config.json", cache_dir=cache)
    if isinstance(found, str) and Path(found).is_file():
        return Path(found)
    if not download:
        return None
    if _offline():
        raise InputError("--download", f"HF_HUB_OFFLINE is set: cannot fetch {repo}/config.json")
    _refuse_unreachable_hub(repo)
    try:
        path = Path(hf_hub_download(repo_id=repo, filename="config.json", cache_dir=cache))
    except Exception as exc:  # network, auth, missing repo: one line
        raise InputError("--download", f"could not fetch {repo}/config.json: {type(exc).__name__}") from None
    try:  # NVIDIA ModelOpt repos keep the quantization config beside config.json
        hf_hub_download(repo_id=repo, filename="hf_quant_config.json", cache_dir=cache)
    except Exception:
        pass  # most repositories have none: the config's own quantization_config applies
    return path


def resolve_model_file(arg: str, download: bool = False) -> tuple[Path, str]:
    """(path to config.json, display name)."""
    path = _config_path(arg)
    if path is not None:
        return path, path.parent.name if path.name == "config.json" else path.stem
    table = _index()
    key = _norm(arg)
    if key in table:
        file = table[key]
        return catalog_dir("models") / file, file.removesuffix(".json").split("--", 1)[-1]
    if _is_repo_id(arg):
        found = _from_hub(arg, download)
        if found is not None:
            return found, arg.split("/", 1)[1]
        raise InputError("model", f"{arg!r} is not in the catalog nor in the hub cache at {hub_cache_dir()}; pass "
                         "a config.json path or a folder holding one, or `inspect --download` to fetch config.json")
    from solver.specs.close_names import close_names  # only an unknown name needs it

    close = close_names(key, table, limit=5, cutoff=0.5)
    hint = f"; close names: {', '.join(close)}" if close else "; see `shardplan models`"
    raise InputError("model", f"unknown model {arg!r}{hint}")


# NVIDIA ModelOpt exports before 0.31 keep the quantization config in this file beside config.json, which then
# carries none; the engines read it as the config's quantization_config (vLLM 0.34.0 (PyPI wheel)
# transformers_utils/config.py:996-1008) and name its method from its producer (model_arch_config_convertor.py
# 248-269: producer.name "modelopt")
QUANT_CONFIG_BESIDE = "hf_quant_config.json"


def with_quant_config_beside(cfg: Any, path: Path) -> Any:
    """`cfg` (read from `path`) with the quantization config of QUANT_CONFIG_BESIDE where `path` is a checkpoint's
    config.json, the file sits in its folder and the config carries none, under the method its producer names (a
    file with no producer is ModelOpt's: the file is that exporter's). A config file of another name (a catalog
    entry, a folder of several configs) is its own."""
    beside = path.parent / QUANT_CONFIG_BESIDE
    if path.name != "config.json" or not isinstance(cfg, dict) or "quantization_config" in cfg or not beside.is_file():
        return cfg
    quant = load_json(beside)
    if not isinstance(quant, dict):
        raise InputError(str(beside), "must be a JSON object (ModelOpt's quantization config)")
    producer = quant.get("producer")
    method = str((producer.get("name") if isinstance(producer, dict) else None) or "modelopt")
    return {**cfg, "quantization_config": {"quant_method": method, **quant}}


def _beside_error(e: InputError, path: str, merged: dict[str, Any]) -> InputError:
    """`e` named in QUANT_CONFIG_BESIDE where its field is one that file wrote (the config.json beside it carries no
    quantization_config for the user to look in); quant_method is its producer.name (with_quant_config_beside)."""
    head = f"{path}: quantization_config."
    if not e.field.startswith(head):
        return e
    field = e.field[len(head):]
    if field == "quant_method" and "producer" in merged and field not in json.loads(
            (Path(path).parent / QUANT_CONFIG_BESIDE).read_text()):
        field = "producer.name"
    return InputError(f"{Path(path).parent / QUANT_CONFIG_BESIDE}: {field}", e.problem)


@lru_cache(maxsize=64)
def _load_cached(path: str, name: str, mtime: float, beside_mtime: float, quant: str | None = None) -> ModelSpec:
    own = load_json(Path(path))
    cfg = with_quant_config_beside(own, Path(path))
    if quant is not None:  # a catalog checkpoint's own formats over its config's (_checkpoints)
        cfg = {**cfg, "quantization_config": json.loads(quant)}
    try:
        spec = parse_model_config(cfg, name, origin=path)
    except InputError as e:
        raise _beside_error(e, path, cfg["quantization_config"]) if cfg is not own and quant is None else e
    note = _file_notes().get(Path(path).name) if Path(path).parent == catalog_dir("models") else None
    if note is None or "quantization_config" in cfg:  # a checkpoint's own formats answer what the note says
        return spec
    return replace(spec, warnings=(*spec.warnings, note))


def load_model(arg: str, download: bool = False) -> ModelSpec:
    path, name = resolve_model_file(arg, download)
    beside = path.parent / QUANT_CONFIG_BESIDE  # its edits are read too
    entry = _checkpoints().get(_norm(arg)) if _config_path(arg) is None else None
    quant = json.dumps(entry["quantization_config"], sort_keys=True) if entry is not None else None
    return _load_cached(str(path), name, path.stat().st_mtime, beside.stat().st_mtime if beside.is_file() else 0.0,
                        quant)


def model_names(arg: str, config_name: str) -> tuple[str, str | None]:
    """(the model as an answer names it, the config it reads where that differs): the catalog name the user gave
    (llama-3.3-70b) with its config (Meta-Llama-3.1-70B) where the two differ (an alias of a shared config); a
    path or hub id is named by its config."""
    if _config_path(arg) is not None or _norm(arg) not in _index():
        return config_name, None
    # the same model spelled shorter (llama-3.1-8b for Meta-Llama-3.1-8B, the file stem, org/name) says nothing
    # more; another model's name on a shared config does, a longer one included (llama-3.3-70b; deepseek-v3.2-exp
    # and minimax-m1-40k read DeepSeek-V3.2's and MiniMax-M1's configs)
    asked, config = (re.sub(r"[^a-z0-9]", "", n.lower()) for n in (arg.split("/")[-1].split("--")[-1], config_name))
    return arg, (None if asked in config else config_name)


def model_title(arg: str, config_name: str) -> str:
    """model_names in one line of a header: `llama-3.3-70b (config Meta-Llama-3.1-70B)`."""
    name, config = model_names(arg, config_name)
    return name if config is None else f"{name} (config {config})"


def with_model_names(data: dict[str, Any], arg: str) -> dict[str, Any]:
    """An answer's `data` with its "model" (the config's name) named as model_names names it: "config" follows
    "model" where the two differ."""
    name, config = model_names(arg, data["model"])
    return {"model": name, **({"config": config} if config else {}), **{k: v for k, v in data.items() if k != "model"}}
