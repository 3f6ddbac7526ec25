"""The design's data flow: specs -> space -> estimate -> plan -> rank -> launch -> report, then the layers that
drive them (calibrate, the entry points, capacity planning, the API facade, the command line). Nothing downstream
is imported upstream, not even lazily inside a function."""
from __future__ import annotations

import ast
from pathlib import Path

SOLVER = Path(__file__).resolve().parents[1] / "solver"

# each top-level module or package of solver/ and its place in the flow; a module imports only its own level
# or lower ones
LEVEL = {
    "errors": 0, "memo": 0, "catalog": 0, "outfile": 0, "ortools_cp": 0,
    "specs": 1,
    "space": 2,
    "estimate": 3,
    "measured": 4, "measured_disagg": 5,
    "plan": 6,
    "rank": 7,
    "launch": 8,
    "report": 9,
    "calibrate": 10,
    "entry": 11, "one_config": 11,
    "capacity": 12,
    "api": 13,
    "cli": 14,
    "__main__": 15,  # `python -m solver`: runs the CLI
}


def _imports(path: Path) -> set[str]:
    """The solver top-level names a file imports, at module level or inside functions."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            parts = node.module.split(".")
            if parts[0] == "solver":
                out.add(parts[1] if len(parts) > 1 else node.names[0].name)
        elif isinstance(node, ast.Import):
            for a in node.names:
                parts = a.name.split(".")
                if parts[0] == "solver" and len(parts) > 1:
                    out.add(parts[1])
    return out


def test_every_solver_module_has_a_place_in_the_flow() -> None:
    names = {p.stem if p.is_file() else p.name for p in SOLVER.iterdir()
             if (p.suffix == ".py" and p.stem != "__init__") or (p.is_dir() and (p / "__init__.py").exists())}
    assert names == set(LEVEL), names ^ set(LEVEL)


def test_nothing_downstream_is_imported_upstream() -> None:
    upward = []
    for path in sorted(SOLVER.rglob("*.py")):
        rel = path.relative_to(SOLVER)
        src = rel.parts[0].removesuffix(".py")
        if src == "__init__":
            continue
        for dst in _imports(path):
            if dst != src and LEVEL[dst] > LEVEL[src]:
                upward.append(f"{rel} imports solver.{dst}")
    assert not upward, upward
