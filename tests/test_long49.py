"""Long context as a user meets it (stop 49): the rules the hunt found missing, one test each, figures by hand.

Sources: vLLM 0.34.0 config/model.py:2701-2727 (_get_and_verify_max_len raises for a --max-model-len above the
derived length unless VLLM_ALLOW_LONG_MAX_MODEL_LEN is set), sglang 0.5.23 configs/model_config.py:1291-1316 (the
same for --context-length and SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN); DeepSeek-V3.2's config.json:
max_position_embeddings 163,840, its YaRN block's original 4,096 x factor 40 = 163,840 (no engine multiplies it)."""
from __future__ import annotations

import json

import pytest

from solver.errors import InputError
from solver.launch.read_command import read_command
from solver.specs.hardware_catalog import load_hardware
from tests.deployment_files import run_json

DSV32 = "deepseek-ai/DeepSeek-V3.2"
H200 = load_hardware("h200_sxm")
VLLM_DCP8 = f"vllm serve {DSV32} -tp 8 -dcp 8 --enable-expert-parallel"
SGLANG_TP8 = f"python3 -m sglang.launch_server --model-path {DSV32} --tp-size 8"


@pytest.mark.parametrize("command, switch", [
    (f"{VLLM_DCP8} --max-model-len 200000", "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1"),
    (f"{SGLANG_TP8} --context-length 200000", "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1"),
])
def test_a_pasted_command_past_the_derived_context_without_the_engines_switch_is_refused(command: str,
                                                                                     switch: str) -> None:
    """200,000 > 163,840 and the command sets no switch: the engine raises at start, so the command is refused
    in one line naming the length, the model's limit and the switch (as a flag the parser refuses is)."""
    with pytest.raises(InputError) as err:
        read_command(command, H200)
    assert err.value.field == "--command"
    assert "200,000 exceeds DeepSeek-V3.2's max_position_embeddings 163,840" in err.value.problem
    assert f"sets no {switch}" in err.value.problem and "refuses to start" in err.value.problem


def test_the_engines_switch_lets_a_pasted_command_past_the_context_through() -> None:
    r = read_command(f"VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 {VLLM_DCP8} --max-model-len 200000", H200)
    assert r.max_model_len == 200_000 and r.parallel_config["kvp_size"] == 8


def test_a_pasted_command_within_the_derived_context_needs_no_switch() -> None:
    assert read_command(f"{VLLM_DCP8} --max-model-len 163840", H200).max_model_len == 163_840


def test_the_derived_context_counts_the_rope_factor_the_engine_multiplies(tmp_path) -> None:
    """Qwen3-8B's config with the field at 32,768 and a linear factor 4: vLLM derives 131,072, so 100,000 starts
    and 140,000 is refused with the derived length named."""
    from pathlib import Path

    raw = json.loads((Path(__file__).resolve().parents[1] / "models" / "Qwen--Qwen3-8B.json").read_text())
    path = tmp_path / "qwen3-8b-linear4.json"
    path.write_text(json.dumps({**raw, "max_position_embeddings": 32_768,
                                "rope_scaling": {"type": "linear", "factor": 4.0}}))
    h100 = load_hardware("h100_sxm")
    assert read_command(f"vllm serve {path} --max-model-len 100000", h100).max_model_len == 100_000
    with pytest.raises(InputError) as err:
        read_command(f"vllm serve {path} --max-model-len 140000", h100)
    assert "(131,072 as vllm derives it" in err.value.problem and "within 131,072" in err.value.problem


def test_a_command_without_a_model_length_refuses_requests_past_the_derived_context() -> None:
    """No --max-model-len: vLLM takes the config's 163,840, so a prompt of 170,000 is refused per request
    (api_utils.py:246-250): a class C violation (exit 1), naming the length it takes."""
    r, out = run_json("check", "--command", VLLM_DCP8, "--hardware", "h200_sxm", "--isl", "170000", "--osl", "1000",
                      "--concurrency", "1")
    assert out is not None, r.output
    assert r.exit_code == 1
    assert ("the maximum model length vllm takes from the config when the command sets none, 163,840 holds no "
            "output token after a prompt of ISL = 170,000 tokens") in " ".join(out["violations"]["C"])


