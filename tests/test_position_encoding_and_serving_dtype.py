"""The model's position encoding and what it says of a context past the config's (specs/config/positions.py,
specs/notes.py), the fp32 serving dtype (the KV cache at 32 bits, the launch's model dtype) and the encoders'
active parameters: one rule per test."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from solver.cli.main import main
from solver.specs.config.read import parse_model_config
from solver.specs.model import ModelSpec
from solver.specs.notes import context_notes

DATA = Path(__file__).parent / "data" / "configs_unseen"
MODELS = Path(__file__).parent.parent / "models"


def _load(rel: str) -> dict:
    path = DATA / f"{rel}.json"
    return json.loads((path if path.exists() else MODELS / f"{rel}.json").read_text())


def run(*args: str):
    return CliRunner().invoke(main, list(args))


def _spec(rel: str, **edits) -> ModelSpec:
    return parse_model_config({**_load(rel), **edits}, rel.split("/")[-1])


# ------------------------------------------------------------------------------- 1. position encodings


@pytest.mark.parametrize("rel, kind", [
    ("text/mosaicml--mpt-7b", "alibi"),  # attn_config.alibi
    ("bigscience--bloom", "alibi"),  # the family's fact
    ("multi/nvidia--Nemotron-H-8B-Base-8K", "none"),  # NoPE attention
    ("nvidia--NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", "none"),  # the fact wins over its unused rope_theta
    ("state-spaces--mamba-2.8b-hf", "none"),  # no attention
    ("openai-community--gpt2", "learned"),
    ("EleutherAI--pythia-6.9b", "rope"),  # rotary_pct
    ("tiiuae--falcon-7b", "rope"),  # alibi false, FalconConfig's rotary
    ("llava-hf--llava-1.5-7b-hf", "rope"),  # the text_config leaves rope_theta to LlamaConfig's default
    ("text/baichuan-inc--Baichuan2-7B-Chat", "rope"),  # hidden 4096
])
def test_the_position_encoding_is_read_from_the_config_then_the_family(rel: str, kind: str) -> None:
    assert _spec(rel).position_encoding == kind


def test_the_position_encoding_follows_the_configs_own_switches() -> None:
    """alibi: true (Falcon-RW), position_embedding_type (Granite-4.0-H's "nope", Command-A's "rope_gptj"), and
    Baichuan's width rule: ALiBi beyond hidden_size 4096 (Baichuan-13B)."""
    assert _spec("tiiuae--falcon-7b", alibi=True).position_encoding == "alibi"
    assert _spec("ibm-granite--granite-3.1-8b-instruct", position_embedding_type="nope").position_encoding == "none"
    assert _spec("CohereForAI--c4ai-command-a-03-2025").position_encoding == "rope"
    assert _spec("text/baichuan-inc--Baichuan2-7B-Chat", hidden_size=5120).position_encoding == "alibi"


def test_a_context_note_says_what_the_models_position_encoding_allows() -> None:
    """Past the trained context: a rotary model may be served with a RoPE scaling; an ALiBi or NoPE model has no
    table to outrun (a note, no refusal) but no quality guarantee past max_seq_len; a learned table is a hard cap."""
    (alibi,) = context_notes(_spec("text/mosaicml--mpt-7b"), 4096 + 256)
    assert alibi == ("the longest sequence, 4,352 tokens, exceeds mosaicml--mpt-7b's max_seq_len 2,048: ALiBi has no position "
                     "table that limits the length, but max_seq_len is the context it was trained on and quality "
                     "past it is not guaranteed; engines cap the maximum model length at that field unless told to "
                     "allow a longer one")
    (nope,) = context_notes(_spec("multi/nvidia--Nemotron-H-8B-Base-8K"), 8192 + 256)
    assert "max_position_embeddings 8,192: the model encodes no positions" in nope and "RoPE" not in nope
    (rotary,) = context_notes(_spec("EleutherAI--pythia-6.9b"), 4352)
    assert "raise the scaling factor and max_position_embeddings in the config" in rotary
    (table,) = context_notes(_spec("openai-community--gpt2"), 4352)
    assert "no engine serves that length" in table


def test_an_alibi_model_past_its_context_is_noted_not_refused() -> None:
    out = run("solve", str(DATA / "text/mosaicml--mpt-7b.json"), "--hardware", "h100_sxm", "--cards", "1",
              "--framework", "vllm", "--isl", "4096", "--osl", "256")
    assert out.exit_code == 0, out.stderr
    assert "ALiBi has no position table" in out.stdout + out.stderr and "RoPE" not in out.stdout + out.stderr


# ------------------------------------------------------------------------------- 2. the fp32 serving dtype


