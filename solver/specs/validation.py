"""Turn file and schema problems into one-line `InputError`s that name the field."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from solver.errors import InputError

M = TypeVar("M", bound=BaseModel)


def first_error(exc: ValidationError, origin: str) -> InputError:
    """The first pydantic error as `origin: field.path: message`."""
    err = exc.errors()[0]
    loc = ".".join(str(part) for part in err.get("loc", ())) or "(root)"
    msg = err.get("msg", "invalid").removeprefix("Value error, ")
    extra = len(exc.errors()) - 1
    more = f" (and {extra} more problem{'s' if extra > 1 else ''})" if extra else ""
    return InputError(f"{origin}: {loc}", f"{msg}{more}")


def validate_model(model: type[M], data: Any, origin: str) -> M:
    if not isinstance(data, dict):
        raise InputError(origin, f"expected a mapping at the top level, got {type(data).__name__}")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise first_error(exc, origin) from None


def load_yaml(path: Path) -> Any:
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise InputError(str(path), f"cannot read file ({exc.strerror or exc})") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise InputError(str(path), f"not valid YAML{where}") from None


def load_json(path: Path) -> Any:
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise InputError(str(path), f"cannot read file ({exc.strerror or exc})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(str(path), f"not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None
