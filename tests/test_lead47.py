"""Rules the lead fixed at stop 47."""
from __future__ import annotations

from solver.specs.model_catalog import load_model


def test_a_context_the_config_leaves_out_is_read_at_its_class_default_and_said():
    # Gemma-3's text_config writes no max_position_embeddings; Gemma3TextConfig's default is 131,072
    # (transformers 5.25.0 configuration_gemma3.py:81), so a 200K plan gets the context note like any other model
    m = load_model("gemma-3-27b-it")
    assert m.max_position_embeddings == 131_072
    assert any("max_position_embeddings absent from config.json: read at Gemma3TextConfig's default 131072" in w
               for w in m.warnings)
