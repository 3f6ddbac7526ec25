"""The one home for reading the user's JSON and YAML files (plain or gzip), and for turning file and schema
problems into one-line `InputError`s that name the field.

Every reader goes through `read_text`: a file that is not UTF-8, a corrupt gzip stream, nesting deeper than
MAX_DEPTH, an integer literal over Python's 4,300-digit conversion limit or a YAML alias bomb is reported as
bad input, never a traceback. Non-finite numbers (`Infinity`, `NaN`) are *not* refused here: a published
config (Nemotron-3-Super) carries `Infinity` in a field that sizes nothing; the schema of each field decides.
"""
from __future__ import annotations

import json
import re
import zlib
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, TypeVar, get_args

import yaml

if TYPE_CHECKING:  # pydantic loads with the first schema validated, not with every reader (inspect needs none)
    from pydantic import BaseModel, ValidationError

from solver.errors import InputError, quoted

M = TypeVar("M", bound="BaseModel")

MAX_DEPTH = 64  # real configs, hardware files and traces nest < 10 deep
MAX_YAML_NODES = 1_000_000  # an alias bomb expands to billions; the largest shipped YAML has a few thousand
_GZIP_MAGIC = b"\x1f\x8b"


_NAMED = 5  # the other problems' fields named after the first


class FieldProblem(ValueError):
    """Raised by a model validator for a relation between fields: the error names `field` (a dotted path below
    the model), where pydantic would name the model's root."""

    def __init__(self, field: str, problem: str):
        super().__init__(f"{field}: {problem}")  # pydantic's own message names the field too
        self.field, self.problem = field, problem


def _loc(err: dict) -> str:
    parts = [str(part) for part in err.get("loc", ())]
    cause = (err.get("ctx") or {}).get("error")
    if isinstance(cause, FieldProblem):
        parts.append(cause.field)
    return ".".join(parts)


def _models_in(tp: Any) -> list[type]:
    """The pydantic models an annotation holds: itself, or those of its arguments (lists, dicts, optionals)."""
    if isinstance(tp, type) and hasattr(tp, "model_fields"):
        return [tp]
    return [m for arg in get_args(tp) for m in _models_in(arg)]


def _fields_at(model: type | None, parent: tuple) -> set[str]:
    """The field names a schema allows at `parent` (a pydantic loc without its last part), walking nested
    models through their annotations (lists, dicts and optionals by their arguments); empty where the walk
    cannot tell."""
    current = [model] if model is not None and hasattr(model, "model_fields") else []
    for part in parent:
        nxt = []
        for m in current:
            field = m.model_fields.get(part) if isinstance(part, str) else None
            if field is not None:
                nxt += _models_in(field.annotation)
            else:  # a list index or a dict key: the container's own argument models
                nxt.append(m)
        current = nxt
    return {name for m in current for name in m.model_fields}


def _misspelt(errors: list, model: type | None) -> tuple[int, str] | None:
    """(index, field) of an unknown field that is a misspelling of one the schema has at the same place (a
    missing field there first, else any field of the model there): the likely mistake in a hand-written file."""
    import difflib

    for i, e in enumerate(errors):
        loc = tuple(e.get("loc", ()))
        if e.get("type") != "extra_forbidden" or not loc or not isinstance(loc[-1], str):
            continue
        parent = loc[:-1]
        missing = [str(x.get("loc", ())[-1]) for x in errors
                   if x.get("type") == "missing" and tuple(x.get("loc", ()))[:-1] == parent and x.get("loc")]
        for pool in (missing, sorted(_fields_at(model, parent) - {loc[-1]})):
            hit = difflib.get_close_matches(loc[-1], pool, n=1, cutoff=0.75)
            if hit:
                return i, hit[0]
    return None


