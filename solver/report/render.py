"""Output formats shared by every command: table (rich), yaml, json."""
from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Iterable, Sequence

if TYPE_CHECKING:  # rich and yaml load when output is written, not when a command module is imported
    from rich.console import Console
    from rich.table import Table

FORMATS = ("table", "yaml", "json")


def to_plain(obj: Any) -> Any:
    """Make pydantic models, dataclasses, tuples and numpy/pandas scalars JSON/YAML-safe."""
    import dataclasses

    if hasattr(obj, "model_dump"):
        return to_plain(obj.model_dump())
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return to_plain(dataclasses.asdict(obj))
    if isinstance(obj, dict):
        return {str(k): to_plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_plain(v) for v in obj]
    if hasattr(obj, "item") and callable(obj.item):
        return obj.item()
    return obj


def dump(data: Any, fmt: str) -> str:
    plain = to_plain(data)
    if fmt == "json":
        return json.dumps(plain, indent=2)
    if fmt == "yaml":
        import yaml

        return yaml.safe_dump(plain, sort_keys=False, allow_unicode=True)
    raise ValueError(fmt)


def table(title: str, columns: Sequence[str], rows: Iterable[Sequence[Any]], justify_numbers: bool = True) -> Table:
    from rich.table import Table

    t = Table(title=title, title_justify="left")
    for col in columns:
        t.add_column(col)
    for row in rows:
        t.add_row(*[fmt_cell(v) for v in row])
    return t


def fmt_cell(value: Any) -> str:
    """A table cell as rank.cell writes it (its one home: the sentences beside a table write figures so too); loaded
    here when a table is written, so a cold CLI start does not load the rank package."""
    from solver.rank.cell import fmt_cell as cell

    return cell(value)


def console() -> Console:
    """The console every table and line goes through. Text is printed as given: rich's emoji codes are off (a
    name or value holding `:fire:` stays as typed; rich never loads its emoji table). Rich's highlighter only
    adds colours, so it runs only where colour is written: without a colour system (a pipe, a file) its styles
    print nothing, and skipping it skips its regexes and a pass over every cell."""
    from rich.console import Console

    con = Console(width=160, soft_wrap=False, emoji=False, highlight=False)
    if con.color_system is not None:
        con = Console(width=160, soft_wrap=False, emoji=False)
    return con
