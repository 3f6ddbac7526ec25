"""The memory edge of each configuration kind: the most requests some configuration of the kind, one the engine
runs, holds (docs/planner.md, "The memory edge").

The powers of two stop where the tables' least memory no longer fits, but the configurations a throughput plan
wants (attention DP, EP) hold fewer requests than the least-memory ones (attention TP): they would stay at the power
of two below their own edge. A kind is a stage count and a number of attention replicas (the layouts' serving
shape: each replica holds its own sequences, so memory grows alike within a kind). Each kind's edge is found
between the last power it holds and the first it does not, by a test that is exact for the kind: some
configuration of one of its layouts keeps the framework's rules (plan.rule_tables, the tables the search
constrains with) and fits under the planner's memory constraint (Tables.fits, the memory model's figure). The
edges are a function of the tables alone, so the CP-SAT search and the exhaustive enumerator see the same
concurrencies.
"""
from __future__ import annotations

from typing import Callable

from solver.plan.rule_tables import rule_tables, static_rule_tables
from solver.plan.tables import Tables
from solver.plan.view_model import holding_config
from solver.specs.framework import FrameworkProfile
from solver.specs.hardware import Hardware
from solver.specs.model import ModelSpec
from solver.specs.scenario import Scenario

Kind = tuple[int, int]  # (stage count, attention replicas)

# a kind's edge joins the planned concurrencies only where it is at least this far above the last power the kind
# holds: each concurrency costs the search a pass over the layouts, and an edge a few percent above the power
# gains a throughput plan about as little (benchmarks/README.md, "Stop 36: the memory edge per configuration kind")
MIN_EDGE_GAIN = 0.10


class KindEdges:
    """The exact holding test of a configuration kind at a concurrency, and the kinds' edges from it.
    `rows_at(c)`: puts the tables' memory rows at c in place (build_tables' memory_at) before a test reads them."""

    def __init__(self, t: Tables, model: ModelSpec, hw: Hardware, fw: FrameworkProfile, scenario: Scenario,
                 rows_at: Callable[[int], object]):
        self.t, self.model, self.hw, self.fw, self.scenario = t, model, hw, fw, scenario
        self.rows_at = rows_at
        self._placed = set(t.batches)  # the concurrencies whose memory rows the tables hold
        self.static = static_rule_tables(t, model, hw, fw, scenario)
        self._rules: dict[tuple[int, bool], list] = {}
        self._holds: dict[tuple, dict[str, int] | None] = {}
        self.solves = 0  # CP-SAT feasibility models solved (the cheap tests decide the rest)
        self.kinds: dict[Kind, list[tuple[int, ...]]] = {}
        for key in t.layouts():
            self.kinds.setdefault(self.kind_of(key), []).append(key)
        self._batch_rules = any(r.severity == "error" and "batch" in r.names for r in fw.rules)

    def _rows(self, c: int) -> None:
        if c not in self._placed:
            self.rows_at(c)
            self._placed.add(c)

    def kind_of(self, key: tuple[int, ...]) -> Kind:
        return key[4], self.t._layout_pc(key).attn_replicas

    def rules(self, c: int, with_batch: bool) -> list:
        """The rule tables at c: every rule, or (not `with_batch`) those that do not read the batch, which are
        the same at every concurrency (the memory edge is monotone under them)."""
        k = (c if with_batch and self._batch_rules else 0, with_batch and self._batch_rules)
        if k not in self._rules:
            self._rules[k] = [(r, ks, a) for r, ks, a in
                              (rule_tables(self.t, self.model, self.hw, self.fw, self.scenario, c, self.static)
                               if k[1] else self.static)]
        return self._rules[k]

    def holding(self, c: int, key: tuple[int, ...], with_batch: bool = False) -> dict[str, int] | None:
        """A configuration of layout `key` that the rules admit and that holds c sequences, or None: first the
        memory model's floor (every group's least entry on each stage: nothing fits below it), then the
        least-memory choices (a witness when the rules admit them and they fit), else the exact CP-SAT model."""
        memo = (c, key, with_batch and self._batch_rules)
        if memo in self._holds:
            return self._holds[memo]
        t = self.t
        self._rows(c)
        mine = self._mine(key)
        out = None
        if all(mine.values()) and self._floor_fits(c, mine):
            rules = self.rules(c, with_batch)
            frugal = {g: min(js, key=lambda j: t.memory[(c, g, j)]) for g, js in mine.items()}
            if self._admitted(frugal, rules) and t.fits(c, frugal):
                out = frugal
            else:
                self.solves += 1
                out = holding_config(t, c, key, rules)
                if out is not None and not t.fits(c, out):
                    out = None  # the integer model's rounding admitted what the bytes do not: not held
        self._holds[memo] = out
        return out

    def _floor_fits(self, c: int, mine: dict[str, list[int]]) -> bool:
        """Whether the unowned weights plus each group's least entry fit: the tables' entries are a floor of any
        configuration's memory (under PP the first stage's, a lower bound of the largest stage's:
        memory_rows.group_memory; the transient is at least the attention term the attention entry holds)."""
        t = self.t
        low = sum(min(t.memory[(c, g, j)] for j in js) for g, js in mine.items())
        return t.const_memory_bytes + low <= t.memory_limit_bytes

    def _admitted(self, picks: dict[str, int], rules: list) -> bool:
        cfg = self.t.config(picks)
        return all(tuple(cfg[k] for k in knobs) in {tuple(a) for a in allowed} for _, knobs, allowed in rules)

    def floor_holds(self, c: int, kind: Kind) -> bool:
        """Whether the tables' floor (_floor_fits) fits c for some layout of the kind: without it, none holds c."""
        self._rows(c)
        return any(self._floor_fits(c, self._mine(key)) for key in self.kinds[kind])

    def _mine(self, key: tuple[int, ...]) -> dict[str, list[int]]:
        """Each group's choices beside layout `key` (its stage count's)."""
        t = self.t
        return {g: (t.layouts()[key] if g == "attn" else [j for j, ch in enumerate(opts) if ch[-1] == key[4]])
                for g, opts in t.choices.items()}

    def holds(self, c: int, kind: Kind, with_batch: bool = False) -> dict[str, int] | None:
        """A configuration of the kind that the rules admit and that holds c sequences, or None."""
        for key in self.kinds[kind]:
            w = self.holding(c, key, with_batch)
            if w is not None:
                return w
        return None

    def edge(self, kind: Kind, lo: int, hi: int, witness: dict[str, int]) -> int | None:
        """The kind's edge in (lo, hi): it holds lo (`witness` a configuration that does) and not hi. Memory grows
        about linearly in the sequences held: the line through the witness's figures at lo and hi guesses the
        edge, two tests confirm it, a bisection runs where they disagree. Under a batch rule (one that reads the
        batch) the edge is the most sequences in (lo, edge] that a configuration both holds and may run. None
        where nothing above lo qualifies."""
        t, limit = self.t, self.t.memory_limit_bytes
        self._rows(lo), self._rows(hi)
        m_lo, m_hi = t.memory_of(lo, witness), t.memory_of(hi, witness)
        a, b = lo, hi
        if m_lo <= limit < m_hi:
            guess = lo + int((limit - m_lo) / (m_hi - m_lo) * (hi - lo))
            if lo < guess < hi:
                a, b = (guess, hi) if self.holds(guess, kind) is not None else (lo, guess)
        if a + 1 < b and self.holds(a + 1, kind) is None:
            b = a + 1
        a = memory_edge(a, b, lambda c: self.holds(c, kind) is not None) or a
        if not self._batch_rules:
            return a if a > lo else None
        return next((c for c in range(a, lo, -1) if self.holds(c, kind, with_batch=True)), None)


