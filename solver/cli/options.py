"""Click options shared by several commands, the option types that validate numbers at the boundary (finite,
in range, below the size caps of solver.specs.limits), and the small helpers that turn options into specs."""
from __future__ import annotations

import gc
import ipaddress
import math
import re
from contextlib import contextmanager
from collections.abc import Sequence
from typing import Any, Callable, Iterator

from typing import TYPE_CHECKING

import click

from solver.errors import InputError
from solver.report.render import FORMATS
from solver.specs import limits
from solver.specs.knobs import KNOB_FLAGS, SETTING_FLAGS

if TYPE_CHECKING:
    from solver.specs.scenario import Scenario

# Command modules import only click, this module and light constants at the top: whatever a command needs to
# run (the planner, OR-Tools, pandas, numpy, rich, the estimators) is imported inside it, so `--help` and a
# light command (inspect) start without them.


@contextmanager
def command_imports() -> Iterator[None]:
    """Around a command's own imports (the planner, the estimators, the specs and pydantic): the cyclic collector
    paused while they run and what they made frozen after (gc.freeze: module-level objects live as long as the
    process, so no later collection rescans them; reference counting still frees what is not in a cycle). The
    collector otherwise runs about a hundred times over those objects during a cold solve: 60-90 ms of it."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if was:
            gc.enable()


# One default output format for every command that prints a result (sweep writes a file or CSV instead).
DEFAULT_FORMAT = "table"


class Int(click.ParamType):
    """An integer in [lo, hi]; the error names the bounds (and why the upper one exists) in one line."""

    name = "integer"

    def __init__(self, lo: int, hi: int, why: str = ""):
        self.lo, self.hi, self.why = lo, hi, why

    def convert(self, value: Any, param, ctx) -> int:
        if isinstance(value, bool):
            self.fail(f"expected an integer, got {value!r}", param, ctx)
        if isinstance(value, int):
            n = value
        else:
            text = str(value).strip().replace("_", "")
            if len(text) > 30:
                self.fail(f"must be an integer <= {self.hi:,}, got {text[:20]}... ({len(text)} characters)",
                          param, ctx)
            try:
                n = int(text)
            except ValueError:
                self.fail(f"must be an integer, got {value!r}", param, ctx)
        if n < self.lo:
            self.fail(f"must be >= {self.lo}, got {n}", param, ctx)
        if n > self.hi:
            why = f" ({self.why})" if self.why else ""
            self.fail(f"must be <= {self.hi:,}, got {n}{why}", param, ctx)
        return n


class Float(click.ParamType):
    """A finite number with a lower bound (open or closed) and an upper one; nan and inf are refused."""

    name = "number"

    def __init__(self, lo: float, hi: float, lo_open: bool = True):
        self.lo, self.hi, self.lo_open = lo, hi, lo_open

    def convert(self, value: Any, param, ctx) -> float:
        if isinstance(value, bool):
            self.fail(f"expected a number, got {value!r}", param, ctx)
        try:
            x = float(value)
        except (TypeError, ValueError, OverflowError):
            self.fail(f"must be a number, got {value!r}", param, ctx)
        if not math.isfinite(x):
            self.fail(f"must be a finite number, got {value!r}", param, ctx)
        if not (x > self.lo if self.lo_open else x >= self.lo):
            self.fail(f"must be {'>' if self.lo_open else '>='} {self.lo:g}, got {value}", param, ctx)
        if x > self.hi:
            self.fail(f"must be <= {self.hi:g}, got {value}", param, ctx)
        return x


CARDS = Int(1, limits.MAX_CARDS, "the largest cluster any hardware file describes")
KNOB = Int(1, limits.MAX_CARDS, "a knob divides the world size")
SETTING = Int(0, limits.MAX_CARDS, "copies of routed experts, at most the cards' count")
TOKENS = Int(1, limits.MAX_TOKENS, "1.6x the longest context a published model declares")
CONCURRENCY = Int(1, limits.MAX_CONCURRENCY)
COPIES = Int(1, limits.MAX_CARDS, "a copy holds a card at least: the largest cluster any hardware file describes")
MTP = Int(0, limits.MAX_MTP)
TOP = Int(1, limits.MAX_TOP, "the seed's format lists 2-3; each extra candidate is a search")
SEED = Int(0, limits.MAX_SEED, "CP-SAT's random seed is a 32-bit integer")
WORKERS = Int(1, limits.MAX_WORKERS)
JOBS = Int(1, limits.MAX_JOBS)
MS = Float(0.0, limits.MAX_SLA_MS)
SECONDS = Float(0.0, limits.MAX_TIME_LIMIT_S)
FRACTION = Float(0.0, 1.0)
RATE = Float(0.0, limits.MAX_RATE)
GB = Float(0.0, 1e6)


class Name(click.ParamType):
    """A catalog name or a path: non-empty, at most MAX_NAME characters per path component."""

    name = "name"

    def convert(self, value: Any, param, ctx) -> str:
        text = str(value)
        if not text.strip():
            self.fail("must not be empty", param, ctx)
        if "\x00" in text:
            self.fail("contains a NUL character", param, ctx)
        # click takes the token after an option as its value, a flag too: `--out --format json` wrote to a file
        # named --format, `--model-path --engine vllm` put --engine into the engine's command. '-' alone is stdout
        if text.startswith("-") and text != "-":
            self.fail(f"{text!r} starts with '-': a flag, not a name or path (was this option's value left out?)",
                      param, ctx)
        longest = max((len(part) for part in text.replace("\\", "/").split("/")), default=0)
        if longest > limits.MAX_NAME:
            self.fail(f"a name or path component of {longest} characters (at most {limits.MAX_NAME})", param, ctx)
        return text


NAME = Name()


class ModelName(Name):
    """A model's catalog name or config path, the spaces around it dropped (" qwen3.5-122b " is qwen3.5-122b): the
    one place a command's model is read, so its titles and outputs echo the name, not the spaces typed."""

    def convert(self, value: Any, param, ctx) -> str:
        return super().convert(value, param, ctx).strip()


