"""What the Stop 50 memory and pipeline sections left open, one rule each: env switch values read as the engine
reads them, a pipeline stage of no layers, the prefill of uneven stages, the per-module attribution of a
pipeline step, SGLang's NGRAM tree verify, and the multimodal wrappers whose encoder runs data parallel."""
from __future__ import annotations

import pytest
from click.testing import CliRunner

from solver.cli.main import main as cli

LLAMA8 = "meta-llama/Llama-3.1-8B-Instruct"


def _run(*argv: str) -> tuple[int, str]:
    res = CliRunner(env={"COLUMNS": "400"}).invoke(cli, list(argv), catch_exceptions=False)
    return res.exit_code, res.stdout + res.stderr


def _check(command: str, cards: int = 1, *extra: str) -> tuple[int, str]:
    return _run("check", "--command", command, "--hardware", "h100_sxm", "--cards", str(cards), "--isl", "1024",
                "--osl", "128", "--concurrency", "4", *extra)


def test_vllm_env_switch_values_are_stripped_before_they_are_parsed_and_sglangs_are_not() -> None:
    """vLLM 0.34.0 envs.py:1177-1180 reads VLLM_ALLOW_LONG_MAX_MODEL_LEN as .strip().lower() in (1, true): ' 1 '
    and 'TRUE ' turn it on, ' 0' leaves it off; SGLang 0.5.23 environ.py:143-150 EnvBool lower-cases only, so
    ' 1 ' is a value it does not parse (it warns and keeps its default, off)."""
    long = f"vllm serve {LLAMA8} --max-model-len 200000"
    for on in ('" 1 "', '"TRUE "'):
        code, out = _check(f"VLLM_ALLOW_LONG_MAX_MODEL_LEN={on} {long}")
        assert "refuses to start" not in out, out
    code, out = _check(f'VLLM_ALLOW_LONG_MAX_MODEL_LEN=" 0" {long}')
    assert "reads as off" in out and "refuses to start" in out, out
    code, out = _check(f'SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=" 1 " python -m sglang.launch_server '
                       f"--model-path {LLAMA8} --context-length 200000")
    assert "does not parse" in out and "refuses to start" in out, out


def _figures(out: str) -> dict[str, float]:
    line = next(x for x in out.splitlines() if "params_per_card_gb=" in x)
    return {k: float(v) for k, v in (p.split("=") for p in line.split(": ", 1)[1].split(", ") if "=" in p)
            if v.replace(".", "").isdigit()}


def test_a_stage_of_no_layers_is_priced_as_the_engines_run_it_and_a_negative_count_is_refused() -> None:
    """vLLM 0.34.0 distributed/utils.py:227-238 refuses a negative count only: VLLM_PP_LAYER_PARTITION=0,32 runs
    the embedding alone on the first stage and the 32 layers with the LM head on the last, so the heaviest rank
    holds what one stage of all 32 layers and the head holds (Llama-3.1-8B: 6.98 B + 0.53 B parameters, 15.01 GB
    in bf16), more than 1,31's; -1,33 is refused with the engine's reason."""
    pp2 = f"vllm serve {LLAMA8} --tensor-parallel-size 1 --pipeline-parallel-size 2"
    code, out = _check(f"VLLM_PP_LAYER_PARTITION=0,32 {pp2}", 2)
    assert code == 0, out
    empty = _figures(out)
    assert empty["params_per_card_gb"] == 15.01, out
    code, out = _check(f"VLLM_PP_LAYER_PARTITION=1,31 {pp2}", 2)
    assert _figures(out)["params_per_card_gb"] < empty["params_per_card_gb"]
    code, out = _check(f"VLLM_PP_LAYER_PARTITION=-1,33 {pp2}", 2)
    assert code == 2 and "negative layer count" in out and len(out.strip().splitlines()) == 1, out


def test_a_prompts_way_through_an_uneven_prefill_is_every_stage_over_the_fill_and_drain() -> None:
    """A prompt crosses every stage (sum t_i) of a prefill step whose m microbatches take sum t_i + (m - 1) x
    max t_i (pipeline.paced), so its share of the step is m sum / (sum + (m - 1) max): DeepSeek-R1 run 11 / 50
    over PP2 with 4 prompts (m = 2) waits 2 x 61 / (61 + 50) prompt shares, not the equal stages' 4 / 3; the
    balanced 31 / 30 2 x 61 / 92; one stage, or equal stages, keep pp m / (m + pp - 1)."""
    from dataclasses import replace

    from solver.estimate.closed_loop import serving_shape
    from solver.estimate.engine_step import stage_layer_passes
    from solver.estimate.pipeline import prefill_traversal
    from solver.estimate.workload import Workload
    from solver.specs.model_catalog import load_model

    r1 = load_model("deepseek-r1")
    wl = Workload("serving", isl=1024, osl=256, concurrency=4, token_budget=8192)
    for split, want in (((11, 50), 2 * 61 / 111), ((31, 30), 2 * 61 / 92)):
        model = replace(r1, stage_layers=split)
        shape = serving_shape(wl, 1, 4, pp=2, stage_weights=stage_layer_passes(model, 2))
        assert shape.prompts_per_step == 4 and shape.traversal == pytest.approx(want)
    assert prefill_traversal(4, 16, (8.0,), (4,)) == pytest.approx(4 * 4 / 7)
    assert prefill_traversal(1, 8, (61.0,), (1,)) == 1.0


