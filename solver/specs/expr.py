"""A small, safe expression language for framework rules.

Rules in framework profiles are data (YAML), so they are parsed with `ast` and checked against a whitelist
instead of being handed to `eval`. The language is just what divisibility and equality rules need:

    names, int/float/bool constants (also `true` / `false`), + - * // %, unary - + not,
    comparisons (chained too), and / or, parentheses, min(...), max(...), divides(a, b)

`divides(a, b)` is true when `b % a == 0` (false for a == 0). There is no `/`, `**`, attribute access,
subscript, string, lambda or any other call, so evaluating a rule cannot run code or blow up in size.
"""
from __future__ import annotations

import ast
import operator
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Callable, Mapping, Union

from solver.errors import InputError

Value = Union[bool, int, float]
Env = Mapping[str, Value]
_Eval = Callable[[Env], Value]

MAX_EXPR_CHARS = 2000  # a rule is one line; anything longer is a mistake, not a rule

_CONSTANT_NAMES: dict[str, bool] = {"true": True, "false": False}
FUNCTIONS = frozenset({"min", "max", "divides"})

_BINOPS: dict[type, Callable[[Value, Value], Value]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
}
_CMPOPS: dict[type, Callable[[Value, Value], bool]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
}
_SYMBOL = {ast.Div: "/", ast.Pow: "**", ast.MatMult: "@", ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^",
           ast.LShift: "<<", ast.RShift: ">>", ast.In: "in", ast.NotIn: "not in", ast.Is: "is",
           ast.IsNot: "is not", ast.Invert: "~"}


def _divides(a: Value, b: Value) -> bool:
    return a != 0 and b % a == 0


@dataclass(frozen=True)
class Expr:
    """A compiled expression: `names` are the free names it reads, `evaluate(env)` computes it."""

    text: str
    names: frozenset[str]
    tree: ast.Expression = field(repr=False, compare=False)
    _fn: _Eval = field(repr=False, compare=False)

    def evaluate(self, env: Env) -> Value:
        try:
            return self._fn(env)
        except _MissingName as exc:
            raise InputError(f"expression {self.text!r}", f"name '{exc.name}' has no value") from None
        except ZeroDivisionError:
            raise InputError(f"expression {self.text!r}", "division or modulo by zero") from None
        except TypeError as exc:
            raise InputError(f"expression {self.text!r}", f"cannot evaluate ({exc})") from None

    def __str__(self) -> str:
        return self.text


class _MissingName(Exception):
    def __init__(self, name: str):
        self.name = name


class _Compiler:
    """Turns a whitelisted AST into nested closures; anything off the whitelist is an InputError."""

    def __init__(self, text: str, products: Mapping[str, tuple[str, ...] | str] | None = None):
        self.text = text
        self.names: set[str] = set()
        self.products = products or {}
        self._expanding: set[str] = set()  # the named expressions being compiled (one naming itself is refused)

    def reject(self, what: str) -> InputError:
        return InputError(f"expression {self.text!r}", f"{what} is not allowed")

    def _named(self, name: str) -> _Eval:
        """A name standing for an expression of its own (a profile's `ep_kernels` condition): compiled in place, so
        the names it reads are the outer expression's."""
        if name in self._expanding:
            raise self.reject(f"'{name}' defined through itself")
        try:
            tree = ast.parse(self.products[name].strip(), mode="eval")
        except SyntaxError as exc:
            raise InputError(f"expression {self.products[name]!r} (named {name})", f"not valid syntax ({exc.msg})") from None
        self._expanding.add(name)
        try:
            return self.compile(tree.body)
        finally:
            self._expanding.discard(name)

    def compile(self, node: ast.AST) -> _Eval:
        if isinstance(node, ast.Constant):
            value = node.value
            # bool is a subclass of int; strings, bytes, None and complex are out
            if isinstance(value, (bool, int, float)) and not isinstance(value, complex):
                return lambda env, v=value: v
            raise self.reject(f"constant {value!r}")
        if isinstance(node, ast.Name):
            if node.id in _CONSTANT_NAMES:
                return lambda env, v=_CONSTANT_NAMES[node.id]: v
            if node.id in FUNCTIONS:
                raise self.reject(f"function name '{node.id}' used as a value")
            if isinstance(self.products.get(node.id), str):  # a named expression reads what its text reads
                return self._named(node.id)
            if node.id in self.products:  # a named product reads its factors: the expression depends on them
                factors = self.products[node.id]
                self.names.update(factors)

                def product(env: Env, factors: tuple[str, ...] = factors) -> Value:
                    value = 1
                    for name in factors:
                        try:
                            value *= env[name]
                        except KeyError:
                            raise _MissingName(name) from None
                    return value

                return product
            self.names.add(node.id)

            def load(env: Env, name: str = node.id) -> Value:
                try:
                    return env[name]
                except KeyError:
                    raise _MissingName(name) from None

            return load
        if isinstance(node, ast.BoolOp):
            parts = [self.compile(v) for v in node.values]
            if isinstance(node.op, ast.And):
                return lambda env: all(bool(p(env)) for p in parts)  # all/any short-circuit like and/or
            return lambda env: any(bool(p(env)) for p in parts)
        if isinstance(node, ast.UnaryOp):
            operand = self.compile(node.operand)
            if isinstance(node.op, ast.Not):
                return lambda env: not operand(env)
            if isinstance(node.op, ast.USub):
                return lambda env: -operand(env)
            if isinstance(node.op, ast.UAdd):
                return lambda env: +operand(env)
            raise self.reject(f"operator '{_SYMBOL.get(type(node.op), type(node.op).__name__)}'")
        if isinstance(node, ast.BinOp):
            op = _BINOPS.get(type(node.op))
            if op is None:
                raise self.reject(f"operator '{_SYMBOL.get(type(node.op), type(node.op).__name__)}'")
            if op in (operator.floordiv, operator.mod) and isinstance(node.right, ast.Constant) \
                    and node.right.value == 0:
                raise self.reject("division or modulo by the constant 0")
            left, right = self.compile(node.left), self.compile(node.right)
            return lambda env: op(left(env), right(env))
        if isinstance(node, ast.Compare):
            ops = []
            for cmp in node.ops:
                fn = _CMPOPS.get(type(cmp))
                if fn is None:
                    raise self.reject(f"comparison '{_SYMBOL.get(type(cmp), type(cmp).__name__)}'")
                ops.append(fn)
            operands = [self.compile(node.left), *(self.compile(c) for c in node.comparators)]

            def compare(env: Env) -> bool:
                # chained like Python: a < b < c means a < b and b < c, each operand evaluated once
                left = operands[0](env)
                for fn, nxt in zip(ops, operands[1:]):
                    right = nxt(env)
                    if not fn(left, right):
                        return False
                    left = right
                return True

            return compare
        if isinstance(node, ast.Call):
            return self.compile_call(node)
        label = {ast.Attribute: "attribute access", ast.Subscript: "subscript", ast.Lambda: "lambda",
                 ast.IfExp: "conditional expression", ast.NamedExpr: "assignment expression"}
        raise self.reject(label.get(type(node), f"syntax '{type(node).__name__}'"))

    def compile_call(self, node: ast.Call) -> _Eval:
        if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
            callee = node.func.id if isinstance(node.func, ast.Name) else "a non-name callee"
            raise self.reject(f"call to {callee} (only min, max, divides)")
        if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
            raise self.reject("keyword or starred arguments")
        args = [self.compile(a) for a in node.args]
        name = node.func.id
        if name == "divides":
            if len(args) != 2:
                raise InputError(f"expression {self.text!r}", "divides(a, b) takes exactly two arguments")
            a, b = args
            return lambda env: _divides(a(env), b(env))
        if len(args) < 2:
            raise InputError(f"expression {self.text!r}", f"{name}() needs at least two arguments")
        fn = min if name == "min" else max
        return lambda env: fn(p(env) for p in args)


