"""The names a framework rule reads (specs.profile_rules.RULE_NAMES): a configuration's knobs and derived sizes, the
deployment (world, batch, MTP, ranks per node) and the model's facts, built once per configuration. The group
names (profile_rules.GROUP_NAMES: tp_group_size, attn_group_size) are no entries here: a profile compiles each into
its product of knobs (FrameworkProfile.group_products), so a rule reading one depends on those knobs."""
from __future__ import annotations

from typing import TYPE_CHECKING, Mapping

from solver.errors import InputError
from solver.specs.expr import Value
from solver.specs.hardware import CAPABILITIES, PLATFORMS
from solver.specs.knobs import KNOBS as KNOB_NAMES
from solver.specs.knobs import DERIVED, FOLLOWS, SETTINGS

if TYPE_CHECKING:
    from solver.specs.framework import FrameworkProfile
    from solver.specs.hardware import Hardware
    from solver.specs.model import ModelSpec


# the device's platform (Hardware.platform) as the flags a rule reads: on_rocm is true on a ROCm device
PLATFORM_FLAGS: tuple[str, ...] = tuple(f"on_{p}" for p in PLATFORMS)
# the device's capability family (Hardware.capability) as flags the same way: on_sm100 is true on a B200 or B300
CAPABILITY_FLAGS: tuple[str, ...] = tuple(f"on_{c}" for c in CAPABILITIES)
# every flag a device gives a rule
DEVICE_FLAGS: tuple[str, ...] = PLATFORM_FLAGS + CAPABILITY_FLAGS


def device_flags(platform: str | None, capability: str | None) -> dict[str, bool]:
    """DEVICE_FLAGS' values on a device of `platform` and `capability` (None, unstated: every one of its kind
    false): the one home of the flags every rule environment reads."""
    return {**{f"on_{p}": platform == p for p in PLATFORMS}, **{f"on_{c}": capability == c for c in CAPABILITIES}}


def true_device_flags(hw: "Hardware") -> frozenset[str]:
    """The device flags that hold on `hw`: what a caller carrying a device's facts without the device keeps."""
    return frozenset(k for k, v in device_flags(hw.platform, hw.capability).items() if v)


class RuleEnv(dict):
    """The names a rule reads, plus the model's absent knobs (parallel.absent_knobs): `free` ones (a module
    the model lacks) take no value, Rule.holds quantifies over them; `absent` also holds the tied ones."""

    free: tuple[str, ...] = ()
    absent: tuple[str, ...] = ()


