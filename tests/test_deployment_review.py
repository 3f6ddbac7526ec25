"""Rules found by a user-level review of the mission's three deployments (DeepSeek-V3.2 on 64 Atlas A3 dies,
Qwen3.5 on 8 MI355X, Llama-3.3-70B on 8 H100): what solve, check, estimate and launch say of one configuration
agrees, and each says it in the deployment's own terms."""
from __future__ import annotations

import json

import yaml
from click.testing import CliRunner

from solver.cli.main import main
from solver.report.digits import rounded

V32_PREFILL = ["deepseek-v3.2", "--hardware", "atlas_a3", "--cards", "64", "--weight-dtype", "int8",
               "--isl", "65536", "--phase", "prefill"]


def _run(*args: str) -> dict:
    r = CliRunner().invoke(main, list(args))
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def test_a_prefill_only_solve_shows_prompt_tokens_per_s_as_estimate_does(tmp_path):
    """A prefill-only plan emits one token per prompt: its throughput is the prompt tokens, which solve shows
    (JSON input_tokens_per_s_per_rank, table column 'prompt tok/s/rank') and check shows as estimate does for
    the same config; the output-token column alone read 0."""
    out = _run("solve", *V32_PREFILL, "--framework", "cann-recipes", "--scenario", "throughput", "--top", "1",
               "--format", "json")
    c = out["candidates"][0]
    pc, e = c["parallel_config"], c["estimation"]
    flags = {"attn_tp_size": "--attn-tp", "embed_tp_size": "--embed-tp", "lmhead_tp_size": "--lmhead-tp",
             "cp_size": "--cp", "dense_tp_size": "--dense-tp", "o_proj_tp_size": "--oproj-tp"}
    knobs = [x for k, f in flags.items() if pc.get(k, 1) > 1 for x in (f, str(pc[k]))]
    est = _run("estimate", "deepseek-v3.2", "--hardware", "atlas_a3", "--cards", "64", "--weight-dtype", "int8",
               "--framework", "cann-recipes", "--phase", "prefill", "--batch", str(e["concurrency"]),
               "--seq-len", "65536", *knobs, "--format", "json")
    assert e["input_tokens_per_s_per_rank"] == rounded(est["input_tokens_per_s_per_rank"], "input_tokens_per_s_per_rank") > 1000
    assert e["tpot_ms"] is None
    dep = tmp_path / "dep.yaml"
    dep.write_text(json.dumps({"model": "deepseek-v3.2", "hardware": "atlas_a3", "framework": "cann-recipes",
                               "world_size": 64, "parallel_config": {k: v for k, v in pc.items() if k in flags},
                               "workload": {"phase": "prefill", "batch": e["concurrency"], "seq_len": 65536},
                               "quant": {"weights": "int8"}}))
    assert _run("check", str(dep), "--format", "json")["estimation"]["input_tokens_per_s_per_rank"] == \
        e["input_tokens_per_s_per_rank"]
    table = CliRunner().invoke(main, ["solve", *V32_PREFILL, "--framework", "cann-recipes", "--top", "1"])
    assert "prompt tok/s/rank" in table.stdout and "prefill only" in table.stdout
    serving = _run("solve", "llama-3.3-70b", "--hardware", "h100_sxm", "--cards", "8", "--top", "1",
                   "--format", "json")
    assert "input_tokens_per_s_per_rank" not in serving["candidates"][0]["estimation"]  # serving: output tokens


def test_explain_prices_the_engines_loss_in_the_figures_the_phase_has():
    """A prefill-only plan has no TPOT (it printed 'TPOT n/a (0.0 -> 0.0 ms)') and its throughput is prompt
    tokens; and an engine 'cannot express' a knob it has but the profile does not model: the line says the
    profile rules it out."""
    lines = _run("solve", *V32_PREFILL, "--framework", "cann-recipes", "--explain", "--format", "json")["explain"]
    line = next(x for x in lines if x.startswith("generic profile's best"))
    assert "TPOT" not in line and "prompt tokens/s per rank" in line and "TTFT" in line
    assert "cann-recipes's profile rules it out" in line


