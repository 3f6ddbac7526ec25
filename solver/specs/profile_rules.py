"""What a framework profile's rules may read (RULE_NAMES) and a rule itself: `require` must hold whenever `when`
holds, both expressions in the safe language of solver.specs.expr (specs/framework.py holds the profile).
"""
from __future__ import annotations

import itertools
from typing import Literal, Mapping

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

from solver.errors import InputError
from solver.specs.expr import NOT_A_CONDITION, Expr, Value, compile_expr, is_condition
from solver.specs.knobs import DERIVED, DERIVED_NAMES, KNOBS, SETTINGS
from solver.specs.rule_env import DEVICE_FLAGS

KNOB_NAMES: tuple[str, ...] = KNOBS  # re-exported: the registry's knob names (specs.knobs)
KnobName = Literal[KNOBS]  # type: ignore[valid-type]

# What a rule may read. Model facts come from the model's config.json; `afd` (attention-FFN disaggregation)
# is a deployment switch, not a knob, but one framework rule depends on it. `prefill_role`: the deployment's serving
# role, true on a disaggregated prefill pool's worker (SGLang's --disaggregation-mode prefill), false on a decode
# pool's and on one aggregated server; a profile's rules read it as the role of the profile they are bound in
# (FrameworkProfile.for_role), its launch lines as the role the command is emitted for (launch.emit)
DEPLOYMENT_NAMES = ("world", "batch", "mtp", "ranks_per_node", "afd", "prefill_role", *DEVICE_FLAGS)
# parallel_config settings that are not group sizes (parallel.SETTINGS): the redundant expert copies (EPLB)
MODEL_NAMES = (
    "num_attention_heads", "num_key_value_heads", "n_routed_experts", "has_mla", "has_dsa", "has_csa", "is_moe",
    "o_proj_dim", "has_recurrent_mixer", "has_sliding_window",
)
# Group sizes a rule or launch line reads by name, each the product of some knobs (FrameworkProfile.group_products):
# tp_group_size, the engine's tensor-parallel size (its -tp: attention TP times the knobs it carves out of the TP
# ranks, tp_group_knobs); attn_group_size, the ranks one attention group spans, TP x CP x KVP x SP
# (ParallelConfig.attn_group_size; the engine's DP is world // it)
GROUP_NAMES = ("tp_group_size", "attn_group_size")
# Names a profile defines by an expression over the other names (FrameworkProfile.rule_aliases), so that a rule
# reads the very condition or figure its command is built from: ep_kernels, the condition under which the command
# runs the engine's EP kernels (serving.ep_kernels.when; false without one), and replica_batch, one engine
# instance's share of the batch (launch_spec.REPLICA_BATCH)
NAMED_EXPRESSIONS = ("ep_kernels", "replica_batch")
RULE_NAMES: frozenset[str] = frozenset((*KNOB_NAMES, *SETTINGS, *DERIVED_NAMES, *DEPLOYMENT_NAMES, *MODEL_NAMES,
                                        *GROUP_NAMES, *NAMED_EXPRESSIONS))
# the rule names that are yes/no (a `when` or `require` may be one of them alone); the others are numbers
RULE_FLAGS: frozenset[str] = frozenset(("has_mla", "has_dsa", "has_csa", "is_moe", "afd", "prefill_role",
                                        "has_recurrent_mixer", "has_sliding_window", "ep_kernels", *DEVICE_FLAGS))