def _homes(model: type | None, name: str) -> list[str]:
    """The dotted places where the schema has a field `name` ("" for the top level), walking nested models through
    their annotations as _fields_at does; list items and mapping values keep their container's path."""
    out: list[str] = []
    todo = [("", model)] if model is not None and hasattr(model, "model_fields") else []
    seen: set[tuple[str, type]] = set()
    while todo:
        path, m = todo.pop(0)
        if (path, m) in seen or path.count(".") > 8:
            continue
        seen.add((path, m))
        if name in m.model_fields:
            out.append(path)
        for field, info in m.model_fields.items():
            todo += [(f"{path}.{field}" if path else field, sub) for sub in _models_in(info.annotation)]
    return out


def _misplaced(errors: list, model: type | None) -> tuple[int, str] | None:
    """(index, where) of an unknown field the schema has at another place (a workload key at the top level, a
    top-level key inside a block): the field is right, its place is not."""
    for i, e in enumerate(errors):
        loc = tuple(e.get("loc", ()))
        if e.get("type") != "extra_forbidden" or not loc or not isinstance(loc[-1], str):
            continue
        here = ".".join(part for part in loc[:-1] if isinstance(part, str))  # list indices are not places
        homes = [h for h in _homes(model, loc[-1]) if h != here]
        if homes:
            return i, ("at the top level" if homes[0] == "" else f"under {homes[0]}")
    return None


def first_error(exc: ValidationError, origin: str, model: type | None = None) -> InputError:
    """The first pydantic error as `origin: field.path: message, got VALUE`, naming the fields of the others
    (a hand-written file often has several, and one run should show where they are). An unknown field that is
    a misspelling of one the schema has there (`model`: the schema validated, to look fields up) comes first,
    as 'not a field; did you mean ...?', and the missing field it stands for is not named again."""
    errors = exc.errors()
    typo = _misspelt(errors, model)
    if typo is not None:
        i, meant = typo
        err = errors[i]
        parent = tuple(err.get("loc", ()))[:-1]
        others = [e for j, e in enumerate(errors) if j != i and not (
            e.get("type") == "missing" and tuple(e.get("loc", ())) == (*parent, meant))]
        msg = f"not a field; did you mean {meant}?"
    elif (misplaced := _misplaced(errors, model)) is not None:
        i, where = misplaced
        err = errors[i]
        others = [e for j, e in enumerate(errors) if j != i]
        msg = f"not a field here; it belongs {where}"
    else:
        err, others = errors[0], errors[1:]
        cause = (err.get("ctx") or {}).get("error")
        msg = (cause.problem if isinstance(cause, FieldProblem)  # its field is the location, named once
               else err.get("msg", "invalid").removeprefix("Value error, "))
        value = err.get("input")
        if err.get("type") != "missing" and isinstance(value, (str, int, float)) and "got" not in msg:
            msg += f", got {quoted(repr(value))}"
    rest = [_loc(e) or "the top level" for e in others]
    more = ""
    if rest:
        named = ", ".join(rest[:_NAMED]) + (", ..." if len(rest) > _NAMED else "")
        more = f" (and {len(rest)} more problem{'s' if len(rest) > 1 else ''}: {named})"
    loc = _loc(err)  # none: a check across the file's fields whose message names them; the file is the field
    return InputError(f"{origin}: {loc}" if loc else origin, f"{msg}{more}")


def validate_model(model: type[M], data: Any, origin: str) -> M:
    from pydantic import ValidationError

    if not isinstance(data, dict):
        raise InputError(origin, f"expected a mapping at the top level, got {type(data).__name__}")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise first_error(exc, origin, model) from None
    except RecursionError:
        raise InputError(origin, f"nested deeper than {MAX_DEPTH} levels") from None


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def read_bytes(path: Path, field: str | None = None) -> bytes:
    """The file's bytes, gunzipped when it starts with the gzip magic."""
    where = field or str(path)
    prefix = f"{path}: " if field else ""
    try:
        with Path(path).open("rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise InputError(where, f"{prefix}cannot read file ({exc.strerror or _one_line(exc)})") from None
    if data[:2] == _GZIP_MAGIC:
        import gzip  # a gzip file is the rare case: a plain read does not load the module

        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:
            raise InputError(where, f"{prefix}corrupt gzip file ({_one_line(exc)})") from None
    return data


def read_text(path: Path, field: str | None = None) -> str:
    """The file as UTF-8 text (a BOM is dropped); anything else is one clear error."""
    data = read_bytes(path, field)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        where, prefix = (field, f"{path}: ") if field else (str(path), "")
        raise InputError(where, f"{prefix}not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})") from None


def check_depth(data: Any, origin: str, limit: int = MAX_DEPTH) -> Any:
    """Refuse structures nested deeper than `limit` (iteratively: the check itself cannot overflow)."""
    stack = [(data, 1)]
    seen: set[int] = set()  # YAML aliases share one object: walk it once
    while stack:
        node, depth = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, dict):
            children = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        if depth > limit:
            raise InputError(origin, f"nested deeper than {limit} levels")
        stack.extend((c, depth + 1) for c in children if isinstance(c, (dict, list)))
    return data


