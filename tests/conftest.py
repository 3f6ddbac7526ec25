"""Shared test paths. The public facts live in ../shared beside the checkout (CI lays a copy there too)."""
from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FACTS = REPO.parent / "shared" / "facts"
REAL_TRACE = FACTS / "traces" / "deepseek-v3-train-ep64.trace.json"
