"""A knob the user did not give, tied by the engine's rules to the ones given: a profile rule whose `require` is
`knob == expression` (or a conjunction of such terms) is read as the value the knob must take, so a single-config
command (estimate, memory) sets it rather than refusing the layout the user asked for (ATOM's dense_tp = TP).
The rules are the profile's (data); nothing here names a knob or an engine."""
from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Callable, Mapping

from solver.specs.expr import Expr, Value, compile_expr
from solver.specs.knobs import CONFIG_FLAGS, KNOBS

if TYPE_CHECKING:
    from solver.specs.framework import FrameworkProfile
    from solver.specs.profile_rules import Rule


def rule_ties(rule: "Rule", aliases: tuple) -> list[tuple[str, Expr]] | None:
    """The (knob, value) terms of a rule that reads `knob == expression` [and ...]; None where any term is not
    such an equality (an `or` leaves the choice to the user)."""
    terms: list[ast.expr] = []
    body = ast.parse(rule.require.strip(), mode="eval").body
    stack = [body]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And):
            stack.extend(node.values)
        else:
            terms.append(node)
    ties = []
    for term in terms:
        if not (isinstance(term, ast.Compare) and len(term.ops) == 1 and isinstance(term.ops[0], ast.Eq)):
            return None
        left, right = term.left, term.comparators[0]
        if isinstance(right, ast.Name) and right.id in KNOBS and not (isinstance(left, ast.Name) and left.id in KNOBS):
            left, right = right, left
        if not (isinstance(left, ast.Name) and left.id in KNOBS):
            return None
        value = compile_expr(ast.unparse(right), aliases)
        if left.id in value.names:
            return None
        ties.append((left.id, value))
    return ties


def tie_knobs(fw: "FrameworkProfile", knobs: Mapping[str, int | None],
              env_of: Callable[[dict[str, int]], Mapping[str, Value]]) -> tuple[dict[str, int], list[str]]:
    """`knobs` (None: not given) with each knob not given that a broken error rule of `fw` ties to the others set
    to its tied value, and one line per rule applied ("--dense-tp 8 by [C.dense_tp_is_tp]"). `env_of` builds
    a rule environment from the knobs set. Nothing given is changed; a rule that would change one is left to refuse."""
    given = {k for k, v in knobs.items() if v is not None}
    current = {k: v for k, v in knobs.items() if v is not None}
    said: list[str] = []
    for _ in range(len(KNOBS)):  # each pass sets at least one knob, or stops
        env = env_of(current)
        moved = False
        for rule in fw.violated(env, "error"):
            ties = rule_ties(rule, fw.rule_aliases)
            if not ties:
                continue
            broken = [(k, int(v.evaluate(env))) for k, v in ties if env.get(k, 1) != v.evaluate(env)]
            if not broken or any(k in given or k not in fw.knobs for k, _ in broken):
                continue
            for knob, value in broken:
                current[knob] = value
            said.append(f"{', '.join(f'{CONFIG_FLAGS[k]} {v}' for k, v in broken)} by [{rule.id}]")
            moved = True
            break
        if not moved:
            break
    return {**knobs, **{k: v for k, v in current.items() if k not in given}}, said