def memory_edge(fitting: int, failing: int, holds: Callable[[int], bool]) -> int | None:
    """The most sequences in (fitting, failing) that `holds` (monotone: what holds n holds fewer), by
    bisection; None where none does."""
    lo, hi = fitting, failing
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if holds(mid) else (lo, mid)
    return lo if lo > fitting else None


def kind_edges(t: Tables, model: ModelSpec, hw: Hardware, fw: FrameworkProfile, scenario: Scenario,
               failing: int, rows_at: Callable[[int], object]) -> list[int]:
    """The edges of the configuration kinds between the last power in t.batches and `failing`, the first power
    that no configuration holds: for each kind that holds the last power, the most sequences one of its
    configurations the engine runs holds (KindEdges.edge), thinned (`thinned`). A kind that memory stops at an
    earlier power keeps that power: searching below every power costs each plan a probe per kind and a pass of
    the search per edge, where the edge a throughput plan runs at is the last power's (benchmarks/README.md,
    "Stop 36: the memory edge per configuration kind"). Sorted, without the powers."""
    probe = KindEdges(t, model, hw, fw, scenario, rows_at)
    p = t.batches[-1]
    if failing <= p * (1 + MIN_EDGE_GAIN):
        return []
    found: set[int] = set()
    for kind in sorted(probe.kinds):
        witness = probe.holds(p, kind)
        if witness is None:
            continue
        e = probe.edge(kind, p, failing, witness)
        if e is not None:
            found.add(e)
    return thinned(found, t.batches)


def thinned(edges: set[int], powers: tuple[int, ...]) -> list[int]:
    """The edges planned: the largest (the deployment's own edge), and each other only where no concurrency
    planned lies within MIN_EDGE_GAIN below it (the fewest concurrencies that leave every kind one within that
    of its edge: taken in ascending order, an edge not yet served is served by itself, which serves every edge
    up to MIN_EDGE_GAIN above it too). Sorted."""
    if not edges:
        return []
    kept = {max(edges)}
    planned = set(powers) | kept
    for e in sorted(edges):
        if not any(e / (1 + MIN_EDGE_GAIN) <= s <= e for s in planned):
            kept.add(e)
            planned.add(e)
    return sorted(kept - set(powers))
