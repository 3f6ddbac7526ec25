"""shardplan: per-module parallel configurations for LLM inference."""
