"""The fitted-factor files (solver/frameworks/fitted/*.yaml, written by the fit scripts in benchmarks/) and how
one (framework, hardware) fit applies to a profile's settings."""
from __future__ import annotations

import hashlib
import json
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Iterator, Mapping, Sequence

from solver.catalog import frameworks_dir

Factors = dict[str, dict[str, dict[str, float]]]  # framework -> hardware (or `_pooled`) -> {factor: value}


def fitted_dir() -> Path:
    return frameworks_dir() / "fitted"


def fitted_factors_path() -> Path:
    """Where benchmarks/fit_efficiency.py writes the fitted factors."""
    return fitted_dir() / "factors.yaml"


def fitted_stamp(path: Path | None = None) -> int:
    """Changes when a fitted file does (0 when there is none), so caches keyed on it never go stale; without
    `path`, when the shipped file does or the user's factors (`--factors`) are given, changed or dropped."""
    if path is None:
        shipped = _mtime(fitted_factors_path())
        return shipped if _active is None else hash((shipped, _active.stamp))
    return _mtime(path)


def _mtime(path: Path) -> int:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return 0


# The user's own factors (`--factors FILE`, the API's `factors=`: solver/calibrate/factors_file.read_user_factors
# validates the file; `shardplan calibrate --from-csv ROWS.csv --fit FILE` writes one). Its (framework, hardware)
# pairs replace the shipped ones; every other pair keeps the shipped fit. Held in this process while the command
# (or API call) that was given it runs, and handed to a sweep's workers as part of each task (their content, not a
# path: a Dask or Ray worker on another host has no such file), never read from the environment.
@dataclass(frozen=True)
class UserFactors:
    """A user's factors file as read: where it came from (for notes) and its pairs, as canonical JSON so that the
    value is hashable, pickles to a worker and compares by content."""

    source: str
    pairs_json: str

    @classmethod
    def of(cls, source: str, pairs: Factors) -> "UserFactors":
        return cls(source, json.dumps(pairs, sort_keys=True))

    @property
    def pairs(self) -> Factors:
        return json.loads(self.pairs_json)

    @property
    def stamp(self) -> int:
        """Changes with the content (the caches' key: a plan priced with other factors is not served)."""
        return int(hashlib.sha256(self.pairs_json.encode()).hexdigest()[:15], 16)


_active: UserFactors | None = None
# (framework, hardware) -> whether the user's factors held it, for every pair a figure looked up this process
_user_lookups: dict[tuple[str, str], bool] = {}


def active_user_factors() -> UserFactors | None:
    """The user's factors of the command or call running in this process, if it was given some."""
    return _active


@contextmanager
def using_user_factors(factors: UserFactors | None) -> Iterator[None]:
    """Price with `factors` (None: the shipped fit alone) until the block ends, then restore what was active."""
    global _active
    before, _active = _active, factors
    try:
        yield
    finally:
        _active = before


def set_user_factors(factors: UserFactors | None) -> UserFactors | None:
    """Price with `factors` from now on (a command's option, undone when the command closes); returns what was
    active before."""
    global _active
    before, _active = _active, factors
    return before


def fit_keys(name: str, fitted_as: str | None) -> tuple[str, ...]:
    """The names a fit of a profile or a device is looked up by, in order: its own, then the one whose fitted
    factors it carries (`fitted_as`: h800, then h100_sxm). The one rule for the shipped fit and a user's file: a
    pair fitted to the variant itself (a user's rows on it) prices it, else the pair of what it is fitted as."""
    return (name,) if fitted_as in (None, name) else (name, fitted_as)


def find_pair(fitted: Factors, frameworks: Sequence[str], devices: Sequence[str]
              ) -> tuple[str | None, str | None, dict | None]:
    """(the framework key that has pairs, the device key of its pair, the pair) over fit_keys' orders: the first
    framework the fit has pairs of, and in it the first device it has a pair of; Nones where it has none."""
    fw = next((f for f in frameworks if fitted.get(f)), None)
    if fw is None:
        return None, None, None
    hw = next((d for d in devices if fitted[fw].get(d)), None)
    return fw, hw, fitted[fw][hw] if hw is not None else None


def user_pair(frameworks: Sequence[str], devices: Sequence[str]) -> dict[str, float] | None:
    """The user's fit of one (framework, hardware) pair, looked up by fit_keys' names as the shipped fit is
    (absolute, as the shipped file's pairs: multipliers on the profile's settings, *_s seconds), or None when none
    is active or it lacks the pair. The lookup is recorded under the pair's keys, or the own names where none."""
    if _active is None:
        return None
    fw, hw, pair = find_pair(_user_pairs(_active.pairs_json), frameworks, devices)
    _user_lookups[(fw, hw) if pair else (frameworks[0], devices[0])] = pair is not None
    return {k: float(v) for k, v in pair.items()} if pair else None


