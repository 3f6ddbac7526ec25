"""Stop 51: remedies and capacity answers left open (recommend's more cards and cluster-cap target, disaggregated
fewer workers, the SLA diagnosis), one test per rule."""
from __future__ import annotations

import re

from solver.capacity.recommend import cluster_cap_note, copies_needed
from solver.specs.limits import MAX_CARDS


def test_the_cluster_caps_target_is_one_its_copies_carry_within_the_cap() -> None:
    """8,192 copies of 8 cards at 6.04 tok/s carry 49,479.68 tok/s: the target quoted is 49,479 (rounded to the
    nearest, 49,480 needs 8,193 copies, 65,544 cards, past the cap: the rerun exits 1)."""
    note = cluster_cap_note(6.04 * 8192, 8192, 8, 6.04, 50000.0)
    target = int(re.search(r"a target up to ([\d,]+)", note).group(1).replace(",", ""))
    assert target == 49479, note
    assert copies_needed(6.04, target) * 8 <= MAX_CARDS
