"""Click options shared by several commands, and the small helpers that turn them into specs."""
from __future__ import annotations

from typing import Any, Callable

import click

from solver.specs.parallel import KNOB_FLAGS, ParallelConfig, make_parallel_config
from solver.report.render import FORMATS


def format_option(default: str = "table") -> Callable:
    return click.option("--format", "fmt", type=click.Choice(FORMATS), default=default, show_default=True,
                        help="output format")


def knob_options(func: Callable) -> Callable:
    """--attn-tp, --dense-tp, ... one per parallel_config knob (unset = the knob's default of 1)."""
    for knob, flag in reversed(list(KNOB_FLAGS.items())):
        func = click.option(flag, knob, type=int, default=None, help=f"{knob}")(func)
    return func


def dtype_options(func: Callable) -> Callable:
    func = click.option("--kv-dtype", type=str, default=None, help="KV-cache dtype: bf16, fp8, int8")(func)
    func = click.option("--moe-weight-dtype", type=str, default=None,
                        help="routed-expert weights: bf16, fp8, fp8_block, int8, int4, mxfp4, nvfp4")(func)
    func = click.option("--weight-dtype", type=str, default=None,
                        help="weights of every linear layer (default: the checkpoint's where the hardware runs it)")(func)
    return func


def parallel_from_options(cards: int, opts: dict[str, Any]) -> ParallelConfig:
    return make_parallel_config(cards, **{k: opts.get(k) for k in KNOB_FLAGS})