@lru_cache(maxsize=4)
def _user_pairs(pairs_json: str) -> Factors:
    return json.loads(pairs_json)


def user_lookups() -> dict[tuple[str, str], bool]:
    """Every (framework, hardware) pair looked up in the user's file so far, and whether it held it."""
    return dict(_user_lookups)


def clear_user_lookups() -> None:
    _user_lookups.clear()


def _fitted_file(path: Path) -> dict:
    """A fitted file's contents; empty when no fit has been written. Read once per version of the file (the fit
    scripts rewrite it)."""
    return _read_at(str(path), fitted_stamp(path)) if path.is_file() else {}


def read_factors(path: Path) -> Factors:
    """A fitted file's `factors` mapping; empty when no fit has been written."""
    return _fitted_file(path).get("factors", {})


def fitted_factors(path: Path | None = None) -> Factors:
    """Fitted efficiency factors per framework and hardware (fitted/factors.yaml)."""
    return read_factors(path or fitted_factors_path())


# What every framework and vendor carries from the pooled fit when it has no fit of its own: the routed
# experts' grouped GEMM reaches a fraction of the dense GEMM's FLOP/s at the tens to thousands of rows per expert
# that serving gives it (small-M tiles, per-expert launches: a property of grouped GEMMs, not of one engine).
# Left at 1 the generic profile and the unfitted vendors priced MoE compute as a large dense GEMM, about 4x
# the fitted engines' rate on the same device; carried, the Ascend results never fitted on move closer
# (benchmarks/README.md, "Stop 28: the grouped-GEMM fraction carried"). The weight-only GEMM's fraction likewise
# (a dequantizing kernel's, the routed experts' included, which then run without grouped_gemm): left at 1 they
# would run at the dense 16-bit GEMM's rate.
CARRIED = ("grouped_gemm", "dequant_gemm")


def fitted_global(vendor: str, path: Path | None = None, *, framework: str = "") -> dict[str, float]:
    """The factors fitted once over every framework and hardware of a vendor (fitted/factors.yaml's `global`
    block, per vendor of the rows fitted: grouped_gemm, allreduce_latency_s are properties of the vendor's kernel
    libraries), with `framework`'s own per-engine factors on that vendor (the `engines` block: seq_layer_s, the
    engine's decode kernels): what a (framework, hardware) pair without its own fit still carries, as the
    fitted pairs do. A vendor the fit saw no row of carries the CARRIED factors of the pooled fit (each vendor's
    block holds the fit over every row); empty for a file without the block."""
    data = _fitted_file(path or fitted_factors_path())
    blocks = data.get("global") or {}
    block = blocks.get(vendor) or {}
    if not block:
        pooled = blocks[min(blocks)] if blocks else {}
        return {k: float(pooled[k]) for k in CARRIED if k in pooled}
    engine = ((data.get("engines") or {}).get(framework) or {}).get(vendor) or {}
    return {k: float(v) for k, v in {**block, **engine}.items()}


def calibrated_vendors(path: Path | None = None) -> list[str]:
    """The vendors whose devices the calibration rows measured (fitted/factors.yaml's `global` block), sorted."""
    return sorted(_fitted_file(path or fitted_factors_path()).get("global") or {})


def calibrated_devices(path: Path | None = None) -> set[str]:
    """The devices (hardware names) some framework has its own fit on (fitted/factors.yaml's `factors` block)."""
    return {hw for pairs in fitted_factors(path).values() for hw in pairs if not hw.startswith("_")}


def pair_factors(fitted: Factors, shared: Mapping[str, float], framework: str | Sequence[str],
                 hardware: str | Sequence[str]) -> dict[str, float]:
    """One (framework, hardware) pair's fit (each a name or fit_keys' names, looked up by find_pair), else, for a
    framework the fit has rows of, the global factors every pair shares (`shared`); a framework the fit never saw
    (the generic profile, an engine without calibration rows) keeps its profile but for the CARRIED factors."""
    fw, _, pair = find_pair(fitted, [framework] if isinstance(framework, str) else framework,
                            [hardware] if isinstance(hardware, str) else hardware)
    if fw is None:
        return {k: shared[k] for k in CARRIED if k in shared}
    return dict(pair or shared)


def apply_fitted(base: Mapping[str, float], fitted: Mapping[str, float]) -> dict[str, float]:
    """A profile's settings with one (framework, hardware) fit applied: keys ending in _s are absolute seconds
    and replace the base; the others are multipliers on it."""
    out = dict(base)
    for key, value in fitted.items():
        out[key] = float(value) if key.endswith("_s") else out.get(key, 1.0) * float(value)
    return out


@lru_cache(maxsize=4)
def _read_at(path: str, stamp: int) -> dict:
    from solver.specs.validation import load_yaml

    data = load_yaml(Path(path)) or {}
    return data if isinstance(data, dict) else {}
