"""The speculative method a command names, priced as it runs (FrameworkProfile.draft_methods): the slot is the
launch argument that writes the profile's own MTP method (a literal printed only with MTP on), its value in the
command the method; its kind says what a draft step runs. A draft model's method is refused (its size is the
checkpoint's, which the command names only by a path), as is one the profile does not list."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from solver.errors import InputError
from solver.launch.command_reading import Slot, slot_name, slot_of


@dataclass(frozen=True)
class CommandDraft:
    """The method as the command writes it, where (its slot's name) and its kind (DRAFT_KINDS)."""

    method: str
    said: str
    kind: str


def method_slot(fw: Any) -> Slot | None:
    """The slot the profile writes its MTP method into: an argument printed only with MTP on (its condition reads
    `mtp`) whose text is a literal (vLLM's speculative method, SGLang's --speculative-algorithm)."""
    for arg in fw.launch.args if fw.launch else ():
        if arg.text and arg.value is None and "{" not in arg.text and "mtp" in arg.when_expr.names:
            return slot_of(fw, arg)
    return None


def command_draft(fw: Any, given: dict[Slot, str]) -> CommandDraft | None:
    """The method the command names and its kind; None where the profile lists no methods or the command names
    none. InputError (--command) for a method priced by no rule: a draft model's, or one the profile lacks."""
    slot = method_slot(fw)
    if fw.draft_methods is None or slot is None or slot not in given:
        return None
    method, said = given[slot], slot_name(slot, fw)
    kind = fw.draft_methods.kind(method)
    if kind is None:
        known = [m for k in ("next_n", "lookup") for m in getattr(fw.draft_methods, k)]
        raise InputError("--command", f"{said} {method}: a speculative method {fw.name}'s profile does not price "
                                      f"(it prices {', '.join(known)}); check the command without it")
    if kind == "draft_model":
        raise InputError("--command", f"{said} {method}: drafts with a separate draft model, whose size and speed "
                                      "its checkpoint sets and the command names only by a path: not priced; check "
                                      "the command without speculation, or with the model's own next-n layers "
                                      f"({', '.join(fw.draft_methods.next_n[:1])})")
    return CommandDraft(method, said, kind)


def lookup_depth(fw: Any, given: dict) -> tuple[int, str] | None:
    """(the depth a lookup draft runs where the command sets none and the engine derives it from its tree: the
    tokens verified a sequence over the tree's breadth, rounded down (LookupVerify.depth_breadth); how, said),
    or None where the engine derives none or 0."""
    tree = fw.draft_methods.lookup_verify if fw.draft_methods is not None else None
    if tree is None or tree.depth_breadth is None:
        return None
    tokens = lookup_verify_tokens(fw, given)
    by = tree.depth_breadth
    value = given.get(("flag", by.flag))
    try:
        breadth = by.default if value is None else int(value)
    except ValueError:
        raise InputError("--command", f"{by.flag} {value}: not a whole number") from None
    if breadth < 1:
        raise InputError("--command", f"{by.flag} {breadth}: the tree's breadth must be at least 1")
    def said(flag: str, v: int) -> str:
        return f"{flag} {v}" + ("" if ("flag", flag) in given else " (the engine's default)")
    depth = (tokens or tree.default) // breadth  # tokens: the tree's, set (lookup_verify_tokens)
    if depth < 1:  # a tree narrower than its breadth: the engine sets 0 steps yet verifies the tree, which no
        return None  # chain depth prices; the depth it accepts is the user's to give (--mtp)
    return depth, f"{said(tree.flag, tokens or tree.default)} // {said(by.flag, breadth)} = {depth}"


def lookup_verify_tokens(fw: Any, given: dict) -> int | None:
    """The tokens a lookup draft's verify runs a sequence where the engine verifies a tree (the profile's
    draft_methods.lookup_verify: the command's flag, else the engine's default); None: a chain of 1 + depth."""
    tree = fw.draft_methods.lookup_verify if fw.draft_methods is not None else None
    if tree is None:
        return None
    value = given.get(("flag", tree.flag))
    if value is None:
        return tree.default
    try:
        tokens = int(value)
    except ValueError:
        raise InputError("--command", f"{tree.flag} {value}: not a whole number of tokens") from None
    if tokens < 1:
        raise InputError("--command", f"{tree.flag} {tokens}: the tokens verified a sequence must be at least 1")
    return tokens