MODEL = ModelName()


class DtypeName(click.ParamType):
    """A number-format name read as the catalog spells it (dtypes.given_dtype: --kv-dtype FP8 is fp8), so an engine
    profile's spellings and requirements read it as `generic` does; a per-hardware value (atlas_a3=INT8, a sweep's)
    keeps its hardware's name as typed."""

    name = "dtype"

    def convert(self, value: Any, param, ctx) -> str:
        from solver.specs.dtypes import given_dtype

        return given_dtype(str(value))


DTYPE = DtypeName()


# a host name (RFC 1123 labels; '_' as container and cluster DNS names have it) or a shell variable for one
_HOST_LABEL = r"[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?"
_HOST = re.compile(rf"^{_HOST_LABEL}(?:\.{_HOST_LABEL})*\.?$")
# ${NAME}: the form the shell rendering leaves unquoted (solver/launch/shell.py), so the shell expands it
_SHELL_VAR = re.compile(r"^\$\{[A-Za-z_][A-Za-z0-9_]*\}$")


class Host(Name):
    """The head node's address as the launch profiles write it: a host name, an IP address or a shell variable
    holding one. The profiles append the engine's own port where it takes one (HOST:PORT), so a port, a scheme or
    a path here would reach the command doubled or malformed (10.0.0.1:5000:5000)."""

    def convert(self, value: Any, param, ctx) -> str:
        text = super().convert(value, param, ctx).strip()
        if _SHELL_VAR.match(text) or len(text) <= 253 and _HOST.match(text):
            return text
        try:
            ipaddress.ip_address(text.strip("[]"))
            return text
        except ValueError:
            pass
        if re.match(r"^\$[A-Za-z_][A-Za-z0-9_]*$", text):
            self.fail(f"{text!r}: write the variable as ${{{text[1:]}}}, the form the command leaves unquoted for "
                      "the shell to expand", param, ctx)
        host, sep, port = text.rpartition(":")
        if sep and port.isdigit() and (_HOST.match(host) or _SHELL_VAR.match(host)):
            self.fail(f"{text!r} carries a port; give the host alone (the launch profiles add the engine's port)",
                      param, ctx)
        self.fail(f"{text!r} is not a host name, an IP address or a shell variable (${{HEAD_NODE_ADDR}})", param, ctx)


