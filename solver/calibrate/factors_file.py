"""A factors file given to `--factors FILE` (what `shardplan calibrate --from-csv ROWS.csv --fit FILE` writes, or a
refit of the shipped solver/frameworks/fitted/factors.yaml): validated once at the boundary, one line naming the
field of the first problem."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from pydantic import BaseModel, ConfigDict, Field, create_model

from solver.calibrate.rows import BOUNDS, FRAMEWORK_PARAMS, GLOBAL_PARAMS, PARAMS
from solver.errors import InputError
from solver.specs.fitted import Factors, UserFactors

# every factor a pair may carry: what the fit sets (rows.PARAMS) and the shared ones each pair carries
PAIR_KEYS = (*PARAMS, *FRAMEWORK_PARAMS, *GLOBAL_PARAMS)

# one (framework, hardware) pair: each factor optional, within the fit's bounds (rows.BOUNDS: physically plausible
# ranges; a value outside one is a hand edit the fit could not have written); strict as every spec file is
# (specs/hardware.py): `gemm: true` or `gemm: "0.9"` is refused, not read as 1.0 / 0.9
PairFactors = create_model(  # type: ignore[call-overload]
    "PairFactors", __config__=ConfigDict(extra="forbid", strict=True),
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
    from solver.specs.hardware_catalog import catalog_spelling

    for fw, pairs in model.factors.items():
        for hw, pair in pairs.items():  # an empty pair would be named "priced" while the shipped fit priced it
            if not pair.model_dump(exclude_none=True):
                raise InputError(f"{flag} {path}: factors.{fw}.{hw}", "sets no factor")
            # a catalog device spelt otherwise is looked up by no device (pairs are keyed by the exact name); a
            # name the catalog does not know is kept: a device file of your own is keyed by its own name
            spelt = catalog_spelling(hw)
            if spelt is not None and spelt != hw:
                raise InputError(f"{flag} {path}: factors.{fw}.{hw}", f"the catalog device is spelt {spelt}; a pair "
                                                                      "is looked up by the device's exact name")
        try:
            load_framework(fw)
        except InputError as exc:
            raise InputError(f"{flag} {path}: factors.{fw}", exc.problem) from None
    return {fw: {hw: pair.model_dump(exclude_none=True) for hw, pair in pairs.items()}
            for fw, pairs in model.factors.items()}


def read_user_factors(path: str, flag: str = "--factors") -> UserFactors:
    """The file, validated (load_factors_file), as the value the fit lookup prices with (specs.fitted.UserFactors:
    its content, so that a sweep's workers on other hosts need no copy of the file)."""
    return UserFactors.of(str(path), load_factors_file(str(path), flag))


def factors_notes(path: str, pairs: Factors, looked: dict[tuple[str, str], bool], flag: str = "--factors") -> list[str]:
    """Which pairs `path` priced and which the shipped fit did (the pairs the file lacks), of those a figure looked
    up (specs.fitted.user_lookups)."""
    held = sorted(f"{fw} x {hw}" for (fw, hw), hit in looked.items() if hit)
    lacked = sorted(f"{fw} x {hw}" for (fw, hw), hit in looked.items() if not hit)
    if not looked:  # nothing priced in this process (a sweep's workers did, or the command failed first)
        listed = sorted(f"{fw} x {hw}" for fw, hws in pairs.items() for hw in hws)
        return [f"{flag} {path} fits {', '.join(listed)}; any other (framework, hardware) pair keeps the "
                "shipped factors"]
    out = []
    if held:
        out.append(f"{flag} {path} priced {', '.join(held)}")
    if lacked:
        out.append(f"{flag} {path} has no fit of {', '.join(lacked)}: the shipped factors priced "
                   + ("it" if len(lacked) == 1 else "them"))
    return out
