"""Which layers of a config.json the reader has not seen slide under a window.

Each expectation is transformers 5.25.0's own reading of the fixture (AutoConfig.for_model(...).layer_types, or the
attention's config.sliding_window where the class builds no layer_types)."""
import json
from pathlib import Path

from solver.specs.config.read import parse_model_config
from solver.specs.layers import Attention

DATA = Path(__file__).parent / "data" / "configs_windows"


def _windows(name: str) -> list[int | None]:
    raw = json.loads((DATA / name).read_text())
    m = parse_model_config(raw, name, origin=name)
    return [next(b.window for b in layer.blocks if isinstance(b, Attention)) for layer in m.layers]


def test_use_sliding_window_without_max_window_layers_windows_every_layer():
    """Qwen3MoeConfig has no max_window_layers: use_sliding_window true with sliding_window 512 windows all 4 layers
    (Qwen3MoeAttention reads config.sliding_window in every layer), not none of them."""
    assert _windows("qwen3_moe_use_sliding_window.json") == [512] * 4


def test_max_window_layers_left_out_is_the_class_default():
    """Qwen2Config's max_window_layers defaults to 28: of 32 layers, 28..31 slide (4 x w512), 0..27 are full."""
    assert _windows("qwen2_legacy_use_sliding_window.json") == [None] * 28 + [512] * 4


def test_qwen2_moe_windows_the_even_layers_below_max_window_layers():
    """Qwen2MoeConfig's layer_types: sliding where i is even and i < max_window_layers (6): layers 0, 2, 4 of 8."""
    assert _windows("qwen2_moe_use_sliding_window.json") == [512, None, 512, None, 512, None, None, None]


def test_window_from_max_window_layers_without_use_sliding_window():
    """Dots1Config reads no use_sliding_window: sliding_window 4096 windows the layers from max_window_layers (its
    default 62) on, none of 62, not all of them as sliding_window alone would."""
    assert _windows("dots1_window_no_layer_types.json") == [None] * 62


def test_window_left_out_is_the_class_default():
    """Gemma-3-27B's text_config without sliding_window: Gemma3TextConfig's 4096 on the 5-of-6 sliding layers
    (sliding_window_pattern 6: layers 5, 11, ..., 59 full, 10 of 62), not a refusal of a field the class fills."""
    windows = _windows("gemma3_no_sliding_window.json")
    full = [i for i, w in enumerate(windows) if w is None]
    assert full == list(range(5, 62, 6)) and len(full) == 10
    assert set(windows) - {None} == {4096}


def test_cohere2_window_and_pattern_left_out_are_the_class_defaults():
    """Cohere2Config() builds a 4096 window on 3 of every 4 layers (sliding_window_pattern 4): of 8 layers 3 and 7
    are full, not every layer full (no window read) nor every layer windowed (the window read without its pattern)."""
    assert _windows("cohere2_no_window_fields.json") == [4096, 4096, 4096, None] * 2


def test_dtype_is_read_over_torch_dtype():
    """A config writing both (transformers >= 4.56 writes dtype, older tools torch_dtype) is stored as dtype says:
    PretrainedConfig keeps dtype and takes torch_dtype only where dtype is unset. float32 over bfloat16: fp32."""
    raw = json.loads((DATA / "qwen2_legacy_use_sliding_window.json").read_text())
    raw.update(dtype="float32", torch_dtype="bfloat16")
    quant = parse_model_config(raw, "both", origin="both").quant
    assert (quant.dense, quant.attention, quant.embedding) == ("fp32", "fp32", "fp32")
