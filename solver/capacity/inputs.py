"""Parsing a sweep's inputs: card lists and ranges, scenario names, sequence lengths, per-hardware values.
Each bad value is an InputError naming its flag."""
from __future__ import annotations

import re
from numbers import Integral
from typing import Any, Iterable, Mapping, Sequence

from solver.errors import InputError
from solver.specs.limits import MAX_CARDS, MAX_TOKENS
from solver.specs.scenario import SCENARIO_WEIGHTS, Scenario, scenario_of

SCENARIO_KINDS = tuple(SCENARIO_WEIGHTS)  # throughput, latency, balanced
DEFAULT_SCENARIOS = ("throughput", "latency", "balanced")


def parse_cards(text: str | int | Iterable[int]) -> list[int]:
    """`8,16,32`, `8..1024` (both ends and the powers of two between: `6..32` is 6, 8, 16, 32, as the user named
    6) or a mix: `8..64,96,128`.

    Returns the sorted distinct card counts; an empty or unparseable value is an InputError."""
    if isinstance(text, bool):
        raise InputError("--cards", f"not a card count: {text!r}")
    if isinstance(text, int):
        items: list[int] = [text]
    elif isinstance(text, str):
        if not text.strip():
            raise InputError("--cards", "empty; give a list (8,16,32) or a range (8..1024: its ends and the powers of two between)")
        items = []
        for part in text.split(","):
            part = part.strip()
            if any(len(d) > 18 for d in re.findall(r"\d+", part)):
                raise InputError("--cards", f"{part[:24]}...: over the cap of {MAX_CARDS:,} cards")
            m = re.fullmatch(r"(\d+)\s*\.\.\s*(\d+)", part)
            if m:
                lo, hi = int(m.group(1)), int(m.group(2))
                if lo < 1 or hi < lo:
                    raise InputError("--cards", f"range {part!r} must be LOW..HIGH with 1 <= LOW <= HIGH")
                # the ends are sizes the user named: a range never drops them (6..32 sweeps 6 too)
                items.extend([lo, hi] + [1 << k for k in range(0, hi.bit_length() + 1) if lo < (1 << k) < hi])
            elif re.fullmatch(r"\d+", part):
                items.append(int(part))
            else:
                raise InputError("--cards", f"cannot parse {part!r}; use a list (8,16,32) or a range (8..1024)")
    else:
        try:
            items = list(text)
        except TypeError:
            raise InputError("--cards", f"not a list of card counts: {text!r}") from None
        odd = next((v for v in items if isinstance(v, bool) or not isinstance(v, Integral)), None)
        if odd is not None:  # a float is not truncated to a count
            raise InputError("--cards", f"not a card count: {odd!r} ({type(odd).__name__})")
        items = [int(v) for v in items]
        if not items:
            raise InputError("--cards", "empty list of card counts")
    bad = [v for v in items if v < 1]
    if bad:
        raise InputError("--cards", f"card counts must be >= 1, got {bad[0]}")
    big = [v for v in items if v > MAX_CARDS]
    if big:
        raise InputError("--cards", f"{big[0]} is over the cap of {MAX_CARDS:,} cards (the largest cluster any "
                                    "hardware file describes)")
    return sorted(set(items))


# the deployment sizes recommend tries where --cards is not given: the powers of two up to here, and the whole
# scale-up domains (default_cards)
DEFAULT_CARD_RANGE = "1..1024"


def default_cards(scale_up_domain: int) -> list[int]:
    """The sizes tried on a device whose scale-up domain is `scale_up_domain` ranks when --cards is not given: the
    powers of two of DEFAULT_CARD_RANGE, and where the domain is not one, its whole domains a power of two of them
    within that range (a GB200 NVL72 rack: 72, 144, 288, 576; a CloudMatrix384 SuperPoD of 768 A3 dies): the sizes
    such systems are bought and cabled in."""
    sizes = parse_cards(DEFAULT_CARD_RANGE)
    d = scale_up_domain
    if d & (d - 1):
        sizes += [d << k for k in range(max(sizes).bit_length()) if d << k <= max(sizes)]
    return sorted(set(sizes))


def parse_scenarios(value: str | Scenario | Iterable[str | Scenario] | None) -> list[str | Scenario]:
    """Scenario kinds (comma-separated or a list) or ready-made Scenario objects; unknown kinds are an InputError."""
    if value is None:
        return list(DEFAULT_SCENARIOS)
    if isinstance(value, (str, Scenario)):
        value = [value]
    if not isinstance(value, Iterable):
        raise InputError("--scenarios", f"must be kinds ({', '.join(SCENARIO_KINDS)}) or Scenarios, got {value!r}")
    out: list[str | Scenario] = []
    for item in value:
        if isinstance(item, Scenario):
            out.append(item)
            continue
        for name in str(item).split(","):
            name = name.strip().lower()
            if not name:
                continue
            if name not in SCENARIO_KINDS:
                raise InputError("--scenarios", f"unknown scenario {name!r}; known: {', '.join(SCENARIO_KINDS)}")
            if name not in out:
                out.append(name)
    if not out:
        raise InputError("--scenarios", f"empty; known: {', '.join(SCENARIO_KINDS)}")
    return out