def test_a_kv_format_the_engine_cannot_spell_is_not_planned(tmp_path):
    """solve, sweep and recommend under an engine refuse a KV-cache format its command cannot ask for (exit 2,
    one line naming --kv-dtype), and check reports it as a class C violation (vLLM on H200: its int8 cache,
    int8_per_token_head, runs on its Triton backend only, no MLA one, so not on DeepSeek-V3.2's attention)."""
    base = ["deepseek-v3.2", "--hardware", "h200_sxm", "--framework", "vllm", "--kv-dtype", "int8"]
    for args in (["solve", *base, "--cards", "64"], ["sweep", *base, "--cards", "64", "--scenario", "throughput"],
                 ["recommend", *base, "--cards", "64", "--target-output-tokens-per-s", "1000"]):
        r = CliRunner().invoke(main, args)
        assert r.exit_code == 2, (args[0], r.output)
        assert "error: --kv-dtype: KV-cache dtype int8: vllm runs it on non-MLA attention" in r.stderr, args[0]
    dep = tmp_path / "dep.yaml"
    dep.write_text("model: deepseek-v3.2\nhardware: h200_sxm\nframework: vllm\nworld_size: 64\n"
                   "parallel_config: {attn_tp_size: 4, dense_tp_size: 4, embed_tp_size: 4, lmhead_tp_size: 4}\n"
                   "workload: {isl: 4096, osl: 256, concurrency: 128}\nquant: {weights: int8, kv_cache: int8}\n")
    out = CliRunner().invoke(main, ["check", str(dep), "--format", "json"])
    assert out.exit_code == 1 and any("quant.kv_cache: KV-cache dtype int8" in v
                                      for v in json.loads(out.stdout)["violations"]["C"])
    for fw in ("cann-recipes", "vllm-ascend"):  # the recipe's YAML; the C8 checkpoint's quant description
        ok = CliRunner().invoke(main, ["check", str(dep), "--framework", fw, "--hardware", "atlas_a3", "--format", "json"])
        assert not json.loads(ok.stdout)["violations"]["C"], fw


def test_the_verified_w8a8c8_prefill_deployment_launches_under_cann_recipes(tmp_path):
    """v32-p64-q (DeepSeek-V3.2-Exp, 64 A3 dies, CP64, W8A8C8) checks valid and launches: its parallel block,
    with the weights' and the KV cache's formats as notes (the KV format was refused)."""
    dep = tmp_path / "v32-p64-q.yaml"
    dep.write_text("model: deepseek-v3.2\nhardware: atlas_a3\nframework: cann-recipes\nworld_size: 64\n"
                   "parallel_config: {attn_tp_size: 1, dense_tp_size: 1, moe_tp_size: 1, embed_tp_size: 16, "
                   "lmhead_tp_size: 16, o_proj_tp_size: 1, cp_size: 64}\n"
                   "workload: {phase: prefill, batch: 64, seq_len: 65536}\n"
                   "quant: {weights: int8, moe_weights: int8, kv_cache: int8}\n")
    assert CliRunner().invoke(main, ["check", str(dep)]).exit_code == 0
    doc = _run("launch", str(dep), "--format", "json")
    text = doc["files"]["shardplan-parallel-config.yaml"]
    assert "cp_size: 64" in text and "embed_tp_size: 16" in text and "batch_size: 64" in text
    assert any(n.startswith("kv_dtype int8: cann-recipes takes no flag") for n in doc["notes"])


def test_inspect_shows_the_attention_heads_and_apart_what_tp_must_divide():
    """Qwen3.5-122B-A10B's full attention has 32 query heads and its GatedDeltaNet 16 key heads: inspect said
    'N_h (heads) 16' (the gcd TP must divide); it shows 32, and the 16 on a line that says what it is."""
    from solver.report.model_view import inspect_data
    from solver.specs.model_catalog import load_model

    basic = inspect_data(load_model("qwen3.5-122b-a10b"))["basic"]
    assert basic["N_h (heads)"] == 32 and basic["N_kv (KV heads)"] == 2
    assert basic["TP must divide (gcd of every mixer's head groups)"] == 16
    llama = inspect_data(load_model("llama-3.3-70b"))["basic"]
    assert llama["N_h (heads)"] == 64 and not any(k.startswith("TP must divide") for k in llama)