def rule_env(
    config: Mapping[str, int],
    *,
    world: int,
    batch: int,
    mtp: int,
    num_attention_heads: int,
    num_key_value_heads: int,
    n_routed_experts: int,
    has_mla: bool,
    has_dsa: bool,
    o_proj_dim: int,
    has_csa: bool = False,
    has_recurrent_mixer: bool = False,
    has_sliding_window: bool = False,
    ranks_per_node: int,
    platform: str | None = None,
    capability: str | None = None,
    afd: bool = False,
    absent: tuple[str, ...] = (),
) -> dict[str, Value]:
    """The mapping rule expressions read: knobs (missing ones = 1), derived sizes, deployment and model facts.

    `has_csa`: the model's attention is compressed sparse attention (attention_kind "csa", layers.compressed:
    DeepSeek-V4's layer kind), which an engine feature may be limited to. `has_recurrent_mixer`: a mixer
    carries a state from token to token (ModelSpec.recurrent_mixers: Mamba, linear attention, ...), which an
    engine's token split may not run. `has_sliding_window`: a mixer keeps a sliding window of raw keys
    (ModelSpec.has_sliding_window), whose cache an engine's sequence split may not run. `platform`: the
    device's (Hardware.platform), read as the flags on_<platform> (None, a device that states none: every one
    false); `capability`, its capability family (Hardware.capability), read as the flags on_<capability> the
    same way.
    For MLA models pass num_key_value_heads = num_attention_heads (their configs may omit it); o_proj_dim is
    num_attention_heads * v_head_dim. `absent`: knobs of modules the model lacks (parallel.absent_knobs); a
    tied one (o_proj outside MLA) takes its attention value, the others are free.
    """
    unknown = sorted(set(config) - set(KNOB_NAMES) - set(SETTINGS))
    if unknown:
        raise InputError("parallel_config", f"unknown knob(s) {', '.join(unknown)}")
    knobs = {k: int(config.get(k, 1)) for k in KNOB_NAMES}
    redundant = int(config.get("redundant_experts", 0))
    if redundant < 0:
        raise InputError("parallel_config.redundant_experts", f"must be >= 0, got {redundant}")
    for k, v in knobs.items():
        if v < 1:
            raise InputError(f"parallel_config.{k}", f"must be >= 1, got {v}")
    for k in absent:
        if k in FOLLOWS:
            knobs[k] = knobs[FOLLOWS[k]]
    # rules read `world` as the ranks of one pipeline stage: TP, DP and EP live inside a stage (engines.md: vLLM
    # world = TP x DP x PP), so every rule written for a world holds per stage; pp_size * world is all ranks
    world = world // knobs["pp_size"] if world % knobs["pp_size"] == 0 else world
    env = RuleEnv({
        **knobs,
        "redundant_experts": redundant,
        **{size: world // knobs[knob] for size, knob in DERIVED.items()},  # attn_dp_size, moe_ep_size
        "world": world,
        "batch": batch,
        "mtp": mtp,
        "ranks_per_node": ranks_per_node,
        "afd": bool(afd),
        **device_flags(platform, capability),
        "num_attention_heads": num_attention_heads,
        "num_key_value_heads": num_key_value_heads,
        "n_routed_experts": n_routed_experts,
        "has_mla": bool(has_mla),
        "has_dsa": bool(has_dsa),
        "has_csa": bool(has_csa),
        "has_recurrent_mixer": bool(has_recurrent_mixer),
        "has_sliding_window": bool(has_sliding_window),
        "is_moe": n_routed_experts > 0,
        "o_proj_dim": o_proj_dim,
    })
    env.absent = tuple(absent)
    env.free = tuple(k for k in absent if k not in FOLLOWS)
    return env


def model_env(config: Mapping[str, int], model: "ModelSpec", ranks_per_node: int, *, world: int, batch: int = 1,
              mtp: int = 0, platform: str | None = None, capability: str | None = None) -> dict[str, Value]:
    """rule_env with the model facts read from a ModelSpec, and its absent knobs."""
    return rule_env(config, world=world, batch=batch, mtp=mtp, ranks_per_node=ranks_per_node, platform=platform,
                    capability=capability, **model_facts(model))


def device_facts(hw: "Hardware") -> dict:
    """The rule_env arguments a device gives: its ranks per node, its platform and its capability family."""
    return dict(ranks_per_node=hw.ranks_per_node, platform=hw.platform, capability=hw.capability)


def unstated_platform_note(hw: "Hardware", fw: "FrameworkProfile") -> str | None:
    """A device that states no platform (or no capability) reads every on_<platform> (on_<capability>) flag false,
    so the engine's rules limited to one hold on it unchecked: said, with what would check them; None where none
    is left unchecked."""
    notes = []
    for field, value, kinds, flags in (("platform", hw.platform, PLATFORMS, PLATFORM_FLAGS),
                                       ("capability", hw.capability, CAPABILITIES, CAPABILITY_FLAGS)):
        unread = [r.id for r in fw.rules if r.names & set(flags)] if value is None else []
        if unread:
            notes.append(f"{hw.name} states no {field} ({', '.join(kinds)}): {fw.name}'s rules limited to one "
                         f"({', '.join(unread)}) were not applied; set `{field}:` in the device file to apply them")
    return "; ".join(notes) or None


def model_facts(model: "ModelSpec") -> dict:
    """The rule_env arguments a ModelSpec gives (its facts and absent knobs): read once by a caller building
    many environments of one model (the planner's rule tables)."""
    from solver.specs.parallel import absent_knobs

    return dict(num_attention_heads=model.num_attention_heads, num_key_value_heads=model.num_key_value_heads,
                n_routed_experts=model.num_experts, has_mla=model.has_mla, has_dsa=model.has_dsa,
                has_csa=model.attention_kind == "csa", has_recurrent_mixer=bool(model.recurrent_mixers),
                has_sliding_window=model.has_sliding_window,
                o_proj_dim=model.o_proj_dim, absent=absent_knobs(model))