def _alone_kit(chunks: int, replicas: int = 1):
    from solver.estimate.closed_loop import ServingPolicy, ServingShape, serving_kit
    from solver.estimate.workload import Workload

    wl = Workload("serving", isl=1_000_000, osl=1024, concurrency=replicas, request_overhead_s=0.024,
                  benchmark_waves=5)
    return serving_kit(ServingShape(1, 1, 1, chunks, synced_ranks=replicas), wl, ServingPolicy(decode_first=True))


def test_one_running_sequence_decodes_at_the_decode_step_as_the_simulated_loop_runs_it() -> None:
    """B = 1 on a replica no other steps with (decode-first): the prompt's 123 chunks (1M tokens at 8,192 a
    step) run alone and its decode steps carry no prompt, so TTFT = o + P_n = 0.024 + 38.21 = 38.234 s and TPOT
    = tau = 7.21 ms, as scheduler.simulate runs the loop (before: 38.94 s and 20.07 ms, the steady state
    spreading q p = 12.9 ms of the next prompt over every decode step of the request that sends it)."""
    from solver.estimate.closed_loop import serving_figures
    from solver.estimate.scheduler import LoopSpec, simulate

    ttft, tpot = serving_figures(_alone_kit(123), 38.21, 0.00721)[:2]
    sim = simulate(LoopSpec(concurrency=1, replicas=1, slots=1, prompts_per_step=1, chunks=123, prefill_s=38.21,
                            decode_s=0.00721, osl=1024, overhead_s=0.024, waves=5), "decode_first")
    assert ttft == pytest.approx(0.024 + 38.21) == pytest.approx(sim.ttft_s)
    assert tpot == pytest.approx(0.00721) == pytest.approx(sim.tpot_s)


def test_one_sequence_per_rank_under_synchronised_ranks_still_decodes_beside_the_others_prompts() -> None:
    """R = 2 attention-DP ranks stepping together, B = 1 each: the other rank's prompt chunks run in the steps
    this rank decodes in, so TPOT stays above tau (the simulated loop agrees: its steps carry them)."""
    from solver.estimate.closed_loop import serving_figures
    from solver.estimate.scheduler import LoopSpec, simulate

    kit = _alone_kit(123, replicas=2)
    assert not kit.alone
    sim = simulate(LoopSpec(concurrency=2, replicas=2, slots=1, prompts_per_step=1, chunks=123, prefill_s=38.21,
                            decode_s=0.00721, osl=1024, overhead_s=0.024, waves=5), "decode_first")
    assert serving_figures(kit, 38.21, 0.00721)[1] > 0.00721 and sim.tpot_s > 0.00721


def test_a_million_token_prompt_alone_is_served_at_its_decode_step() -> None:
    """Llama-4-Scout TP8 on 8 x H200 under vLLM, ISL 1,000,000 / OSL 1,024, one request: TPOT is the decode
    step as the engine runs it (7.21 ms at the mean context 1,000,512; was 20.07 ms) and TTFT the front end plus
    the prompt's 123 chunk steps."""
    from solver import api

    est = api.estimate("llama-4-scout", "h200_sxm", 8, isl=1_000_000, osl=1024, concurrency=1, framework="vllm",
                       attn_tp_size=8, dense_tp_size=8, moe_tp_size=8, embed_tp_size=8, lmhead_tp_size=8).estimate
    assert est.tpot_s == pytest.approx(est.decode_step_s)
    assert est.ttft_s == pytest.approx(est.front_end_s + est.prefill_step_s)
    assert est.tpot_s == pytest.approx(0.00721, rel=0.01)