def test_the_checkpoints_own_16_bit_dtype_needs_no_model_dtype_note():
    """Llama-3.3-70B is stored in bf16: `--weight-dtype bf16` is what the engines serve by default, so the launch
    says nothing (every vLLM / SGLang command said 'set vllm's model (load) dtype to bf16, which its profile has
    no flag for'); fp16 is another dtype and keeps the note."""
    base = ["solve", "llama-3.3-70b", "--hardware", "h100_sxm", "--cards", "8", "--top", "1", "--format", "json"]
    for engine in ("vllm", "sglang", "trtllm"):
        launch = _run(*base, "--framework", engine, "--weight-dtype", "bf16")["candidates"][0]["launch"]
        dtype_notes = [n for n in launch.get("notes", ()) if "dtype" in n]  # trtllm's unverified keys keep theirs
        assert "error" not in launch and not dtype_notes, (engine, dtype_notes)
    fp16 = _run(*base, "--framework", "vllm", "--weight-dtype", "fp16")["candidates"][0]["launch"]
    assert any(n.startswith("weight_dtype fp16: a model dtype") for n in fp16["notes"])


def test_solve_yaml_is_a_deployment_file_check_and_launch_read_by_candidate(tmp_path):
    """solve --format yaml writes the deployment (model, hardware, framework, world size, formats, MTP) at the
    top and each candidate's workload (its own concurrency) in its block: `check FILE --candidate b` and
    `launch FILE --candidate b` read that candidate and give solve's figures and solve's command. The file
    held only the knobs, so checking it meant writing the model, hardware, cards and workload by hand (check has
    no flag for a workload) and deleting the other candidates."""
    args = ["deepseek-v3.2", "--hardware", "atlas_a3", "--cards", "64", "--framework", "vllm-ascend",
            "--weight-dtype", "int8", "--kv-dtype", "bf16", "--mtp", "1", "--isl", "1024", "--osl", "4096"]
    r = CliRunner().invoke(main, ["solve", *args, "--format", "yaml", "--explain"])
    assert r.exit_code == 0, r.output
    path = tmp_path / "solve.yaml"
    path.write_text(r.stdout)
    solved = _run("solve", *args, "--format", "json")["candidates"]
    for letter, cand in zip("abc", solved):
        checked = _run("check", str(path), "--candidate", letter, "--format", "json")
        assert checked["valid"]
        for k in ("ttft_ms", "tpot_ms", "memory_per_rank_gb", "output_tokens_per_s_per_rank"):
            assert checked["estimation"][k] == cand["estimation"][k], (letter, k)
        launched = _run("launch", str(path), "--candidate", str("abc".index(letter) + 1), "--format", "json")
        assert launched["nodes"] == cand["launch"]["nodes"]
    one = CliRunner().invoke(main, ["check", str(path)])
    assert one.exit_code == 2 and "name it with --candidate" in one.stderr
    bad = CliRunner().invoke(main, ["launch", str(path), "--candidate", "d"])
    assert bad.exit_code == 2 and "--candidate: 'd'" in bad.stderr


def test_a_prefill_plan_under_mtp_prints_the_memory_check_and_estimate_give(tmp_path):
    """solve --phase prefill --mtp 2 printed DeepSeek-V3's weights without its MTP layer (58.34 GB per card on
    16 H200) while the file it wrote, checked, gave 59.38 (as estimate does, and a disaggregated prefill pool):
    the planner already held the plan to the memory with the MTP weights; the printed figures now are that."""
    args = ["deepseek-v3", "--hardware", "h200_sxm", "--cards", "16", "--phase", "prefill", "--mtp", "2",
            "--max-concurrency", "64"]
    r = CliRunner().invoke(main, ["solve", *args, "--format", "yaml"])
    assert r.exit_code == 0, r.output
    path = tmp_path / "solve.yaml"
    path.write_text(r.stdout)
    solved = _run("solve", *args, "--format", "json")["candidates"]
    for letter, cand in zip("abc", solved):
        checked = _run("check", str(path), "--candidate", letter, "--format", "json")["estimation"]
        for k in ("params_per_card_gb", "memory_per_rank_gb", "ttft_ms"):
            assert checked[k] == cand["estimation"][k], (letter, k)
    no_mtp = _run("solve", *[a for a in args if a not in ("--mtp", "2")], "--format", "json")["candidates"][0]
    assert solved[0]["estimation"]["params_per_card_gb"] > no_mtp["estimation"]["params_per_card_gb"]


