"""The calibration rows' fast path, for the benchmark scripts: its one home is solver/calibrate/rows.py (the
user's `shardplan calibrate --from-csv ... --fit` runs it too); this module re-exports it with the paths of the
shipped calibration CSV and factors file."""
from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from solver.calibrate.rows import *  # noqa: E402,F401,F403
from solver.calibrate.rows import _measured, _ratio  # noqa: E402,F401
from solver.specs.fitted import fitted_factors_path  # noqa: E402

DEFAULT_CSV = REPO.parent / "shared" / "facts" / "calibration" / "measured_agg_calibration.csv"
FACTORS_YAML = fitted_factors_path()
