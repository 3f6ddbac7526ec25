"""Typed access to config fields: one-line errors naming the field, and numeric hygiene.

Size-bearing fields must be finite integers in a sane range: a config that says 1e300 layers, NaN heads or
Infinity experts is refused with one line, never counted. Fields that size nothing (time_step_limit may hold
Infinity in Nemotron-3-Super) are never read here.
"""
from __future__ import annotations

import math
from typing import Any

from solver.errors import InputError

MAX_SIZE = 2**31 - 1  # any width, count or vocabulary: beyond int32 no shipped kernel indexes it
MAX_LAYERS = 10_000


class ReadRecorder(dict):
    """A config dict that records which keys the parser looked up (get, [], in), so that what it never read can
    be named (config/unread.py): nothing the user gave is dropped without a word."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.looked_up: set[str] = set()
        # keys lifted out of a nested block (DBRX / MPT's attn_config, ffn_config) -> that block's "name.", so that
        # errors and notes name the field where the user wrote it
        self.nested: dict[str, str] = {}
        # keys the config leaves out, taken at the family class's default -> where (default_notes.default_sources),
        # so that a refusal of such a value says the user never wrote it
        self.defaults_from: dict[str, str] = {}

    def get(self, key: Any, default: Any = None) -> Any:
        self.looked_up.add(key)
        return super().get(key, default)

    def __getitem__(self, key: Any) -> Any:
        self.looked_up.add(key)
        return super().__getitem__(key)

    def __contains__(self, key: object) -> bool:
        self.looked_up.add(key)  # type: ignore[arg-type]
        return super().__contains__(key)

    def unread(self) -> list[str]:
        """The keys the parser never looked up, in the config's order."""
        return [k for k in self.keys() if k not in self.looked_up]


class Fields:
    def __init__(self, cfg: dict[str, Any], origin: str, prefix: str = ""):
        self.cfg = cfg
        self.origin = origin
        self.prefix = prefix  # "text_config." for nested configs: errors name the field where the user wrote it

    def path(self, field: str) -> str:
        """The field as the config writes it: under the wrapper's text_config and a nested block it was lifted from."""
        return f"{self.prefix}{getattr(self.cfg, 'nested', {}).get(field, '')}{field}"

    def name(self, field: str) -> str:
        return f"{self.origin}: {self.path(field)}"

    def err(self, field: str, problem: str) -> InputError:
        where = getattr(self.cfg, "defaults_from", {}).get(field)
        if where and "default" not in problem:  # a value the user never wrote: say whose it is
            problem = f"{problem}; absent from config.json, read at {where}"
        return InputError(self.name(field), problem)

    def has(self, *names: str) -> bool:
        return any(self.cfg.get(n) is not None for n in names)

    def first(self, *names: str) -> str | None:
        return next((n for n in names if self.cfg.get(n) is not None), None)

    def check_int(self, field: str, value: Any, minimum: int = 1, maximum: int = MAX_SIZE) -> int:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.err(field, f"must be an integer, got {value!r}")
        if isinstance(value, float) and (math.isnan(value) or math.isinf(value) or value != int(value)):
            raise self.err(field, f"must be a finite integer, got {value!r}")
        if value < minimum:
            raise self.err(field, f"must be >= {minimum}, got {value}")
        if value > maximum:
            raise self.err(field, f"must be <= {maximum}, got {value}")
        return int(value)

    def int(self, *names: str, default: int | None = None, minimum: int = 1, maximum: int = MAX_SIZE,
            missing: str | None = None) -> int:
        """The first of `names` given; absent, `default`, else an error naming `missing` (the usual spelling, where
        it is not the first name tried) or the first name."""
        name = self.first(*names)
        if name is not None:
            return self.check_int(name, self.cfg[name], minimum, maximum)
        if default is not None:
            return default
        raise self.err(missing or names[0], "missing (required to size the model)")

    def opt_int(self, *names: str, minimum: int = 1, maximum: int = MAX_SIZE) -> int | None:
        return self.int(*names, minimum=minimum, maximum=maximum) if self.has(*names) else None

    def bool(self, name: str, default: bool = False) -> bool:
        value = self.cfg.get(name, default)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self.err(name, f"must be true or false, got {value!r}")
        return value

    def number(self, name: str, minimum: float = 0.0, maximum: float = 1e6) -> float:
        value = self.cfg.get(name)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise self.err(name, f"must be a finite number, got {value!r}")
        if not minimum <= value <= maximum:
            raise self.err(name, f"must be in [{minimum}, {maximum}], got {value}")
        return float(value)

    def int_list(self, name: str, length: int | None = None, minimum: int = 0) -> list[int] | None:
        value = self.cfg.get(name)
        if value is None:
            return None
        if not isinstance(value, list):
            raise self.err(name, f"must be a list of integers, got {type(value).__name__}")
        out = [self.check_int(f"{name}[{i}]", v, minimum) for i, v in enumerate(value)]
        if length is not None and len(out) != length:
            raise self.err(name, f"has {len(out)} entries for {length} layers")
        return out

    def text(self, *names: str, default: str) -> str:
        """The first of `names` given, a string (an activation's name); absent, `default`. A number, list or
        mapping there is refused: read as its repr it matches no name and the default's reading would be guessed."""
        name = self.first(*names)
        if name is None:
            return default
        value = self.cfg[name]
        if not isinstance(value, str):
            raise self.err(name, f"must be a string, got {value!r}")
        return value

    def str_list(self, name: str) -> list[str] | None:
        value = self.cfg.get(name)
        if value is None:
            return None
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.err(name, "must be a list of strings")
        return list(value)

    def per_layer(self, name: str, layers: int, minimum: int = 0) -> list[int] | None:
        """An int given once or as one entry per layer (Hunyuan's moe_topk, moe_intermediate_size...)."""
        value = self.cfg.get(name)
        if value is None:
            return None
        if isinstance(value, list):
            return self.int_list(name, layers, minimum)
        return [self.check_int(name, value, minimum)] * layers
