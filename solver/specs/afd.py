"""Whether a deployment can run attention-FFN disaggregated (estimate.afd): each refusal is one line naming the
field that breaks it."""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Mapping

from solver.errors import InputError
from solver.specs.knobs import SETTINGS

if TYPE_CHECKING:
    from solver.specs.framework import FrameworkProfile
    from solver.specs.hardware import Hardware
    from solver.specs.model import ModelSpec

FEATURE = "attention_ffn_disaggregation"


def check_afd(fw: FrameworkProfile, model: ModelSpec, hw: Hardware, knobs: Mapping[str, int], world: int,
              phase: str, batch: int, mtp: int, at: Callable[[str], str]) -> None:
    """Refuse AFD where the framework's profile does not support it (features.attention_ffn_disaggregation), on a
    workload other than a decode (the verified AFD deployment decodes; the estimate has no AFD prefill), with MTP
    (the AFD step has no draft passes) or pipeline stages (a profile may offer both; lc-afd runs none), a model
    without routed experts (the facts verify AFD on a MoE, lc-afd, whose sides meet where the router sends tokens
    to experts), an odd world (named as the world size, before any profile rule), or where a profile rule on `afd`
    fails (cann-recipes C.afd_tp_divides_half_world: every TP size divides world/2). `at(key)`: the key as the
    deployment names it ("FILE: afd")."""
    from solver.specs.rule_env import device_facts, model_env

    if not fw.has_feature(FEATURE):
        raise InputError(at("afd"), f"framework {fw.name} does not run attention-FFN disaggregation (its profile's "
                                    f"features.{FEATURE} is not supported); use a framework that does, or drop it")
    if phase != "decode":
        raise InputError(at("afd"), f"attention-FFN disaggregation is estimated for a decode workload only, got "
                                    f"{phase}: give a decode workload")
    if mtp:
        raise InputError(at("mtp"), "the attention-FFN disaggregated step has no MTP draft passes: set it to 0")
    if knobs.get("pp_size", 1) > 1:  # a profile may run both (bring-your-own); no fact says how they interleave
        raise InputError(at("parallel_config.pp_size"), "the attention-FFN disaggregated step has no pipeline "
                                                        "stages (lc-afd runs none): set it to 1")
    if not model.is_moe:
        raise InputError(at("afd"), f"{model.name} has no routed experts: attention-FFN disaggregation is verified "
                                    f"for a MoE model only (lc-afd, verified-configs.md); drop it")
    if world % 2:  # before the profile's rules: an odd world is the world size's fault, whatever they say
        raise InputError(at("world_size"), f"attention-FFN disaggregation splits the world in two halves: "
                                           f"{world} is odd")
    env = {**model_env(dict(knobs), model, **device_facts(hw), world=world, batch=batch, mtp=mtp), "afd": True}
    broken = [r for r in fw.violated(env, "error") if "afd" in r.names]
    # the group sizes that do not divide a half, named so the line says what to change (a setting such as
    # redundant_experts is a count of copies, not a group over ranks)
    bad = [k for k, v in knobs.items() if k not in SETTINGS and v > 1 and (world // 2) % v]
    sizes = ", ".join(f"{k} {knobs[k]}" for k in bad)
    if broken:
        field = f"parallel_config.{bad[0]}" if bad else "parallel_config"
        why = f": {sizes} of {world // 2}" if bad else ""
        raise InputError(at(field), f"[{broken[0].id}] {broken[0].message}{why}")
    if bad:  # a profile without that rule: a group still runs within one half's ranks
        raise InputError(at(f"parallel_config.{bad[0]}"),
                         f"{sizes} does not divide one half's {world // 2} ranks (attention-FFN "
                         f"disaggregation runs each group within a half of the {world})")