NOT_A_CONDITION = ("is a number, not a condition: write a comparison (x > 1), divides(a, b), a yes/no name or "
                   "not / and / or of them (a number holds whenever it is non-zero)")


def is_condition(expr: Expr, flags: frozenset[str] | set[str]) -> bool:
    """Whether `expr` is a yes/no condition: a comparison, divides(a, b), true / false, a name in `flags` (the
    yes/no names: has_mla, is_moe, ...), or not / and / or of conditions. A number in its place (`attn_tp_size + 1`,
    `min(a, b)`) would hold whenever it is non-zero: a rule written that way never binds."""

    def cond(node: ast.AST) -> bool:
        if isinstance(node, ast.Compare):
            return True
        if isinstance(node, ast.Call):
            return isinstance(node.func, ast.Name) and node.func.id == "divides"
        if isinstance(node, ast.Name):
            return node.id in _CONSTANT_NAMES or node.id in flags
        if isinstance(node, ast.Constant):
            return isinstance(node.value, bool)
        if isinstance(node, ast.BoolOp):
            return all(cond(v) for v in node.values)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return cond(node.operand)
        return False

    return cond(expr.tree.body)


def condition_over(text: str, names: frozenset[str] | set[str], reads: str) -> Expr:
    """A profile's `when` condition that may read only `names` (its yes/no names those starting with on_, the
    device flags): compiled, or ValueError naming what is wrong, for a pydantic validator. `reads` says, in the
    error, what the condition is for ("a decode bound", ...)."""
    try:
        expr = compile_expr(text)
    except InputError as exc:
        raise ValueError(f"when: {exc}") from None
    odd = sorted(expr.names - set(names))
    if odd:
        raise ValueError(f"when: reads {', '.join(odd)}; {reads} reads only {', '.join(sorted(names))}")
    if not is_condition(expr, {n for n in names if n.startswith("on_")}):
        raise ValueError(f"when: {expr.text!r} {NOT_A_CONDITION}")
    return expr


@lru_cache(maxsize=1024)
def compile_expr(text: str, products: tuple[tuple[str, tuple[str, ...] | str], ...] = ()) -> Expr:
    """Parse and whitelist-check `text`; raises InputError naming the expression on anything unsupported.
    `products`: names that stand for the product of other names (a profile's tp_group_size), read as that
    product, or (a string) for an expression of their own (a profile's ep_kernels), read as it: the Expr's `names`
    hold the factors and the names read, not the name."""
    if not isinstance(text, str):
        raise InputError("expression", f"expected a string, got {type(text).__name__}")
    source = text.strip()
    if not source:
        raise InputError("expression", "empty expression")
    if len(source) > MAX_EXPR_CHARS:
        raise InputError(f"expression {source[:40]!r}...", f"longer than {MAX_EXPR_CHARS} characters")
    try:
        tree = ast.parse(source, mode="eval")
    except SyntaxError as exc:
        raise InputError(f"expression {source!r}", f"not valid syntax ({exc.msg})") from None
    except (RecursionError, MemoryError, ValueError):
        raise InputError(f"expression {source!r}", "too deeply nested") from None
    compiler = _Compiler(source, dict(products))
    try:
        fn = compiler.compile(tree.body)
    except RecursionError:
        raise InputError(f"expression {source!r}", "too deeply nested") from None
    return Expr(text=source, names=frozenset(compiler.names), tree=tree, _fn=fn)