def make_scenario(**fields: Any) -> Scenario:
    """A Scenario of a sweep or recommend, a field given as None left at the Scenario's default (max_concurrency:
    the planner's range; mtp_accept: the default rate); a field it refuses is reported under its flag
    (scenario_of)."""
    return scenario_of("--scenarios", **{k: v for k, v in fields.items() if v is not None})


def scenario_for(kind: str | Scenario, isl: int, osl: int, **fields: Any) -> Scenario:
    """The scenario of one combination: a Scenario given as itself, a kind with the lengths and `fields`."""
    return kind if isinstance(kind, Scenario) else make_scenario(kind=kind, isl=isl, osl=osl, **fields)


def parse_seq_lens(value: str | Iterable[int | tuple[int, int]] | None, osl: int) -> list[tuple[int, int]]:
    """`8192,65536` (input lengths, each with `osl` output tokens) or `8192:1024,65536:512` (ISL:OSL pairs)."""
    if value is None:
        return []
    items: list[tuple[int, int]] = []
    if not isinstance(value, (str, Iterable)):
        raise InputError("--seq-lens", f"must be ISL or ISL:OSL items (8192,65536:1024) or a list of them, "
                         f"got {value!r}")
    parts: Iterable[Any] = value.split(",") if isinstance(value, str) else value
    for part in parts:
        if isinstance(part, tuple):
            pair = part
            if any(isinstance(n, bool) or not isinstance(n, Integral) for n in pair):
                raise InputError("--seq-lens", f"lengths must be integers, got {part!r}")
        elif isinstance(part, Integral) and not isinstance(part, bool):
            pair = (int(part), osl)
        else:
            text = str(part).strip().lower()
            m = re.fullmatch(r"(\d{1,18})(k?)(?::(\d{1,18})(k?))?", text)
            if not m:
                raise InputError("--seq-lens", f"cannot parse {part!r}; use ISL or ISL:OSL, e.g. 8192,65536:1024")
            isl = int(m.group(1)) * (1024 if m.group(2) else 1)
            out_len = osl if m.group(3) is None else int(m.group(3)) * (1024 if m.group(4) else 1)
            pair = (isl, out_len)
        if len(pair) != 2 or min(pair) < 1:
            raise InputError("--seq-lens", f"lengths must be >= 1, got {part!r}")
        if max(pair) > MAX_TOKENS:
            raise InputError("--seq-lens", f"{part!r}: a length over the cap of {MAX_TOKENS:,} tokens")
        if pair not in items:
            items.append((int(pair[0]), int(pair[1])))
    if not items:
        raise InputError("--seq-lens", "empty")
    return items


def hardware_key(key: str, hardware: Sequence[str], flag: str) -> str:
    """The hardware a per-hardware value names (a catalog name in any spelling, or a hardware file's name), or an
    error under the flag that gave it."""
    from solver.specs.hardware_catalog import load_hardware

    if key in hardware:  # a name as the output labels it (a user's hardware file is not in the catalog)
        return key
    if not key:
        raise InputError(flag, f"no hardware name before '=' (give HARDWARE=VALUE, HARDWARE one of "
                               f"{', '.join(hardware)}, or the value alone for every hardware)")
    try:
        name = load_hardware(key).name
    except InputError:
        name = None
    if name not in hardware:
        raise InputError(flag, f"{key} is not one of the hardware given ({', '.join(hardware)})")
    return name  # type: ignore[return-value]


def per_hardware(value: str | Mapping[str, str] | Sequence[str] | None, flag: str,
                 hardware: Sequence[str]) -> dict[str, str | None]:
    """A dtype for every hardware: one value for all (`int8`), or per hardware (`atlas_a3=int8`, or a dict);
    a value per hardware overrides the one for all, whatever their order, and two different values for the
    same hardware (or for all) are an error, never the last one silently.

    `hardware` holds canonical names; keys are matched after loading them as hardware names."""
    if value is None:
        return {h: None for h in hardware}
    parts = [value] if isinstance(value, (str, Mapping)) else list(value)
    items: list[tuple[str | None, str]] = []
    for one in parts:
        if isinstance(one, Mapping):
            items += [(k, v) for k, v in one.items()]
            continue
        for part in one.split(","):
            part = part.strip()
            if part:
                key, sep, val = part.partition("=")
                items.append((key.strip(), val.strip()) if sep else (None, part))
    chosen: dict[str | None, str] = {}  # None: the value for every hardware
    for key, val in items:
        if not val:
            raise InputError(flag, f"empty value in {value!r}")
        name = None if key is None else hardware_key(key, hardware, flag)
        if chosen.get(name, val) != val:
            where = "every hardware" if name is None else name
            raise InputError(flag, f"two values for {where}: {chosen[name]} and {val}; give one")
        chosen[name] = val
    if None in chosen and hardware and all(h in chosen for h in hardware):  # the value for all would be read by none
        own = ", ".join(f"{h}={chosen[h]}" for h in hardware)
        raise InputError(flag, f"{chosen[None]} (for every hardware) is overridden for each hardware given ({own}); "
                               "drop it or one of those")
    return {h: chosen.get(h, chosen.get(None)) for h in hardware}
