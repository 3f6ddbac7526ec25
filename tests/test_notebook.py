"""The capacity-planning notebook runs top to bottom (nbclient), so it cannot rot."""
from __future__ import annotations

from pathlib import Path

import pytest

import nbformat
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).resolve().parent.parent / "notebooks" / "capacity_planning.ipynb"


@pytest.mark.slow  # sweeps up to 256 cards on two hardware kinds: minutes on 2 cores
def test_capacity_planning_notebook_executes(tmp_path: Path) -> None:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    # run in a scratch folder: whatever the notebook writes stays out of the checkout
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    assert any("image/png" in o.get("data", {}) for o in outputs), "the plots render"
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "rows from 12 solves" in text and "recommended:" in text and "read back unchanged" in text
