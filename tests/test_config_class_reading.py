"""config.json fields its family's transformers 5.25.0 class never reads, and heads that do not generate.

Each expected count is transformers' own: the fixture's architectures class built on the meta device
(AutoConfig.for_model(**config), sum of the parameters' numel). The fixtures share one size: hidden 1024, 4 layers,
16 heads (8 K/V), intermediate 3072, vocabulary 32,000, head untied."""
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from solver.cli.main import main
from solver.errors import InputError
from solver.estimate.params import count_params
from solver.specs.config.read import parse_model_config
from solver.specs.layers import Attention, DenseFFN, MoE

DATA = Path(__file__).parent / "data"
HUNT = DATA / "configs_class_reading"


def _raw(name: str) -> dict:
    return json.loads((HUNT / name).read_text())


def _parse(raw: dict, name: str = "fixture"):
    return parse_model_config(raw, name, origin=name)


def _windows(m) -> list[int | None]:
    return [next(b.window for b in layer.blocks if isinstance(b, Attention)) for layer in m.layers]


def test_llama_mlp_is_gated_whatever_the_activation():
    """LlamaMLP builds gate / up / down for hidden_act relu2 as for silu (transformers: 115,876,864).
    Embedding + head 2 x 32,000 x 1024 = 65,536,000; a layer: q / o 2 x 1024^2 + k / v 2 x 1024 x 512 = 3,145,728,
    the MLP 3 x 1024 x 3072 = 9,437,184, two norms 2048: 12,584,960, x 4 = 50,339,840; the final norm 1024.
    Read as up / down only it was 103,293,952 (one 1024 x 3072 matrix a layer short)."""
    assert count_params(_parse(_raw("llama_relu2.json"))).total == 115_876_864


def test_qwen3_mlp_is_gated_whatever_the_activation():
    """Qwen3MLP, relu2 (transformers: 128,460,800): head_dim 128, so q / o 2 x 1024 x 2048 + k / v 2 x 1024 x 1024
    = 6,291,456, q / k norms 256, the gated MLP 9,437,184, norms 2048: 15,730,944 a layer, x 4 = 62,923,776;
    + 65,536,000 + 1024."""
    assert count_params(_parse(_raw("qwen3_relu2.json"))).total == 128_460_800


@pytest.mark.parametrize("path", ["configs_defaults/nemotron.json", "configs_defaults/arcee.json",
                                  "configs_defaults/jais2.json", "configs_defaults/nemotron_h.json",
                                  "configs_defaults/cosmos3_edge.json"])
def test_relu2_families_whose_mlp_class_has_no_gate_stay_ungated(path: str):
    """NemotronMLP, ArceeMLP, Jais2MLP, NemotronHMLP / NemotronHExperts and Cosmos3EdgeTextMLP hold up and down
    only: their family's line says so (_gated_mlp false), not their activation's name."""
    m = _parse(json.loads((DATA / path).read_text()), path)
    ffns = [b for layer in m.layers for b in layer.blocks if isinstance(b, (DenseFFN, MoE))]
    assert ffns and not any(b.gated for b in ffns)


def test_shared_expert_fields_the_class_never_builds_count_nothing():
    """Qwen3MoeSparseMoeBlock holds a router and the routed experts only: num_shared_experts 1 and
    shared_expert_intermediate_size 2048 add nothing (transformers: 141,076,480; read, 166,242,304, +3 x 1024 x 2048
    a layer). A layer: attention 6,291,456 + q / k norms 256, router 8 x 1024 = 8192, experts 8 x 3 x 1024 x 512 =
    12,582,912, norms 2048: 18,884,864, x 4 = 75,539,456; + 65,536,000 + 1024. A note names both fields."""
    m = _parse(_raw("qwen3_moe_shared_expert_fields.json"))
    assert count_params(m).total == 141_076_480
    assert all(b.shared_inter == 0 for layer in m.layers for b in layer.blocks if isinstance(b, MoE))
    assert any("num_shared_experts, shared_expert_intermediate_size: not read" in w for w in m.warnings)


@pytest.mark.parametrize("name", ["phi3_max_window_layers.json", "mixtral_use_sliding_window_false.json",
                                  "starcoder2_max_window_layers.json"])
def test_window_switches_the_class_never_reads_leave_every_layer_windowed(name: str):
    """Phi3Attention, MixtralAttention and Starcoder2Attention pass config.sliding_window (2048) in every layer and
    their configs have no use_sliding_window nor max_window_layers: all 4 layers slide (read, max_window_layers 2
    windowed layers 2..3, use_sliding_window false none). The unread field is named in a note."""
    raw = _raw(name)
    m = _parse(raw)
    assert _windows(m) == [2048] * 4
    written = [k for k in ("use_sliding_window", "max_window_layers") if k in raw]
    assert any(w.startswith(f"{written[0]}: not read") for w in m.warnings)


@pytest.mark.parametrize("architecture", ["Qwen3ForSequenceClassification", "Qwen3ForQuestionAnswering"])
def test_a_head_that_does_not_generate_is_refused(architecture: str):
    """Qwen3ForSequenceClassification builds a score head (hidden x num_labels) in place of the vocabulary head and
    is run once per prompt (transformers: 95,693,824, not the generator's 128,460,800); a question-answering head
    emits start / end logits. Neither decodes token by token, which is what shardplan plans."""
    raw = dict(_raw("qwen3_sequence_classification.json"), architectures=[architecture])
    with pytest.raises(InputError) as e:
        _parse(raw)
    assert "architectures" in str(e.value) and architecture in str(e.value)
    assert "no token-by-token decode" in str(e.value)


def test_a_classification_head_is_one_error_line_with_exit_code_2():
    result = CliRunner().invoke(main, ["inspect", str(HUNT / "qwen3_sequence_classification.json")])
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and "architectures" in lines[0]


def test_a_bare_stack_architecture_is_read_as_its_generator_and_said():
    """LlamaModel holds no head (transformers: 83,108,864, the 32,768,000-weight head short); checkpoints still name
    their base class over a generator (Cerebras-GPT's GPT2Model), so it is counted as LlamaForCausalLM (115,876,864
    as above) and a note names architectures."""
    m = _parse(dict(_raw("llama_relu2.json"), architectures=["LlamaModel"]))
    assert count_params(m).total == 115_876_864
    assert any(w.startswith("architectures: LlamaModel is the bare stack") for w in m.warnings)


def test_a_bare_stack_under_remote_code_is_not_noted():
    """A remote-code class named ...Model may hold the head (ChatGLMModel, DreamModel): its code decides, no note."""
    raw = dict(_raw("llama_relu2.json"), architectures=["DreamModel"], auto_map={"AutoModel": "modeling.DreamModel"})
    assert not any(w.startswith("architectures:") for w in _parse(raw).warnings)