def test_a_key_in_a_candidate_block_is_read_or_refused_never_dropped(tmp_path):
    """A hand-edited solve file: `kv_dtype: fp8` (or world_size) written inside candidate_a was dropped without a
    word (check priced bf16 KV); a candidate block is read for parallel_config and workload, solve's estimation
    and tradeoff beside them are its output, anything else is one exit-2 line naming the key. A candidate block
    that is not a mapping holding parallel_config is named as one (it was 'Extra inputs are not permitted', and
    `--candidate a` said the file held no candidate_x block)."""
    block = {"parallel_config": {"attn_tp_size": 8, "moe_tp_size": 1},
             "workload": {"isl": 4096, "osl": 256, "concurrency": 16},
             "estimation": {"ttft_ms": 1.0}, "tradeoff": {"latency": "advantage"}}
    top = {"model": "qwen3-30b-a3b", "hardware": "h100_sxm", "world_size": 8}
    path = tmp_path / "dep.yaml"
    path.write_text(yaml.safe_dump({**top, "candidate_a": block}))
    assert CliRunner().invoke(main, ["check", str(path)]).exit_code == 0
    for bad, field in (({**block, "kv_dtype": "fp8"}, "candidate_a.kv_dtype"), ([1, 2], "candidate_a"),
                       ({"parallel_conifg": {"attn_tp_size": 8}}, "candidate_a")):
        path.write_text(yaml.safe_dump({**top, "candidate_a": bad}))
        for args in ([], ["--candidate", "a"]):
            r = CliRunner().invoke(main, ["check", str(path), *args])
            assert r.exit_code == 2 and r.stderr.count("\n") == 1, r.output
            assert r.stderr.startswith(f"error: {path}: {field}:"), r.stderr


def test_an_engine_rule_that_leaves_no_attention_layout_is_named_with_the_size_that_fits():
    """ATOM runs on one node (C.single_node): on 16 MI355X the refusal named only B.tp_within_node (the TP16 it
    pruned) and offered a shorter sequence and smaller weights, which cannot help; it names C.single_node and
    only the size that fits. recommend (one deployment: --max-copies 1) stops saying 'try more cards' when the
    larger sizes have no configuration."""
    r = CliRunner().invoke(main, ["solve", "qwen3.5-122b-a10b", "--hardware", "mi355x", "--cards", "16",
                                  "--framework", "atom"])
    assert r.exit_code == 1
    line = r.stderr.strip().splitlines()[-1]
    assert "no attn layout is left (B.tp_within_node, C.single_node)" in line
    assert "8 cards fit" in line and "shorter sequence" not in line and "smaller weights" not in line
    rec = CliRunner().invoke(main, ["recommend", "qwen3.5-122b-a10b", "--hardware", "mi355x", "--framework", "atom",
                                    "--isl", "4096", "--osl", "1024", "--target-output-tokens-per-s", "20000",
                                    "--tpot-ms", "30", "--cards", "8,16", "--max-copies", "1"])
    assert rec.exit_code == 1
    assert "try more cards" not in rec.stderr
    assert "the larger sizes tried (16 cards) have no feasible configuration" in rec.stderr and "C.single_node" in rec.stderr


