"""A factors file given to `--factors FILE` (what `shardplan calibrate --from-csv ROWS.csv --fit FILE` writes, or a
refit of the shipped solver/frameworks/fitted/factors.yaml): validated once at the boundary, one line naming the
field of the first problem."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from pydantic import BaseModel, ConfigDict, Field, create_model

from solver.calibrate.rows import BOUNDS, FRAMEWORK_PARAMS, GLOBAL_PARAMS, PARAMS
from solver.errors import InputError

# every factor a pair may carry: what the fit sets (rows.PARAMS) and the shared ones each pair carries
PAIR_KEYS = (*PARAMS, *FRAMEWORK_PARAMS, *GLOBAL_PARAMS)

# one (framework, hardware) pair: each factor optional, within the fit's bounds (rows.BOUNDS: physically plausible
# ranges; a value outside one is a hand edit the fit could not have written)
PairFactors = create_model(  # type: ignore[call-overload]
    "PairFactors", __config__=ConfigDict(extra="forbid", strict=False),
    **{k: (Optional[float], Field(None, ge=BOUNDS[k][0], le=BOUNDS[k][1], allow_inf_nan=False)) for k in PAIR_KEYS},
)


class FactorsFile(BaseModel):
    """{factors: {framework: {hardware: {factor: value}}}}; the shipped file's `global` and `engines` blocks are
    accepted (each of its pairs already carries their values) and not read."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    factors: dict[str, dict[str, PairFactors]]  # type: ignore[valid-type]
    global_: Optional[dict[str, dict[str, float]]] = Field(None, alias="global")
    engines: Optional[dict[str, dict[str, dict[str, float]]]] = None


def load_factors_file(path: str, flag: str = "--factors") -> dict[str, dict[str, dict[str, float]]]:
    """The file's pairs, {framework: {hardware: {factor: value}}}, the unset factors left out. InputError naming
    `flag` and the field for a file that is missing, not YAML, of another shape, out of bounds or of a framework
    profile that does not exist."""
    from solver.specs.framework import load_framework
    from solver.specs.validation import load_yaml, validate_model

    p = Path(path)
    if not p.is_file():
        raise InputError(flag, f"{path}: a folder, not a factors file" if p.is_dir() else f"file not found: {path}")
    data: Any = load_yaml(p)
    model = validate_model(FactorsFile, data, f"{flag} {path}")
    if not any(model.factors.values()):
        raise InputError(f"{flag} {path}: factors", "holds no (framework, hardware) pair")
    for fw in model.factors:
        try:
            load_framework(fw)
        except InputError as exc:
            raise InputError(f"{flag} {path}: factors.{fw}", exc.problem) from None
    return {fw: {hw: {k: v for k, v in pair.model_dump().items() if v is not None} for hw, pair in pairs.items()}
            for fw, pairs in model.factors.items()}