HOST = Host()


class Deferred(click.Option):
    """An option whose help text (`help_fn`) or default (a callable) comes from a module the command imports only
    when it runs (the profiles on disk, the launch emitter's constants): computed when --help is printed or the
    command parses, not when the command module is imported."""

    def __init__(self, *args: Any, help_fn: Callable[[], str] | None = None, **kwargs: Any):
        self.help_fn = help_fn
        super().__init__(*args, **kwargs)

    @property
    def help(self) -> str | None:  # type: ignore[override]
        return self.help_fn() if self.help_fn is not None else self._help

    @help.setter
    def help(self, value: str | None) -> None:
        self._help = value

    def get_help_record(self, ctx: click.Context):
        default = self.default
        if callable(default):  # show the value, not click's "(dynamic)"
            self.default = default()
        try:
            return super().get_help_record(ctx)
        finally:
            self.default = default


def factors_option(func: Callable) -> Callable:
    """--factors FILE on every command whose figures depend on the fitted factors: validated once here (one line
    naming the field, exit 2), then active for the command's run (specs.fitted.set_user_factors; a sweep's tasks
    carry its content to their workers); at its end a note says which pairs the file priced and which kept the
    shipped fit."""
    return click.option("--factors", "factors_file", type=NAME, default=None, metavar="FACTORS.yaml",
                        expose_value=False, callback=_use_factors,
                        help="efficiency factors fitted to your measurements (calibrate --from-csv ROWS.csv --fit "
                             "FACTORS.yaml): its (framework, hardware) pairs replace the shipped fit")(func)


