"""The parallel_config's knob names and their CLI flags: plain constants with no imports, so the command line
can build its options without loading pydantic (solver.specs.parallel re-exports them with ParallelConfig)."""
from __future__ import annotations

KNOBS = (
    "attn_tp_size", "dense_tp_size", "moe_tp_size", "embed_tp_size", "lmhead_tp_size", "o_proj_tp_size",
    "cp_size", "kvp_size", "attn_sp_size", "pp_size",
)
# CLI flag for each knob (the seed's names with dashes, shortened as in design.md)
KNOB_FLAGS = {
    "attn_tp_size": "--attn-tp", "dense_tp_size": "--dense-tp", "moe_tp_size": "--moe-tp",
    "embed_tp_size": "--embed-tp", "lmhead_tp_size": "--lmhead-tp", "o_proj_tp_size": "--oproj-tp",
    "cp_size": "--cp", "kvp_size": "--kvp", "attn_sp_size": "--attn-sp", "pp_size": "--pp",
}
# Settings of a parallel_config that are not group sizes (so not divisors of the world): redundant experts are
# extra physical copies of routed experts (EPLB), placed so EP divides experts + redundant (engines.md,
# "redundant experts" row: vLLM --num-redundant-experts, SGLang --ep-num-redundant-experts, TRT-LLM num_slots)
SETTINGS = ("redundant_experts",)
SETTING_FLAGS = {"redundant_experts": "--redundant-experts"}
CONFIG_KEYS = KNOBS + SETTINGS
