"""Rules from the user-level review of the position-encoding notes, the fp32 serving dtype and the encoders'
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
    assert "RoPE scaling (YaRN etc.) that extends it" in rotary
    (table,) = context_notes(_spec("openai-community--gpt2"), 4352)
    assert "no engine serves that length" in table


def test_an_alibi_model_past_its_context_is_noted_not_refused() -> None:
    out = run("solve", str(DATA / "text/mosaicml--mpt-7b.json"), "--hardware", "h100_sxm", "--cards", "1",
              "--framework", "vllm", "--isl", "4096", "--osl", "256")
    assert out.exit_code == 0, out.stderr
    assert "ALiBi has no position table" in out.stdout + out.stderr and "RoPE" not in out.stdout + out.stderr
