"""Stop 47's user-level hunt on Ascend (Atlas A2 / A3, vllm-ascend and cann-recipes): one test per rule found."""
from __future__ import annotations

import shlex

from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.precision import resolve_precision


def test_weight_only_note_names_the_format_the_user_typed() -> None:
    # `solve deepseek-r1 --hardware atlas_a2 --weight-dtype w4a8` said "--weight-dtype int4: ...", a flag value
    # the user never gave; the note names w4a8 and the missing int4 compute it is weight-only for
    prec = resolve_precision(load_model("deepseek-r1"), load_hardware("atlas_a2"), weight_dtype="w4a8")
    note = next(n for n in prec.notes if "weight-only" in n)
    assert note.startswith("--weight-dtype w4a8: atlas_a2 has no int4 compute"), note


def test_check_command_compares_with_the_launch_at_the_given_weight_dtype() -> None:
    # the vllm-ascend command `solve --weight-dtype int8` printed for DeepSeek-V3.2 on 16 A3 dies, read back by
    # `check --command ... --weight-dtype int8`, was said to differ in --kv-cache-memory-bytes (the launch compared
    # with was sized at the checkpoint's bf16-served weights); at the format the check estimates, no pool note
    from solver.launch.check_command import command_deployment
    from solver.launch.emit import LaunchInputs, emit_launch
    from solver.specs.framework import load_framework
    from solver.specs.parallel import ParallelConfig

    pc = ParallelConfig(world_size=16, attn_tp_size=1, dense_tp_size=4, embed_tp_size=4, lmhead_tp_size=4,
                        o_proj_tp_size=4, attn_sp_size=4, moe_tp_size=1)
    launch = emit_launch(load_framework("vllm-ascend"), load_model("deepseek-v3.2"), load_hardware("atlas_a3"), pc,
                         LaunchInputs(batch=16, max_model_len=4352, weight_dtype="int8"))
    argv = launch["nodes"][0]["argv"]
    assert "--kv-cache-memory-bytes" in argv
    cmd = shlex.join("deepseek-ai/DeepSeek-V3.2" if a == "${MODEL_PATH}" else a for a in argv)
    r, _ = command_deployment(cmd, "atlas_a3", isl=4096, osl=256, weight_dtype="int8")
    assert not [n for n in r.notes if n.startswith("--kv-cache-memory-bytes")], r.notes
