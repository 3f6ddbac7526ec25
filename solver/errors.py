"""The tool's own errors. The CLI turns each into one line on stderr and an exit code."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple


QUOTE_WIDTH = 40  # a value or problem quoted inside an error line, at most


def quoted(text: str, width: int = QUOTE_WIDTH) -> str:
    """`text` cut to `width` characters (ending in "...") for quoting inside a one-line error."""
    return text if len(text) <= width else text[:width - 3] + "..."


def three_figures(value: float, up: bool = False, down: bool = False) -> str:
    """`value` to three significant figures for a one-line message, never in exponent form (TTFT 2,750 ms, not
    2.75e+03 ms), thousands separated. `up`: rounded up, for a figure quoted as a cap to pass (an SLA that admits a
    TTFT of 478.6 ms is --ttft-ms 479; 33.14 ms quoted 33.1 would be a TPOT cap it misses); `down`: rounded down,
    for a figure quoted as a target to reach (0.4567 tok/s is a target of 0.456)."""
    if value == 0 or not math.isfinite(value):
        return f"{value:g}"
    if (up or down) and value > 0:
        scale = 10.0 ** (2 - math.floor(math.log10(value)))
        # round(): 33.1 stored as 33.1000000001 stays 33.1
        value = (math.ceil if up else math.floor)(round(value * scale, 6)) / scale
    value = float(f"{value:.3g}")  # rounded first: 99.95 is 100, not 100.0
    decimals = 2 - math.floor(math.log10(abs(value)))
    return f"{value:,.0f}" if decimals <= 0 else f"{value:.{decimals}f}"


class ShardplanError(Exception):
    """Base class; `exit_code` is what the CLI exits with."""

    exit_code = 2


class InputError(ShardplanError):
    """Bad input: a field is missing, malformed or out of range. Exit code 2.

    The message names the field and the problem in one line.
    """

    exit_code = 2

    def __init__(self, field: str, problem: str):
        self.field = field
        self.problem = problem
        super().__init__(f"{field}: {problem}" if field else problem)


Value = int | float | str | bool | None


class Change(NamedTuple):
    """One change to the request a remedy stands for: a flag and the value it takes (None: the flag removed, as an
    SLA set aside; True: a switch given)."""

    flag: str
    value: Value

    @property
    def option(self) -> str:
        """The change as the command line spells it: '--cards 16', '--allow-cross-node', 'no --ttft-ms'."""
        if self.value is None:
            return f"no {self.flag}"
        if self.value is True:
            return self.flag
        return f"{self.flag} {self.value}"


@dataclass(frozen=True)
class Remedy:
    """One option of what would make an infeasible request feasible: its text as the CLI prints it, and the
    changes it stands for, applied together (() where it names no value to apply: a rule no flag lifts). Where the
    text offers alternatives ('A, or B': `either`), each is a Remedy of its own in `alternatives`, with its own
    changes, and this one's are ()."""

    text: str
    changes: tuple[Change, ...] = ()
    alternatives: tuple["Remedy", ...] = ()

    @property
    def ways(self) -> tuple[tuple[Change, ...], ...]:
        """The change sets that each make the request feasible, one per alternative that names a value: what a
        caller applies, each on its own."""
        return tuple(w for a in (self.alternatives or (self,)) for w in ([a.changes] if a.changes else []))


def either(*options: "Remedy | None", joined: str = ", or ", tail: str = "", text: str | None = None
           ) -> "Remedy | None":
    """One remedy offering `options` as alternatives ('A, or B[tail]'), each keeping its changes; a lone option is
    itself (with `tail`), none is None. `tail`: words said of them all ('... ranks spread evenly ...'); `text`: the
    sentence said instead of the joined options' (one that names them in its own words)."""
    given = [o for o in options if o is not None]
    if not given:
        return None
    said = text if text is not None else joined.join(o.text for o in given) + tail
    if len(given) == 1:
        return given[0] if said == given[0].text else Remedy(said, given[0].changes)
    return Remedy(said, (), tuple(given))


WHAT_WOULD_FIT = "what would fit"  # the lead of a remedy sentence (the fuzz's unmet rule reads it)


@dataclass(frozen=True)
class Remedies:
    """What would make an infeasible request feasible, as data: the options, and the sentence's lead (None: the
    options stand alone, as 'raise --time-limit' does). `text` is the one place the sentence is written."""

    options: tuple[Remedy, ...] = ()
    lead: str | None = WHAT_WOULD_FIT

    def text(self, where: str = "") -> str | None:
        """'what would fit[ where]: A; B', or None without options; `where` qualifies the lead (recommend: the
        options are for a configuration on the largest size tried, not for the load)."""
        if not self.options:
            return None
        body = "; ".join(r.text for r in self.options)
        return f"{self.lead}{where}: {body}" if self.lead else body

    def __bool__(self) -> bool:
        return bool(self.options)


def remedies(*options: Remedy | str | None, lead: str | None = WHAT_WOULD_FIT) -> Remedies:
    """Remedies of `options` (a bare text is an option with no change to apply; None is left out)."""
    return Remedies(tuple(o if isinstance(o, Remedy) else Remedy(o) for o in options if o), lead)


class InfeasibleError(ShardplanError):
    """No configuration satisfies the constraints. Exit code 1.

    `binding` names the constraint(s) that bind; `remedies` what would make it feasible, as data (each option's
    text and the flag changes it stands for); `remedy` is their sentence. `proven`: the search showed that nothing
    fits (False where a time limit or the planner's cut budget stopped it first). `terms`: what binds in the
    model's terms (its weights and cache against the cards' memory, a rule in the engine's words), as the message
    states it, for a caller that shows the binding families and the remedy apart (a sweep row).
    """

    exit_code = 1

    def __init__(self, message: str, binding: list[str] | None = None, remedies: Remedies | None = None,
                 proven: bool = True, terms: str | None = None):
        self.binding = binding or []
        self.remedies = remedies or Remedies()
        self.proven = proven
        self.terms = terms
        self.message = message
        text = message
        if self.remedy:
            text += f"; {self.remedy}"
        super().__init__(text)

    @property
    def remedy(self) -> str | None:
        """The remedies' sentence ('what would fit: ...'), or None."""
        return self.remedies.text()


class InternalError(ShardplanError):
    """A fault of the tool itself, not of the input. Exit code 3 (1 is "infeasible", 2 "bad input")."""

    exit_code = 3


# The environment variable that, like `shardplan --debug`, prints the traceback of an internal error.
DEBUG_ENV = "SHARDPLAN_DEBUG"