def _use_factors(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    if value is None:
        return
    import sys

    from solver.calibrate.factors_file import factors_notes, read_user_factors
    from solver.specs import fitted

    factors = read_user_factors(value)
    before = fitted.set_user_factors(factors)
    fitted.clear_user_lookups()

    def done() -> None:
        fitted.set_user_factors(before)
        if sys.exc_info()[0] is None:  # a command that failed priced nothing worth a note
            for line in factors_notes(value, factors.pairs, fitted.user_lookups()):
                click.echo(f"note: {line}", err=True)
        fitted.clear_user_lookups()

    ctx.call_on_close(done)


def format_option(default: str = DEFAULT_FORMAT, extra: tuple[str, ...] = (),
                  help: str = "output format (data on stdout, notes and errors on stderr)") -> Callable:
    return click.option("--format", "fmt", type=click.Choice([*FORMATS, *extra]), default=default,
                        show_default=True, help=help)


def knob_options(func: Callable) -> Callable:
    """--attn-tp, --dense-tp, ... one per parallel_config knob (unset = the knob's default of 1), then the
    settings (--redundant-experts, default 0)."""
    for setting, flag in reversed(list(SETTING_FLAGS.items())):
        func = click.option(flag, setting, type=SETTING, default=None,
                            help=f"parallel_config {setting} (default 0; EP must divide experts + copies)")(func)
    for knob, flag in reversed(list(KNOB_FLAGS.items())):
        # --pp splits the ranks into stages; every other knob groups ranks inside one stage
        where = "--cards" if knob == "pp_size" else "the ranks of one stage, --cards / --pp"
        func = click.option(flag, knob, type=KNOB, default=None,
                            help=f"parallel_config {knob} (default 1; must divide {where})")(func)
    return func


def pool_workers_options(func: Callable) -> Callable:
    """--prefill-workers / --decode-workers: a disaggregated plan's worker counts (the P and D of xPyD), the one
    home of the options solve, sweep and recommend take with --serving disagg (pool_workers refuses them without)."""
    func = click.option("--decode-workers", type=COPIES, default=None,
                        help="with --serving disagg: this many decode workers (the D of xPyD), not the cards' most")(func)
    return click.option("--prefill-workers", type=COPIES, default=None,
                        help="with --serving disagg: this many prefill workers (the P of xPyD), not the rate "
                             "match's")(func)


def dtype_options(func: Callable) -> Callable:
    func = click.option("--kv-dtype", type=DTYPE, default=None, help="KV-cache dtype: bf16, fp8, int8")(func)
    func = click.option("--moe-weight-dtype", type=DTYPE, default=None,
                        help="routed-expert weights, in --weight-dtype's forms")(func)
    func = click.option("--weight-dtype", type=DTYPE, default=None,
                        help="weights of every linear layer: bf16, fp8, fp8_block, int8 (W8A8), int4 (W4A16: 16-bit "
                             "activations), w4a8 (int4 weights, 8-bit activations: the W4A8 recipe), w4afp8, "
                             "w4a16, mxfp4, nvfp4 (default: the checkpoint's where the hardware runs it)")(func)
    return func


def given(name: str) -> bool:
    """Whether the current command's option `name` was given (on the command line or by the environment), not
    left at its default: what a check of an option the user set reads."""
    ctx = click.get_current_context(silent=True)
    return ctx is not None and name in ctx.params and \
        ctx.get_parameter_source(name) != click.core.ParameterSource.DEFAULT


def scenario_from_options(**fields: Any) -> Scenario:
    """A Scenario from command-line values; a field it refuses is reported under its flag (--max-concurrency).
    An option left at its default is not passed, so the Scenario knows what the user gave."""
    from solver.specs.scenario import scenario_of

    ctx = click.get_current_context(silent=True)
    if ctx is not None:
        fields = {k: v for k, v in fields.items() if k not in ctx.params or given(k)}
    # a prefill-only plan holds and costs ISL tokens per prompt (Scenario.max_seq_len) and yields the one token a
    # prefill emits: a longer OSL would be read by nothing
    if fields.get("phase") == "prefill" and fields.get("osl", 1) != 1:
        raise InputError("--osl", f"a prefill-only deployment yields one token per prompt, so --osl {fields['osl']} "
                                  "is read by nothing; drop it (or give 1, or plan --phase serving)")
    return scenario_of("scenario", **fields)


# what --mtp-accept is in the engines' own metrics (workload.engine_accept_rate says why the two rates differ)
MTP_ACCEPT_HELP = ("each draft token's chance of acceptance once the ones before it were, as measured on your "
                   "traffic: vLLM's per-position acceptance rate at position 1; not the engines' accepted / drafted "
                   "rate (vLLM's Avg Draft acceptance rate, SGLang's spec_accept_rate), which is lower at --mtp > 1; "
                   "their mean acceptance length is 1 + a + ... + a^N (--explain prints both)")


def _mtp_accept_help() -> str:
    from solver.specs.scenario import DEFAULT_MTP_ACCEPT  # a pydantic module: loaded when --help is printed

    return f"with --mtp: {MTP_ACCEPT_HELP} [default: {DEFAULT_MTP_ACCEPT:g}]"


def mtp_accept_option(func: Callable) -> Callable:
    """--mtp-accept of the planning commands (solve, sweep, recommend); None: the Scenario's default."""
    return click.option("--mtp-accept", type=FRACTION, default=None, cls=Deferred, help_fn=_mtp_accept_help)(func)


# the SLAs are met by the figures the estimate gives (estimate.scheduler: the closed-loop benchmark's means), so
# the help says which: a user with a p90 / p99 SLA knows to leave a margin
TTFT_SLA_HELP = ("SLA: time to first token, ms, held by the mean TTFT of a closed-loop benchmark run at the "
                 "planned concurrency (its first wave's queue included): a mean, not a p90 / p99")
TPOT_SLA_HELP = ("SLA: time per output token, ms, held by the mean TPOT, a request's (last token - first token) / "
                 "(OSL - 1) averaged over requests (at one OSL the mean inter-token latency): a mean, not a p90 / p99")


def sla_options(func: Callable) -> Callable:
    """--ttft-ms and --tpot-ms of solve, sweep and recommend."""
    func = click.option("--tpot-ms", type=MS, default=None, help=TPOT_SLA_HELP)(func)
    return click.option("--ttft-ms", type=MS, default=None, help=TTFT_SLA_HELP)(func)


PREFIX_HIT_HELP = ("share of each prompt's tokens the engine finds in its prefix cache (its own metrics: vLLM "
                   "prefix_cache_hits / prefix_cache_queries, SGLang's cache hit rate), in [0, 1): a prefill computes "
                   "the rest; memory and decode unchanged")


def prefix_hit_option(func: Callable) -> Callable:
    """--prefix-hit of estimate, solve, sweep and recommend; its range is checked by Scenario (one rule)."""
    return click.option("--prefix-hit", type=float, default=0.0, show_default=True, help=PREFIX_HIT_HELP)(func)


# ------------------------------------------------------------------ an option given twice
# An option given twice with different values: click keeps the last and drops the earlier without a word, so
# `--isl 1024 ... --isl 2048` would answer for 2048 while the user reads 1024 in their own line. Refused here, before
# the command parses, naming the option and both values; the same value twice drops nothing and passes, and so do
# the options that take several (multiple=True).


def _single_options(command: click.Command) -> dict[str, click.Option]:
    """Each spelling of a single-valued option (long, short, --no- form) -> the option."""
    return {spelling: p for p in command.params if isinstance(p, click.Option) and not p.multiple and not p.count
            for spelling in (*p.opts, *p.secondary_opts)}


def _occurrences(command: click.Command, args: Sequence[str]) -> dict[str, list[str]]:
    """Per single-valued option (by name), each value it is given in `args`, as typed: the value token(s), or the
    spelling for a flag (--x / --no-x). Tokens after a bare "--" are arguments, not options."""
    spellings = _single_options(command)
    takes = {s: p for p in command.params if isinstance(p, click.Option)
             for s in (*p.opts, *p.secondary_opts)}  # every option's spellings, so their values are skipped
    seen: dict[str, list[str]] = {}
    i = 0
    while i < len(args):
        token = args[i]
        if token == "--":
            break
        name, eq, attached = token.partition("=") if token.startswith("--") else (token, "", "")
        if not eq and len(token) > 2 and token[0] == "-" and token[1] != "-" and token[:2] in takes:
            name, eq, attached = token[:2], "=", token[2:]  # a short option with its value attached: -j4
        param = takes.get(name)
        if param is None:
            i += 1
            continue
        if param.is_flag:
            value, i = name, i + 1
        elif eq:
            value, i = attached, i + 1
        else:
            value, i = " ".join(args[i + 1:i + 1 + param.nargs]), i + 1 + param.nargs
        if name in spellings:
            seen.setdefault(param.name or name, []).append(value)
    return seen


def refuse_repeats(command: click.Command, args: Sequence[str]) -> None:
    """A click.BadParameter naming the first single-valued option given twice with different values."""
    by_name = {p.name: p for p in command.params if isinstance(p, click.Option)}
    for name, values in _occurrences(command, args).items():
        if len(set(values)) > 1:
            shown = ", then ".join(repr(v) if len(v) <= 40 else repr(v[:37] + "...") for v in values)
            times = "twice" if len(values) == 2 else f"{len(values)} times"
            raise click.BadParameter(f"given {times} ({shown}): only one value is read; give it once",
                                     param=by_name[name])