def test_a_pipeline_steps_modules_are_every_stages_as_often_as_each_stands_in_the_step() -> None:
    """A prefill step of 4 prompts over Llama-3.1-8B's 16 / 16 stages (m = 2) is both stages once and the slowest
    (the last, with the LM head) once more: the first stage's embedding is listed by module, the head once per
    time its stage stands in the step, and the modules still sum to the step's stage seconds
    (pipeline.paced); a decode step paced by the slowest stage lists that stage m times."""
    from solver.estimate import pipeline
    from solver.estimate.compute import Work, factors_for
    from solver.estimate.step import pipeline_step
    from solver.specs.framework import load_framework
    from solver.specs.hardware_catalog import load_hardware
    from solver.specs.model_catalog import load_model
    from solver.specs.parallel import ParallelConfig
    from solver.specs.precision import resolve_precision

    llama, hw = load_model(LLAMA8), load_hardware("h100_sxm")
    prec, f = resolve_precision(llama, hw), factors_for(hw, load_framework("vllm").efficiency_for(hw))
    pc = ParallelConfig(world_size=2, pp_size=2)
    step = pipeline_step(llama, hw, pc, prec, f, Work.prefill(1024, 0, 4))
    by_module: dict[str, float] = {}
    for o in step.ops:
        by_module[o.module] = by_module.get(o.module, 0.0) + o.time_s
    assert by_module.get("embedding", 0.0) > 0 and by_module["lm_head"] > 0
    assert pipeline.stage_shares("prefill", 2, (1.0, 2.0), (1, 1)) == (1.0, 2.0)
    assert pipeline.stage_shares("decode", 4, (1.0, 2.0), (1, 1)) == (0.0, 4.0)
    assert pipeline.stage_shares("decode", 1, (1.0, 2.0), (1, 1)) == (1.0, 1.0)
    for phase, m, ts, cs in (("prefill", 3, (1.0, 2.5, 2.0), (1, 2, 1)), ("decode", 2, (1.0, 1.5), (3, 1))):
        shares = pipeline.stage_shares(phase, m, ts, cs)
        assert sum(s * t for s, t in zip(shares, ts)) == pytest.approx(pipeline.paced(phase, m, ts, cs)[0])


def test_a_lookup_trees_verified_tokens_are_the_decode_steps_activation_rows() -> None:
    """SGLang 0.5.23's NGRAM verifies a tree of --speculative-num-draft-tokens tokens a sequence (speculative/
    ngram_worker.py:299-303, 367-381: bs x draft_token_num rows, each given logits): at 256 sequences a tree of 64
    runs 16,384 rows, past the 8,192-token prefill chunk, so the rank holds more than at a tree of 12, and the
    decode step's rows are the workload's verify width (a chain lookup's 1 + depth, which no MTP layer counts)."""
    from solver.estimate.compute import factors_for
    from solver.estimate.serving import Workload, estimate_memory_options
    from solver.specs.framework import load_framework
    from solver.specs.hardware_catalog import load_hardware

    hw = load_hardware("h100_sxm")
    f = factors_for(hw, load_framework("sglang").efficiency_for(hw))
    tree = Workload("serving", isl=1024, osl=256, concurrency=8, mtp=6, verify_tokens=64)
    assert estimate_memory_options(f, tree).decode_rows == 64
    assert estimate_memory_options(f, Workload("serving", isl=1024, osl=256, concurrency=8, mtp=3)).decode_rows == 4
    per_rank = {}
    for tokens in (12, 64):
        code, out = _run("check", "--command", f"python -m sglang.launch_server --model-path {LLAMA8} "
                         f"--speculative-algorithm NGRAM --speculative-num-draft-tokens {tokens} "
                         "--max-running-requests 256", "--hardware", "h100_sxm", "--cards", "1", "--isl", "1024",
                         "--osl", "256", "--concurrency", "256", "--mtp-accept", "0.5")
        per_rank[tokens] = _figures(out)["memory_per_rank_gb"]
    assert per_rank[64] > per_rank[12] + 5, per_rank  # 16,384 rows, each with its logits


def test_a_tower_flag_places_the_towers_only_of_the_wrappers_that_read_it() -> None:
    """vLLM 0.34.0 takes --mm-encoder-tp-mode data only for a wrapper that sets supports_encoder_tp_data
    (config/model.py:855-863; Qwen3VLForConditionalGeneration and its Qwen3.5 subclasses do, gemma3 and mistral3 do
    not): gemma-3's tower stays split over TP 2 (fewer parameters a card than replicated) with a note of the
    fallback, Qwen3.5's is replicated; SGLang's --no-mm-enable-dp-encoder is the switch cleared (its default:
    argparse.BooleanOptionalAction, arg_groups/fields/mm.py:60-67), read, the tower split."""
    def params(command: str) -> tuple[float, str]:
        code, out = _check(command, 2)
        assert code == 0, out
        return _figures(out)["params_per_card_gb"], out

    gemma = "vllm serve google/gemma-3-27b-it --tensor-parallel-size 2"
    split, _ = params(gemma)
    data, out = params(f"{gemma} --mm-encoder-tp-mode data")
    assert data == split and "gemma3 wrapper does not read it" in out and "falls back" in out, out
    qwen = "vllm serve Qwen/Qwen3.5-9B --tensor-parallel-size 2"
    assert params(f"{qwen} --mm-encoder-tp-mode data")[0] > params(qwen)[0]
    sg = "python -m sglang.launch_server --model-path Qwen/Qwen3.5-9B --tp 2"
    cleared, out = params(f"{sg} --no-mm-enable-dp-encoder")
    assert cleared == params(sg)[0] < params(f"{sg} --mm-enable-dp-encoder")[0]
    assert "not read" not in out, out
