"""The memory edge: the most requests a configuration holds, between the last power of two some configuration
holds and the first none does (docs/planner.md, "How it decides"). An engine fills its KV cache to there, and a
throughput plan stopping at the power of two below would leave up to half of it unused. The configuration is each
stage count's least-memory choices (a configuration's choices share its stage count), priced as the planner prices
any (Tables.memory_of); the planner proves the optimum there as at every concurrency. Under an engine's batch rule
(FrameworkProfile.batch_rules) the edge is a count some configuration both holds and may run.
"""
from __future__ import annotations

from typing import Callable

from solver.plan.tables import Tables
from solver.specs.framework import FrameworkProfile
from solver.specs.profile_rules import Rule
from solver.specs.hardware import Hardware
from solver.specs.model import ModelSpec
from solver.specs.rule_env import device_facts, model_env
from solver.specs.scenario import Scenario

Rows = dict[tuple[str, int], float]


def memory_edge(tables: Tables, failing: int, rows_at: Callable[[int], Rows], pps: tuple[int, ...],
                fw: FrameworkProfile, model: ModelSpec, hw: Hardware, scenario: Scenario) -> int | None:
    """The edge in (tables.batches[-1], failing), or None where no count there is held (and run). `rows_at(c)`:
    the memory rows at c, put in the tables for Tables.memory_of to read."""
    choices, limit = tables.choices, tables.memory_limit_bytes
    if not choices["attn"]:
        return None  # no attention layout the engine runs: no configuration holds anything

    def frugal(c: int) -> list[dict[str, int]]:
        """Each stage count's least-memory choices at c (a stage count some group has no choice at aside)."""
        rows = rows_at(c)
        return [picks for p in pps if (picks := least_memory(choices, rows, p)) is not None]

    def holds(c: int) -> bool:
        return any(tables.fits(c, picks) for picks in frugal(c))

    # memory grows about linearly in the sequences held: the line through the last concurrency held and the
    # first not, per configuration, guesses the edge; two checks confirm it, else the bisection runs from there
    first = tables.batches[-1]
    lo, hi = first, failing
    guess = lo
    for picks in frugal(hi):
        m_lo, m_hi = tables.memory_of(lo, picks), tables.memory_of(hi, picks)
        if m_lo <= limit < m_hi:
            guess = max(guess, lo + int((limit - m_lo) / (m_hi - m_lo) * (hi - lo)))
    if guess > lo:
        lo, hi = (guess, hi) if holds(guess) else (lo, guess)
    if lo + 1 < hi and not holds(lo + 1):
        hi = lo + 1
    edge = bisect_edge(lo, hi, holds)
    edge = edge if edge is not None else (lo if lo > first else None)
    if edge is not None and fw.batch_rules:
        edge = _runnable_edge(edge, first, fw.batch_rules, choices, rows_at, tables, model, hw, tables.world,
                              scenario)
    return edge


def _runnable_edge(edge: int, fitting: int, checks: list[Rule], choices: dict[str, list[tuple[int, ...]]],
                   rows_at: Callable[[int], Rows], tables: Tables,
                   model: ModelSpec, hw: Hardware, world: int, scenario: Scenario) -> int | None:
    """The most sequences in (fitting, edge] that a configuration both holds and may run under the engine's
    batch rules (cann-recipes: the batch a multiple of the attention DP size): memory's edge alone can be a
    count no layout the engine runs divides (1,996 on 48 Atlas A3 dies, where DP48 runs 1,968). Each attention
    choice is tried with its stage count's least-memory other groups; None where no count in the range is."""
    def runs(c: int, picks: dict[str, int]) -> bool:
        env = model_env(tables.config(picks), model, **device_facts(hw), world=world, batch=c, mtp=scenario.mtp)
        return all(r.holds(env) for r in checks)

    attn = list(enumerate(choices["attn"]))
    for c in range(edge, fitting, -1):
        # the rules first, with the attention knobs alone (cheap); the memory only where some layout runs c
        ok = [(i, ch) for i, ch in attn if runs(c, {"attn": i})]
        if not ok:
            continue
        rows = rows_at(c)
        for i, ch in ok:
            picks = least_memory(choices, rows, ch[-1], attn=i)
            if picks is not None and runs(c, picks) and tables.fits(c, picks):
                return c
    return None


def least_memory(choices: dict[str, list[tuple[int, ...]]], rows: Rows, stages: int,
                 attn: int | None = None) -> dict[str, int] | None:
    """Every group's least-memory choice at this stage count (the last entry of every choice), by the memory rows
    at one concurrency; `attn` fixes the attention choice. None where a group has no choice at it, one with no
    choice at all included (a module the model has that no layout runs: no configuration exists)."""
    picks = {} if attn is None else {"attn": attn}
    for g, opts in choices.items():
        if g in picks:
            continue
        at = [j for j, o in enumerate(opts) if o[-1] == stages]
        if not at:
            return None
        picks[g] = min(at, key=lambda j: rows[(g, j)])
    return picks


def bisect_edge(fitting: int, failing: int, holds: Callable[[int], bool]) -> int | None:
    """The most sequences in (fitting, failing) that `holds` (monotone: what holds n holds fewer), by
    bisection; None where none does."""
    lo, hi = fitting, failing
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if holds(mid) else (lo, mid)
    return lo if lo > fitting else None