# Every model of a profile is strict, as a device file is (specs/hardware.py): true is not an efficiency of 1.0 or
# an MTP bound of 1, 0 is not false, "3" is not 3; a YAML slip is refused naming the field rather than coerced.
class Rule(BaseModel):
    """`require` must hold whenever `when` holds; `message` is the one line a user sees otherwise."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)

    id: str = Field(pattern=r"^[A-Z]\.[a-z0-9_]+$", description="class letter + name, e.g. C.cp_full_world")
    when: str = "true"
    require: str
    message: str
    source: str = Field(min_length=1)
    # "warning" marks the engine's advice: a violation is legal but slow or pointless (a fallback path, a split
    # that saves nothing), so `check` accepts such a file with a warning while the planner plans within the rule
    # (a configuration against the engine's advice is never recommended)
    severity: Literal["error", "warning"] = "error"
    # True marks the planner's own bookkeeping (a rule of its cost model, e.g. a disaggregated prefill pool's
    # step filling every replica), not the engine's nor the user's: no one can act on it, so a diagnosis never
    # relaxes it nor names it as binding (cpsat.Planner.families)
    bookkeeping: bool = False

    _when: Expr = PrivateAttr()
    _require: Expr = PrivateAttr()
    _read: tuple[str, ...] = PrivateAttr()  # the names, sorted: what reading() looks up

    @field_validator("message")
    @classmethod
    def _one_line(cls, value: str) -> str:
        value = value.strip()
        if not value or "\n" in value:
            raise ValueError("must be one non-empty line")
        return value

    @model_validator(mode="after")
    def _compile(self) -> "Rule":
        for attr in ("when", "require"):
            try:
                expr = compile_expr(getattr(self, attr))
            except InputError as exc:
                raise ValueError(f"rule {self.id}: {attr}: {exc}") from None
            unknown = sorted(expr.names - RULE_NAMES)
            if unknown:
                raise ValueError(
                    f"rule {self.id}: {attr} uses unknown name(s) {', '.join(unknown)}; "
                    f"allowed: {', '.join(sorted(RULE_NAMES))}"
                )
            if not is_condition(expr, RULE_FLAGS):
                raise ValueError(f"rule {self.id}: {attr}: {expr.text!r} {NOT_A_CONDITION}")
            setattr(self, f"_{attr}", expr)
        self._read = tuple(sorted(self._when.names | self._require.names))
        return self

    def bind(self, products: tuple[tuple[str, tuple[str, ...] | str], ...]) -> None:
        """Read the group names (GROUP_NAMES) as the profile's products of knobs and the named expressions
        (NAMED_EXPRESSIONS) as the profile's expressions: `names` then holds the knobs and names they read."""
        self._when = compile_expr(self.when, products)
        self._require = compile_expr(self.require, products)
        self._read = tuple(sorted(self._when.names | self._require.names))

    @property
    def names(self) -> frozenset[str]:
        return self._when.names | self._require.names

    @property
    def when_names(self) -> frozenset[str]:
        return self._when.names

    def _evaluate(self, attr: str, env: Mapping[str, Value]) -> bool:
        try:
            return bool(getattr(self, f"_{attr}").evaluate(env))
        except InputError as exc:  # a division by a knob that is 0 here: name the rule, not only its text
            raise InputError(f"framework rule {self.id}", f"{attr}: {exc}") from None

    def applies(self, env: Mapping[str, Value]) -> bool:
        return self._evaluate("when", env)

    def _holds_at(self, env: Mapping[str, Value]) -> bool:
        return not self.applies(env) or self._evaluate("require", env)

    def reading(self, env: Mapping[str, Value]) -> tuple:
        """What `holds(env)` reads of `env`: its names' values, the world (over whose divisors a free knob
        ranges) and which knobs are free. Two environments with equal readings get the same verdict."""
        return tuple(map(env.get, self._read)), env.get("world"), tuple(getattr(env, "free", ()))

    def holds(self, env: Mapping[str, Value]) -> bool:
        """True when the rule does not apply or its requirement is met. A knob of a module the model lacks
        (rule_env.RuleEnv.free) has no value: the rule holds when some value of it would satisfy it, so a rule about a
        missing module never constrains the others."""
        free = [k for k in getattr(env, "free", ())
                if k in self.names or any(d in self.names for d, src in DERIVED.items() if src == k)]
        if not free:
            return self._holds_at(env)
        world = int(env["world"])
        values = [d for d in range(1, world + 1) if world % d == 0]
        for combo in itertools.product(values, repeat=len(free)):
            trial = {**env, **dict(zip(free, combo))}
            for derived, src in DERIVED.items():
                trial[derived] = world // int(trial[src])
            if self._holds_at(trial):
                return True
        return False
