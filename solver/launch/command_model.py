"""The model a command serves: its model token (the flag or positional the profile writes `{model_path}` into, as
the program's parser reads it) resolved in the catalog, or --model."""
from __future__ import annotations

from solver.errors import InputError
from solver.launch.command_engine import Run, program
from solver.launch.command_reading import Reading
from solver.specs.framework import FrameworkProfile
from solver.specs.model import ModelSpec


def resolve_model(token: str | None, override: str | None) -> tuple[str, ModelSpec]:
    """The model the command serves: --model where given, else its model token in the catalog (an alias or a
    Hugging Face id); an unknown one is refused naming close catalog names."""
    from solver.specs.model_catalog import _index, _norm, load_model

    name = override or token
    if name is None or name.startswith("$"):
        raise InputError("--model", f"missing: the command names no model ({token or 'no model token'}); give --model")
    try:
        return name, load_model(name)
    except InputError as exc:
        if override:
            raise
        from solver.specs.close_names import close_names

        close = close_names(_norm(name), _index(), limit=5, cutoff=0.5)
        hint = f"close names: {', '.join(close)}" if close else "see `shardplan models`"
        raise InputError("--command", f"model {name}: not in the catalog ({hint}); or give --model") from exc


def model_token(fw: FrameworkProfile, user: Reading, run: Run, notes: list[str]) -> str | None:
    """The model the command names: the flag the launch writes it after, or its positional token, else the
    profile's model_flag (a positional token first where the program reads both, as the engine's parser does)."""
    spec = fw.launch
    arg = next((a for a in (spec.args if spec else ()) if a.text and "{model_path}" in a.text), None)
    if arg is None:
        return None
    if arg.flag:
        v = user.flags.get(arg.flag)
        return v if isinstance(v, str) else None
    literal = set(program(fw)) | {a.text for a in spec.args if a.text and a.flag is None and "{" not in a.text}
    rest = [p for p in user.positional if p not in literal]
    flag = spec.model_flag if spec else None
    by_flag = user.flags.get(flag) if flag else None
    by_flag = by_flag if isinstance(by_flag, str) else None
    if not run.positional_model:
        if rest and by_flag is None:
            raise InputError("--command", f"{' '.join(run.program)} serves the model given by {flag} only (a "
                                          f"positional {rest[0]} is parsed and ignored: the engine would serve its "
                                          f"default model); write {flag} {rest[0]}")
        if rest:
            notes.append(f"{rest[0]}: a positional model {' '.join(run.program)} ignores; read {flag} {by_flag}")
        return by_flag
    if rest and by_flag:  # vLLM 0.23.0 argparse_utils.py:251-281 moves --model to the positional's place: two
        raise InputError("--command", f"the model is given twice ({rest[0]}, and {flag} {by_flag}): "
                                      f"{' '.join(run.program)}'s parser takes one; give one")
    return rest[0] if rest else by_flag
