"""Write solver/specs/config/family_classes.yaml: for each model_type of family_defaults.yaml that transformers
knows, its configuration class, the file that defines it and which of the line's keys are fields of that class
(its annotated attributes or `self.<name> =` assignments, its base classes' in the wheel included), read from an
unzipped transformers wheel. A line's other keys are facts of the modeling code (Qwen3's use_qk_norm), no field a
config could write.

    python docs/family_classes_from_wheel.py /tmp/tfw39/transformers

The class comes from models/auto/auto_mappings.py CONFIG_MAPPING_NAMES (model_type -> class name), the file from
the one models/*/configuration_*.py that defines `class <name>(`. A model_type the wheel does not map (a family
that ships its own code) gets no line: a note naming its defaults then names the family line instead.
"""
from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
DEFAULTS = ROOT / "solver" / "specs" / "config" / "family_defaults.yaml"
OUT = ROOT / "solver" / "specs" / "config" / "family_classes.yaml"


def _mapping(wheel: Path) -> dict[str, str]:
    tree = ast.parse((wheel / "models" / "auto" / "auto_mappings.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "CONFIG_MAPPING_NAMES":
            return dict(ast.literal_eval(node.value.args[0]))
    raise SystemExit("CONFIG_MAPPING_NAMES not found in auto_mappings.py")


def _classes(wheel: Path) -> dict[str, tuple[str, set[str], list[str]]]:
    """class name -> (its file, the fields its body sets, its base class names)."""
    out: dict[str, tuple[str, set[str], list[str]]] = {}
    for path in sorted((wheel / "models").glob("*/configuration_*.py")):
        for node in ast.parse(path.read_text()).body:
            if not isinstance(node, ast.ClassDef) or node.name in out:
                continue
            fields = {n.target.id for n in node.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)}
            fields |= {t.attr for n in ast.walk(node) if isinstance(n, (ast.Assign, ast.AnnAssign))
                       for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
                       if isinstance(t, ast.Attribute) and getattr(t.value, "id", "") == "self"}
            bases = [b.id for b in node.bases if isinstance(b, ast.Name)]
            out[node.name] = (f"{path.parent.name}/{path.name}", fields, bases)
    return out


def _fields(name: str, classes: dict) -> set[str]:
    file, own, bases = classes[name]
    return own.union(*(_fields(b, classes) for b in bases if b in classes and b != name))


def main(wheel: Path) -> None:
    version = re.search(r'__version__ = "([^"]+)"', (wheel / "__init__.py").read_text()).group(1)
    table = yaml.safe_load(DEFAULTS.read_text()) or {}
    families = [k for k in table if not str(k).startswith("_")]
    mapping, classes = _mapping(wheel), _classes(wheel)
    lines = [f"# model_type: [configuration class, its file under transformers/models/, the keys of its family_defaults",
             f"# line that are fields of the class] in transformers {version}, for the model types the wheel maps",
             "# (auto_mappings.py CONFIG_MAPPING_NAMES). Generated: python docs/family_classes_from_wheel.py <unzipped",
             "# wheel>; do not edit by hand.",
             f"_transformers: '{version}'"]
    for family in families:
        name = mapping.get(family)
        if name and name in classes:
            keys = sorted(k for k in (table[family] or {}) if not str(k).startswith("_") and k in _fields(name, classes))
            lines.append(f"{family}: [{name}, {classes[name][0]}, [{', '.join(keys)}]]")
    OUT.write_text("\n".join(lines) + "\n")
    print(f"{OUT.relative_to(ROOT)}: {len(lines) - 5} of {len(families)} model types")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