class _DuplicateKey(ValueError):
    pass


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose keys are each given once: json keeps the last of a repeated key and drops the others
    unread, so a config that says `"num_hidden_layers"` twice is refused instead of read as its last value."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


@contextmanager
def _parse_limits(origin: str, form: str) -> Iterator[None]:
    """What the JSON and YAML parsers both raise past Python's limits, as one line naming the file: nesting past
    the recursion limit, an integer literal past the int-conversion limit (`form`: the text's format)."""
    try:
        yield
    except RecursionError:
        raise InputError(origin, f"not valid {form} (nested deeper than {MAX_DEPTH} levels)") from None
    except ValueError as exc:
        raise InputError(origin, f"not valid {form} ({_one_line(exc).split(';')[0]})") from None


def parse_json(text: str, origin: str, parse_float: Callable[[str], Any] | None = None,
               depth_check: bool = True) -> Any:
    """JSON text; `depth_check` off for large flat files (traces) whose readers never recurse."""
    with _parse_limits(origin, "JSON"):
        try:
            data = json.loads(text, parse_float=parse_float, object_pairs_hook=_unique_pairs if depth_check else None)
        except _DuplicateKey as exc:
            raise InputError(origin, f"not valid JSON (key '{exc.args[0]}' given twice in one object; keep one)"
                             ) from None
        except json.JSONDecodeError as exc:
            raise InputError(origin, f"not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None
    return check_depth(data, origin) if depth_check else data


class _Loader(yaml.SafeLoader):
    """SafeLoader that counts composed nodes (an alias bomb is refused before it expands)."""

    def compose_node(self, parent, index):  # type: ignore[override]
        self._nodes = getattr(self, "_nodes", 0) + 1
        if self._nodes > MAX_YAML_NODES:
            raise yaml.YAMLError(f"more than {MAX_YAML_NODES:,} nodes")
        depth = getattr(self, "_depth", 0) + 1
        if depth > MAX_DEPTH:
            raise yaml.YAMLError(f"nested deeper than {MAX_DEPTH} levels")
        self._depth = depth
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth = depth - 1


# libyaml's safe loader where it is built in: the same documents (it refuses nesting past 1,000 levels itself;
# check_depth applies MAX_DEPTH after), about 10x faster on the catalog files a solve reads
_FAST_LOADER = type("_FastLoader", (yaml.CSafeLoader,), {}) if hasattr(yaml, "CSafeLoader") else None

# Numbers in exponent form as YAML 1.2 reads them: YAML 1.1 (PyYAML) takes 4.0e12, 400e9 or 5e-6 for text, and
# a hardware file written that way failed with "should be a valid number" against a number. An integral value
# becomes an int (96e9 bytes is 96000000000), so integer fields take it too; float fields accept ints.
_EXPONENT = re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+$")
_EXPONENT_TAG = "tag:shardplan,2026:exponent"


def _exponent_number(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> int | float:
    value = float(loader.construct_scalar(node).replace("_", ""))
    return int(value) if value.is_integer() and abs(value) < 2**53 else value


def _unique_keys_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    """A mapping whose keys are each given once: YAML's loaders keep the last of a repeated key and drop the
    others unread (`ranks_per_node: 8` then `ranks_per_node: 4`), so a repeat is an error naming the key. Keys a
    merge (`<<: *base`) brings in may be overridden, as YAML means."""
    seen: dict[Any, int] = {}
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge" or not isinstance(key_node, yaml.ScalarNode):
            continue
        key = loader.construct_object(key_node, deep=True)
        try:
            first = seen.get(key)
        except TypeError:  # an unhashable key: the constructor's own error says so
            continue
        if first is not None:
            raise yaml.constructor.ConstructorError(
                None, None, f"key '{key}' given twice (first at line {first}); keep one", key_node.start_mark)
        seen[key] = key_node.start_mark.line + 1
    return yaml.SafeLoader.construct_mapping(loader, node, deep)


def _float_or_exponent(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> int | float:
    """YAML 1.1's own floats: those in exponent form follow the rule above (9.6e+10, PyYAML's float form with its
    signed exponent, is 96000000000 for memory_bytes as 96e9 is); the others stay PyYAML's (96000000000.0 is no
    integer for an integer field)."""
    if "e" in str(node.value).lower() and _EXPONENT.match(str(node.value)):
        return _exponent_number(loader, node)
    return loader.construct_yaml_float(node)


for _cls in (c for c in (_Loader, _FAST_LOADER) if c is not None):
    _cls.add_implicit_resolver(_EXPONENT_TAG, _EXPONENT, list("-+.0123456789"))
    _cls.add_constructor(_EXPONENT_TAG, _exponent_number)
    _cls.add_constructor("tag:yaml.org,2002:float", _float_or_exponent)
    _cls.construct_mapping = _unique_keys_mapping  # type: ignore[method-assign]


def parse_yaml(text: str, origin: str, own: bool = False) -> Any:
    """`own`: one of the project's files (its anchors are its own, no alias bomb to guard against)."""
    # a document without anchors has no aliases to expand: only a user's with anchors needs the counting loader
    loader = _FAST_LOADER if _FAST_LOADER is not None and (own or "&" not in text) else _Loader
    with _parse_limits(origin, "YAML"):
        try:
            data = yaml.load(text, Loader=loader)  # noqa: S506 - safe loaders only
        except yaml.MarkedYAMLError as exc:
            if "maximum nesting depth" in str(exc.problem):  # libyaml's own limit, past MAX_DEPTH anyway
                raise InputError(origin, f"not valid YAML (nested deeper than {MAX_DEPTH} levels)") from None
            mark = exc.problem_mark
            where = f" at line {mark.line + 1}" if mark is not None else ""
            raise InputError(origin, f"not valid YAML{where} ({exc.problem or 'syntax error'})") from None
        except yaml.YAMLError as exc:
            raise InputError(origin, f"not valid YAML ({_one_line(exc)})") from None
    return check_depth(data, origin)


def load_yaml(path: Path, own: bool = False) -> Any:
    """`own`: a file the project ships (solver/specs/config's tables), read with libyaml whatever anchors it holds;
    a user's file with anchors takes the loader that counts the nodes an alias expands to."""
    return parse_yaml(read_text(Path(path)), str(path), own)


def load_json(path: Path, field: str | None = None, parse_float: Callable[[str], Any] | None = None,
              depth_check: bool = True) -> Any:
    """A JSON file (plain or gzip). `field` names the option in errors (the path is then part of the message)."""
    if not field:
        return parse_json(read_text(Path(path)), str(path), parse_float, depth_check)
    # under an option's name (traces): "PATH: not JSON (...)" / "PATH: cannot read (...)", the trace reader's words
    try:
        return parse_json(read_text(Path(path), field), field, parse_float, depth_check)
    except InputError as exc:
        problem = exc.problem.removeprefix(f"{path}: ")
        if problem.startswith("not valid JSON"):
            problem = "not JSON" + problem.removeprefix("not valid JSON")
        elif problem.startswith("not UTF-8"):
            problem = f"not JSON ({problem})"
        elif problem.startswith("corrupt gzip file"):
            problem = "cannot read (corrupt gzip" + problem.removeprefix("corrupt gzip file").replace(" (", ": ", 1)
        raise InputError(field, f"{path}: {problem}") from None