def test_fp32_weights_cache_kv_at_32_bits_and_say_what_stays_at_16() -> None:
    """--weight-dtype fp32 is the engine's model dtype, and its KV dtype "auto" follows it. RecurrentGemma-2B, 8
    attention layers (every third of 26), one KV head of 256, a 2,048-token window, 8 sequences of 4,096:
    8 x 1 x (256 + 256) x 4 B x 2,048 x 8 = 268,435,456 B (134,217,728 at 16 bits). An explicit --kv-dtype wins."""
    from solver.estimate.request_state import cache_per_rank
    from solver.specs.hardware_catalog import load_hardware
    from solver.specs.parallel import make_parallel_config
    from solver.specs.precision import resolve_precision

    model, h100, pc = _spec("multi/google--recurrentgemma-2b"), load_hardware("h100_sxm"), make_parallel_config(1)
    fp32 = resolve_precision(model, h100, weight_dtype="fp32")
    assert fp32.kv_bytes == 4 and fp32.fmt("norm").name == "fp32"
    assert cache_per_rank(model, pc, fp32, 8, 4096)[0] == 8 * 1 * (256 + 256) * 4 * 2048 * 8 == 268_435_456
    assert any("KV cache is priced at 32 bits" in n and "stay priced at 16 bits" in n for n in fp32.notes)
    assert cache_per_rank(model, pc, resolve_precision(model, h100), 8, 4096)[0] == 134_217_728
    explicit = resolve_precision(model, h100, weight_dtype="fp32", kv_dtype="fp8")
    assert explicit.kv_bytes == 1 and not any("KV cache is priced" in n for n in explicit.notes)
    # a quantized model's KV stays at the 16-bit activation dtype
    assert resolve_precision(model, h100, weight_dtype="fp8").kv_bytes == 2


def test_an_fp32_launch_asks_for_the_model_dtype_not_a_checkpoint() -> None:
    """fp32 is not a quantization: the launch says the engine's model dtype must be fp32 (no profile names the
    flag, so none is invented); a quantized format keeps the checkpoint note."""
    out = run("solve", str(DATA / "multi/google--recurrentgemma-2b.json"), "--hardware", "h100_sxm", "--cards", "1",
              "--framework", "vllm", "--weight-dtype", "fp32", "--isl", "2048", "--osl", "256", "--format", "json")
    assert out.exit_code == 0, out.stderr
    notes = json.loads(out.stdout)["candidates"][0]["launch"]["notes"]
    assert ("weight_dtype fp32: a model dtype, not a quantization (vllm's --quantization takes fp8, not fp32): set "
            "vllm's model (load) dtype to fp32, which its profile has no flag for; its default dtype serves a "
            "checkpoint stored in fp32 at 16 bits") in notes
    assert not any("serve a checkpoint stored in fp32" in n for n in notes)
    argv = json.loads(out.stdout)["candidates"][0]["launch"]["nodes"][0]["argv"]
    assert "--quantization" not in argv and "--dtype" not in argv


# ------------------------------------------------------------------------------- 3. encoders are never active


def test_an_encoder_and_its_projector_are_never_active_for_a_text_token() -> None:
    """benchmarks/README.md: encoders are never active for a text token. Aya-Vision's projector (pixel shuffle by
    2: 1152 x 4 = 4,608 wide; LayerNorm 2 x 4,608; linear_1 4,608 -> 28,672 + bias; SwiGLU halves it; linear_2
    14,336 -> 4,096 + bias) is 190,882,816 parameters, counted in the vision module with the tower, and the active
    count is the total less that whole module; so for every model with an encoder here."""
    import glob

    from solver.errors import InputError
    from solver.estimate.params import ENCODER_MODULES, count_params

    aya = _spec("round4/CohereForAI--aya-vision-8b")
    projector = 2 * 4608 + 4608 * 28672 + 28672 + 14336 * 4096 + 4096
    assert projector == 190_882_816
    rep = count_params(aya)
    (vision,) = [m for m in rep.modules if m.name == "vision"]
    assert vision.params == aya.encoders[0].params and vision.params > projector and vision.active_params == 0
    assert rep.active == rep.total - vision.params
    paths = glob.glob(str(DATA / "**" / "*.json"), recursive=True) + glob.glob(str(MODELS / "*.json"))
    checked = 0
    for path in paths:
        try:
            model = parse_model_config(json.loads(Path(path).read_text()), Path(path).stem)
        except InputError:
            continue
        for m in count_params(model).modules:
            if m.name in ENCODER_MODULES:
                assert m.active_params == 0, (model.name, m.name)
                checked += 1
    assert checked >= 20
