"""Size caps at the boundary: the largest values any input may carry. They keep the planner's integers exact
(CP-SAT takes int64 coefficients; Python floats are exact below 2**53) and its search finite, and they sit far
above anything real, so a cap is only ever hit by a typo.

- MAX_CARDS 65,536: the largest group any shipped hardware YAML describes (`span_ranks: 65536`, the inter-node
  tier of the GPU entries); one deployment of more ranks is outside every topology we can price.
- MAX_TOKENS 2**24 = 16,777,216: 1.6x the longest context a published config declares (Llama-4-Scout,
  `max_position_embeddings` 10,485,760, /work/shared/facts/model_configs); ISL, OSL, sequence length, prefill
  chunk.
- MAX_CONCURRENCY 2**20: requests in flight (or a batch) across one deployment; 256x the planner's default
  upper bound of 4,096.
- MAX_TOP 10: candidates `solve` lists (the seed's format is the top 2-3; each extra one is a search).
- MAX_SEED 2**31 - 1: CP-SAT's `random_seed` is an int32.
- MAX_TIME_LIMIT_S 3,600 s per CP-SAT solve; MAX_WORKERS / MAX_JOBS 256 processes or search threads.
- MAX_MTP 16: next-n depth; a profile caps it lower only where its engine does (`max_mtp`: cann-recipes 3).
- MAX_SLA_MS 1e7 ms (2.8 hours) for a TTFT/TPOT bound; MAX_RATE 1e15 tokens (or requests) per second.
- MAX_NAME 255 characters: a catalog name or a path component (the POSIX NAME_MAX).
- PLAN_METHODS: the planner's searches a `--method` may name (plan.solve: the CP-SAT search, or the exhaustive
  enumeration that cross-checks it).
"""
from __future__ import annotations

MAX_CARDS = 65_536
MAX_TOKENS = 2**24
MAX_CONCURRENCY = 2**20
# the planner's concurrency range when no --concurrency or --max-concurrency is given: powers of two up to it
DEFAULT_MAX_CONCURRENCY = 4096
MAX_TOP = 10
MAX_SEED = 2**31 - 1
MAX_TIME_LIMIT_S = 3600.0
MAX_WORKERS = 256
MAX_JOBS = 256
PLAN_METHODS = ("cpsat", "exhaustive")
MAX_MTP = 16
MAX_SLA_MS = 1e7
MAX_RATE = 1e15
MAX_NAME = 255
# a CP-SAT coefficient or bound must stay an exact integer (below 2**53, a float's exact range) once summed over
# every group and scaled by the tie-break weight (plan.view_model.exact): 2**53 / (128 x 64) units of 0.1 us = 30 h
MAX_COEF = 2**53
