"""Readers that turn a Hugging Face config.json into a layer stack, by convention (not by family)."""
