"""The planner's module groups: which knobs each group's choice sets (GROUPS), the order the bounds fill them
in (FILL_ORDER), and which group each module belongs to (module_groups). A configuration is one choice per
group; plan.tables costs each group's choices.
"""
from __future__ import annotations

from solver.estimate.params import ParamReport
from solver.specs.knobs import KNOB_SPECS, SETTING_GROUP, SPLIT_ONLY, group_knobs

# Pipeline stages change every group's cost (layers per stage, ranks per stage), so the stage count is the
# last entry of every group's choice and the planner makes all groups pick the same one (SHARED): with it
# fixed, the groups stay additive. Which group owns which knob is the registry's (specs.knobs); an attention
# choice is spelled layout first (TP, CP, KVP, SP), then o_proj TP, as the planner reads it by position.
SHARED = group_knobs("stage")
ATTN_ORDER = ("attn_tp_size", "cp_size", "kvp_size", "attn_sp_size", "o_proj_tp_size")
# redundant experts ride with MoE TP: the planner places the fewest that make EP divide the experts
# (space.domains.redundant_for), so each MoE choice is (moe_tp, redundant, pp)
GROUPS: dict[str, tuple[str, ...]] = {
    g: (*(ATTN_ORDER if g == "attn" else group_knobs(g)), *(k for k, sg in SETTING_GROUP.items() if sg == g), *SHARED)
    for g in dict.fromkeys(k.group for k in KNOB_SPECS if k.group != "stage")
}
# the non-attention groups in the order the planner's bounds fill them: the usually largest share first, so a
# layout that cannot win is dropped before the rest are costed; dense last, as its pairwise correction with
# MoE (negative) is only known once both are (a bound over MoE and dense without it would not be one)
FILL_ORDER = ("moe", "lmhead", "embed", "dense")
# a module belongs to the group of the knob that owns it (each layer block declares its modules' knobs:
# specs/layers); shared experts follow the dense group's knob by default (MemoryOptions.shared_experts_knob)
KNOB_GROUP: dict[str, str] = ({k: g for g, knobs in GROUPS.items() for k in knobs if k not in SHARED}
                              | {k: g for k, g in SPLIT_ONLY.items() if g})


def module_groups(params: ParamReport) -> dict[str, str | None]:
    """module name -> planner group (None: replicated, owned by no knob: norms, MTP glue; a vision / audio
    encoder is the attention group's, split there only where the engine splits it: weights.split_degree)."""
    return {name: KNOB_GROUP.get(knob) if knob else None for name, knob in params.knobs().items()}
