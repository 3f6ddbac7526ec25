"""Stop 47's review: one test per rule the review found broken in the stop's merged work and mended."""
from __future__ import annotations

from pathlib import Path

from tests.test_byo47 import _csv_notes


def test_a_measured_time_of_zero_is_not_named_as_seconds_in_an_ms_column(tmp_path: Path) -> None:
    # a TPOT of 0 ms (a row with no decode step) was said to be "below 1/100 of the prediction ... seconds written
    # in a milliseconds column?": 0 is the same in any unit
    assert _csv_notes(tmp_path, "350,0") == []