def test_an_sla_remedy_quotes_the_figure_without_exponent():
    """Llama-3.3-70B on 8 H100 under TRT-LLM with 32K prompts and TTFT <= 800 ms: the remedy said 'shows TTFT
    1.22e+03 ms'; it says '1,220 ms' (three figures, no exponent)."""
    from solver.errors import three_figures

    assert [three_figures(v) for v in (2750.4, 1217.9, 6.342, 0.01234, 99.95, 0.0)] == \
        ["2,750", "1,220", "6.34", "0.0123", "100", "0"]
    r = CliRunner().invoke(main, ["solve", "llama-3.3-70b", "--hardware", "h100_sxm", "--cards", "8", "--framework",
                                  "trtllm", "--weight-dtype", "fp8", "--isl", "32768", "--ttft-ms", "800"])
    assert r.exit_code == 1 and "SLA.ttft binds" in r.stderr
    # 1,200 rounded up (1,230 before stop 49: its single replica's TTFT carried a steady-state residual)
    assert "e+0" not in r.stderr and "shows TTFT 1,200 ms" in r.stderr


def test_explain_says_a_baseline_breaks_the_batch_rule_only_at_the_winners_concurrency():
    """cann-recipes wants the batch divisible by the attention DP: a seed baseline priced at #1's concurrency
    (8 prompts) breaks it, but it is itself listed at its own (64): explain said 'Attn DP + CP64 + MoE EP: violates
    C.batch_divisible_attn_dp' beside candidate #3 with those knobs; it says where and cross-references it."""
    out = _run("solve", *V32_PREFILL, "--framework", "cann-recipes", "--explain", "--format", "json")
    first = out["candidates"][0]["estimation"]["concurrency"]
    listed = next(c["rank"] for c in out["candidates"] if c["pattern"].startswith("Attn DP + CP64 + MoE EP"))
    cp = next(x for x in out["explain"] if x.startswith("Attn DP + CP64 + MoE EP:"))
    assert cp.endswith(f"violates C.batch_divisible_attn_dp at #1's concurrency {first} [listed as #{listed} at its "
                       "own concurrency]")


def test_the_vocabulary_split_advice_is_a_note_where_the_engine_ties_it_to_tp(tmp_path):
    """Llama-3.3-70B FP8 as DP8 under vLLM: memory binds and both vocabulary tables are whole on every rank, but
    vLLM ties embed/lm_head TP to --tensor-parallel-size (C.embed_tp_is_tp): 'set their TP independently' was a
    common error the user cannot act on; it is a note naming the rules. Under the generic profile it stays."""
    dep = tmp_path / "dp8.yaml"
    dep.write_text("model: llama-3.3-70b\nhardware: h100_sxm\nworld_size: 8\nparallel_config: {attn_tp_size: 1}\n"
                   "workload: {isl: 1024, osl: 1024, concurrency: 64}\nquant: {weights: fp8}\n")
    vllm = _run("check", str(dep), "--framework", "vllm", "--format", "json")
    assert not any("embed/lm_head" in e for e in vllm["common_errors"])
    assert any("vllm ties them to the TP size here (C.embed_tp_is_tp, C.lmhead_tp_is_tp)" in n for n in vllm["notes"])
    generic = _run("check", str(dep), "--format", "json")
    assert any("set their TP independently" in e for e in generic["common_errors"])


def test_the_vocabulary_split_advice_names_only_the_splits_the_engine_allows(tmp_path):
    """TensorRT-LLM keeps the embedding with attention (C.embed_tp_is_attn_tp) but lets the LM head span every
    rank under attention DP: the advice names lm_head alone, at the widest TP the stage holds (8), not the
    seed's '16' of a larger reference."""
    dep = tmp_path / "dp8.yaml"
    dep.write_text("model: llama-3.3-70b\nhardware: h100_sxm\nworld_size: 8\nparallel_config: {attn_tp_size: 1}\n"
                   "workload: {isl: 1024, osl: 1024, concurrency: 64}\nquant: {weights: fp8}\n")
    r = CliRunner().invoke(main, ["check", str(dep), "--framework", "trtllm", "--format", "json"])
    assert r.exit_code == 1  # a dense model runs TP over every rank under trtllm (C.attention_dp_moe_only)
    advice = [e for e in json.loads(r.stdout)["common_errors"] if "embed/lm_head" in e]
    assert len(advice) == 1 and advice[0].endswith("set their TP independently (trtllm allows lmhead_tp_size up to 8 "
                                                   "here)")
