"""What splits one request's KV cache by tokens under an engine, in words: the one home of that text (the seed's
KV warning in check, the decode-CP note, the MLA note of the ranking).

The seed's CP shards each request's tokens, cache included, over its ranks; an engine whose CP ranks each keep
the whole cache (FrameworkProfile.cp_replicates_kv_cache: vLLM's prefill context parallel, whose PCP "does not
increase the KV-cache shard count", vLLM 0.34.0 config/parallel.py) splits a prompt's compute with it, not the
cache: there only KVP (vLLM's decode context parallel) splits it. The seed's other two KV actions, KV offload and a
smaller moe_chunk, are the engine's profile data (kv_offload, moe_chunk), named here in its terms.
"""
from __future__ import annotations

from solver.specs.profile_facts import KVOffload, MoeChunk


def kv_splitters(cp_replicates_kv: bool) -> str:
    """The knobs that split a request's KV cache by tokens under the engine."""
    return "KVP" if cp_replicates_kv else "CP / KVP"


def kv_share_warning(cp_replicates_kv: bool, offload: KVOffload | None = None, moe_chunk: MoeChunk | None = None,
                     moe: bool = False) -> str:
    """The seed's 3.4 warning (KV above half the memory left after weights) with its four actions in the engine's
    terms: the knobs that split the KV (KVP / CP), its KV offload flag (FrameworkProfile.kv_offload: what the host
    tier holds, so the user knows it keeps prefix hits rather than batch room) and, for a MoE model, its moe_chunk
    setting (FrameworkProfile.moe_chunk), each said to be absent where the engine has none."""
    said = "KV cache above 50% of available memory (seed 3.4): consider "
    if cp_replicates_kv:
        said += ("KVP (kvp_size); this engine's CP (cp_size) keeps the whole cache on each of its ranks, so it "
                 "splits prompts' compute, not the KV")
    else:
        said += "KVP / CP"
    if offload is None:
        said += "; KV offload to host: this engine's profile gives none"
    else:
        env = f" with {offload.needs_env.name}={offload.needs_env.reads_on[0]}" if offload.needs_env else ""
        said += (f"; KV offload to host ({offload.flags[0]}{env}: {offload.size}) holds prefix blocks for reuse, not "
                 "the running batch's KV, so it keeps prefix hits, not room for a larger batch (not priced)")
    if moe:
        said += ("; reducing moe_chunk: this engine runs a forward's tokens through the MoE at once (no such setting)"
                 if moe_chunk is None else f"; reducing {moe_chunk.knob} (named, not priced)")
    return said


def cp_decode_form(cp_replicates_kv: bool, cp_repeats: bool = False, cp_shards: bool = False) -> str:
    """How an engine's CP ranks hold and decode a request once its prompt is cached (estimate.step_parts.
    decode_layout), one reading for `check`'s note and `memory`'s cache line: "repeats" (each decodes the whole
    batch over the whole cache: FrameworkProfile.cp_decode_repeats_batch), "copies" (each keeps the whole cache,
    each request decoded on one: cp_replicates_kv_cache), "shards" (each keeps 1/cp of every request and decodes
    the whole batch over it: cp_decode_shards_kv), else "owner" (each request and its whole cache on one of
    them: the ranks decode as attention DP)."""
    if cp_repeats:
        return "repeats"
    if cp_replicates_kv:
        return "copies"
    return "shards" if cp_shards else "owner"


def decode_cp_note(cp: int, cp_replicates_kv: bool, cp_repeats: bool = False, cp_shards: bool = False) -> str:
    """What cp_size does to a decode step (estimate.step_parts.decode_layout, cp_decode_form): its ranks decode
    as attention DP; where they each keep the whole cache they also all-gather every step's new K/V and hidden
    states; where they each decode the whole batch (FrameworkProfile.cp_decode_repeats_batch) they repeat one
    another; where each keeps a shard of every request's cache they each read theirs and merge."""
    form = cp_decode_form(cp_replicates_kv, cp_repeats, cp_shards)
    if form == "shards":
        return (f"cp_size {cp} splits prompts and each request's cache: in decode each of its {cp} ranks keeps 1/{cp} "
                "of every request's KV and runs the whole batch over it, the partial attention outputs merged over "
                "the group (costed in this estimate)")
    if form == "repeats":
        return (f"cp_size {cp} splits prompts: in decode each of its {cp} ranks runs the whole batch with the "
                "attention weights whole and keeps the whole cache, so the step is no faster than cp_size 1 and "
                f"the {cp} ranks add no decode throughput (costed in this estimate); it pays off only where these "
                "ranks also prefill long prompts")
    if form == "copies":
        return (f"cp_size {cp} splits prompts: in decode each request runs on one of its {cp} ranks, and every "
                "step all-gathers the new K/V of every layer and the last hidden states over them, as each keeps "
                "the whole cache (costed in this estimate); it pays off only where these ranks also prefill long "
                "prompts. To split one request's KV in decode use kvp_size")
    return (f"cp_size {cp} splits prompts: this decode step runs the same as cp_size 1 (its ranks decode as "
            "attention DP); it pays off only where these ranks also prefill long prompts. To split one "
            "request's KV in decode use kvp_size")
