"""The worker counts a user fixes for a disaggregated plan (the P and D of xPyD): the one rule the command line's
--prefill-workers / --decode-workers, the Python API's prefill_workers / decode_workers and plan_disagg's `fixed`
all read. A count is a whole number of workers, at most the largest cluster (specs.limits.MAX_CARDS: a worker
holds a card at least), and is given only with disaggregated serving (an aggregated server has no pools)."""
from __future__ import annotations

from numbers import Integral

from solver.errors import InputError
from solver.specs import limits

FLAGS = ("--prefill-workers", "--decode-workers")


def worker_count(flag: str, n: object) -> int | None:
    """`n` as a pool's worker count (None: the plan picks), or refused under `flag` in one line."""
    if n is None:
        return None
    if isinstance(n, bool) or not isinstance(n, Integral) or not 1 <= n <= limits.MAX_CARDS:
        raise InputError(flag, f"a pool's worker count is a whole number in [1, {limits.MAX_CARDS:,}], got {n!r}")
    return int(n)


def pool_workers(serving: str, prefill: object, decode: object) -> tuple[int | None, int | None]:
    """The (prefill, decode) worker counts given (None: the plan picks), each checked, refused in one line without
    serving disagg."""
    counts = tuple(worker_count(flag, n) for flag, n in zip(FLAGS, (prefill, decode)))
    for flag, given in zip(FLAGS, counts):
        if given is not None and serving != "disagg":
            raise InputError(flag, "fixes a pool's worker count: only with --serving disagg")
    return counts[0], counts[1]
