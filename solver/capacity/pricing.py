"""Prices per card-hour (`--price HARDWARE=USD`, recommend's and sweep's one parser) and what they make of a
deployment: cost per hour = cards x price; cost per million output tokens = cost per hour / (output tokens/s x
3600) x 1e6 (the cluster is paid for whether busy or not, so every served token carries its share).

A sweep prices every row: `usd_per_hour` (the row's deployment: its `cards`; a disaggregated row's prefill and
decode pools' `ranks_used`, as recommend --serving disagg pays for them) and `usd_per_million_output_tokens` (at
the row's own output tokens/s, as written), empty on an infeasible row."""
from __future__ import annotations

import math
from typing import Any, Iterable, Mapping, Sequence

import pandas as pd

from solver.capacity.inputs import hardware_key
from solver.capacity.table import PRICE_COLUMNS
from solver.errors import InputError

COST_DIGITS = 4  # decimals of a cost written out (recommend's options, a sweep's price columns)


def parse_prices(value: str | Mapping[str, float] | Iterable[str] | None, hardware: Sequence[str]) -> dict[str, float]:
    """`H=3.5` items (or a dict) -> {canonical hardware name: price per card-hour}."""
    if value is None:
        return {}
    if isinstance(value, Mapping):
        items = [(str(k), v) for k, v in value.items()]
    else:
        parts = value.split(",") if isinstance(value, str) else [p for v in value for p in str(v).split(",")]
        items = []
        for part in parts:
            part = part.strip()
            if not part:  # "a,,b", a trailing comma or an empty --price: a price meant and not written
                raise InputError("--price", "an empty item: give HARDWARE=PRICE_PER_CARD_HOUR items, comma-separated")
            key, sep, val = part.partition("=")
            if not sep or not key.strip():
                raise InputError("--price", f"expected HARDWARE=PRICE_PER_CARD_HOUR, got {part!r}")
            items.append((key.strip(), val.strip()))
    out: dict[str, float] = {}
    for key, val in items:
        if isinstance(val, bool):  # True is not a price of 1
            raise InputError("--price", f"not a number: {key}={val}")
        try:
            price = float(val)
        except (TypeError, ValueError):
            raise InputError("--price", f"not a number: {key}={val}") from None
        if math.isinf(price):  # 1e400 reads as inf: not a price
            raise InputError("--price", f"must be a finite number, got {key}={val}")
        if not price > 0:  # nan too
            raise InputError("--price", f"must be > 0, got {key}={val}")
        name = hardware_key(key, hardware, "--price")
        if out.get(name, price) != price:  # the last one would win unread
            raise InputError("--price", f"two prices for {name}: {out[name]:g} and {price:g}; give one")
        out[name] = price
    return out


def sweep_prices(value: str | Mapping[str, float] | Iterable[str] | None,
                 hardware: Sequence[str]) -> dict[str, float] | None:
    """A sweep's prices: None where none is given; else one for every hardware the sweep runs (a row without
    its price would leave the columns half empty, and the cheapest note would compare only the priced ones)."""
    if value is None:
        return None
    prices = parse_prices(value, hardware)
    unpriced = [h for h in hardware if h not in prices]
    if unpriced:
        raise InputError("--price", f"no price for {', '.join(unpriced)}: give "
                                    f"{' '.join(f'--price {h}=USD_PER_CARD_HOUR' for h in unpriced)} (a sweep "
                                    "prices every hardware it runs, or none)")
    return prices


def costs(cards: int, price: float, tok_s: float, capacity_tok_s: float, digits: int | None = COST_DIGITS
          ) -> dict[str, float]:
    """What `cards` cards at `price` per card-hour cost per hour, and per million output tokens at the target load
    `tok_s` and at the deployment's capacity (module docstring); rounded to `digits` (None: unrounded)."""
    per_hour = cards * price
    out = {"cost_per_hour": per_hour,
           "cost_per_million_output_tokens": per_hour / (tok_s * 3600) * 1e6,
           "cost_per_million_output_tokens_at_capacity": per_hour / (capacity_tok_s * 3600) * 1e6}
    return out if digits is None else {k: round(v, digits) for k, v in out.items()}


def price_rows(rows: Iterable[dict[str, Any]], prices: Mapping[str, float], cards_key: str = "cards"
               ) -> list[dict[str, Any]]:
    """Each row with PRICE_COLUMNS: its deployment's `cards_key` cards at its hardware's price, at the row's own
    output tokens/s (the figure written, so the file checks itself); empty (None) where the row is infeasible."""
    out = []
    for r in rows:
        priced = {c: None for c in PRICE_COLUMNS}
        tok_s = r.get("output_tokens_per_s")
        if r.get("feasible") is True and tok_s is not None and not pd.isna(tok_s) and tok_s > 0:
            c = costs(int(r[cards_key]), prices[r["hardware"]], float(tok_s), float(tok_s))
            priced = {"usd_per_hour": c["cost_per_hour"],
                      "usd_per_million_output_tokens": c["cost_per_million_output_tokens"]}
        out.append({**r, **priced})
    return out


def cheapest_notes(df: pd.DataFrame, front_only: bool = True) -> list[str]:
    """Per hardware (and ISL/OSL where the sweep has several), the row with the lowest cost per million output
    tokens, of the front's rows (`front_only`; a disaggregated table has no front: its feasible plans); ties to the
    cheaper hour (fewer cards), then the table's order. Empty without the price columns."""
    if not set(PRICE_COLUMNS) <= set(df.columns):
        return []
    ok = df[df["usd_per_million_output_tokens"].notna()]
    if front_only and "on_front" in df.columns:
        ok = ok[ok["on_front"].fillna(False).astype(bool)]
    many_lengths = df[["isl", "osl"]].drop_duplicates().shape[0] > 1
    notes = []
    for hw in dict.fromkeys(df["hardware"]):
        for (i, o) in dict.fromkeys(zip(df.loc[df["hardware"] == hw, "isl"], df.loc[df["hardware"] == hw, "osl"])):
            g = ok[(ok["hardware"] == hw) & (ok["isl"] == i) & (ok["osl"] == o)]
            where = f"{hw} at {i}/{o}" if many_lengths else hw
            if g.empty:
                notes.append(f"{where}: no feasible {'front ' if front_only else ''}row to price")
                continue
            r = g.sort_values(["usd_per_million_output_tokens", "usd_per_hour"], kind="stable").iloc[0]
            if "ranks_used" in r.index:  # a disaggregated plan pays for its pools' ranks, not the whole size
                what = f"{int(r['ranks_used'])} of {int(r['cards'])} cards, {r['ratio']}"
            else:
                what = f"{int(r['cards'])} card{'s' if r['cards'] != 1 else ''}, {r['pattern']}"
            notes.append(f"{where}: cheapest per million output tokens: {what} at concurrency "
                         f"{int(r['concurrency'])} "
                         f"({r['scenario']} row): ${r['usd_per_million_output_tokens']:,.4f} per million output "
                         f"tokens, ${r['usd_per_hour']:,.2f}/hour at {r['output_tokens_per_s']:,.0f} output tokens/s")
    return notes
