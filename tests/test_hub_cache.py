"""Model names through the local Hugging Face hub cache: a fake cache laid out as the hub lays it."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from solver.catalog import catalog_dir
from solver.errors import InputError
from solver.specs.model_catalog import hub_cache_dir, load_model

REPO = "someorg/Tiny-Llama-Test"


def _fake_cache(root: Path, repo: str = REPO, rev: str = "0123abcd") -> Path:
    """models--org--name/refs/main -> rev, snapshots/<rev>/config.json (huggingface_hub's layout)."""
    folder = root / f"models--{repo.replace('/', '--')}"
    (folder / "refs").mkdir(parents=True)
    (folder / "refs" / "main").write_text(rev)
    snap = folder / "snapshots" / rev
    snap.mkdir(parents=True)
    cfg = json.loads((catalog_dir("models") / "meta-llama--Meta-Llama-3.1-8B.json").read_text())
    (snap / "config.json").write_text(json.dumps(cfg))
    return snap / "config.json"


def test_repo_id_outside_the_catalog_is_read_from_hf_hub_cache(tmp_path: Path, monkeypatch) -> None:
    _fake_cache(tmp_path)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    spec = load_model(REPO)
    assert spec.name == "Tiny-Llama-Test" and spec.num_layers == 32


def test_hf_home_is_honoured_when_hf_hub_cache_is_unset(tmp_path: Path, monkeypatch) -> None:
    _fake_cache(tmp_path / "hub")
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    assert hub_cache_dir() == tmp_path / "hub"
    assert load_model(REPO).hidden_size == 4096


def test_absent_repo_says_where_it_looked_and_what_to_pass(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    with pytest.raises(InputError, match=f"in the hub cache at {tmp_path}.*config.json path.*--download"):
        load_model("nobody/not-there")


def test_download_is_refused_offline(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(InputError, match="HF_HUB_OFFLINE"):
        load_model("nobody/not-there", download=True)
