"""Which of a configuration's knobs the engine's profile holds where they are: every other value the stage's ranks
allow breaks one of its error rules (ATOM's and vLLM's embedding and LM head follow TP). A candidate's reason then
names the rule, not the estimate, as what set the knob."""
from __future__ import annotations

from solver.space.domains import divisors
from solver.specs.framework import FrameworkProfile
from solver.specs.hardware import Hardware
from solver.specs.model import ModelSpec
from solver.specs.parallel import ParallelConfig
from solver.specs.rule_env import device_facts, model_env


# what holds every split of a one-rank stage at 1
SINGLE_RANK = "the stage's single rank"


def profile_ties(fw: FrameworkProfile, model: ModelSpec, hw: Hardware, pc: ParallelConfig, knobs: tuple[str, ...],
                 batch: int = 1, mtp: int = 0) -> dict[str, str]:
    """knob -> "<framework>'s <rule ids>" for each of `knobs` that no other divisor of the stage's ranks can take
    without breaking an error rule the configuration keeps (the rules every such value breaks), or "the stage's
    single rank" where there is no other divisor; a knob that one other value leaves legal is free, and absent
    from the result."""
    def broken(settings: dict[str, int]) -> set[str]:
        env = model_env(settings, model, **device_facts(hw), world=pc.world_size, batch=batch, mtp=mtp)
        return {rule.id for rule in fw.violated(env, severity="error")}

    base = pc.settings()
    before = broken(base)
    out: dict[str, str] = {}
    for knob in knobs:
        others = [d for d in divisors(pc.stage_world) if d != base.get(knob, 1)]
        if not others:  # a stage of one rank: nothing to split over, whatever the rules
            out[knob] = SINGLE_RANK
            continue
        held: set[str] | None = None
        for d in others:
            new = broken({**base, knob: d}) - before
            if not new:
                held = None
                break
            held = new if held is None else held & new
        if held:
            out[knob] = f"{fw.name}'s {', '.join(sorted(held))}"
    return out
