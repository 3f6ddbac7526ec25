"""Sort device kernel/op names into the four classes calibration reports on.

Order matters: communication is tested first (a DeepEP kernel may mention "expert"), then attention (a
FlashAttention kernel may be a `cutlass::device_kernel<flash::...>`), then GEMM/MoE; the rest is "other".
Matching is case-insensitive on the whole (often templated) kernel name.
"""
from __future__ import annotations

import re
from functools import lru_cache

COMMUNICATION = "communication"
ATTENTION = "attention"
GEMM_MOE = "gemm_moe"
OTHER = "other"
CLASSES: tuple[str, ...] = (COMMUNICATION, ATTENTION, GEMM_MOE, OTHER)
COMPUTE_CLASSES: tuple[str, ...] = (ATTENTION, GEMM_MOE, OTHER)

# `(?<![a-z])` / `(?![a-z])` act as word edges that still let "_" and "::" separate words, since kernel
# names glue words with those.
_COMMUNICATION = re.compile(
    r"nccl|rccl|msccl|hccl|hcom|c10d|nvshmem"
    r"|all_?reduce|all_?gather|all_?to_?all|reduce_?scatter|sendrecv|cross_device_reduce"
    r"|(?<![a-z])(?:send|recv|broadcast)(?![a-z])"
    # DeepEP: deep_ep::{intranode,internode,internode_ll}::{dispatch,combine,notify_dispatch,cached_notify,...}
    # (the H800 trace names the namespace dpsk::ep). get_dispatch_layout lives in ep::cuda and only counts
    # tokens locally, so it is deliberately not matched.
    r"|ep::(?:intra|inter)node(?:_ll)?::"
    r"|deepep|deep_ep_(?:dispatch|combine)"
    # Ascend MC2 EP exchange: vllm-ascend 0.23.0.post1 ops/fused_moe/token_dispatcher.py:229-236, 332-336 call
    # torch_npu.npu_moe_distribute_dispatch[_v2] / _combine[_v2], the ops MoeDistributeDispatchV2 ... of its
    # release notes (docs/source/user_guide/release_notes.md:435); tested before "moe" makes them GEMM/MoE
    r"|moe_?distribute_?(?:dispatch|combine)"
)
_ATTENTION = re.compile(
    r"flash|fmha|(?<![a-z])mla|attention|attn|sdpa|paged_?attention|incre_?flash|fusedinferattention"
    r"|promptflash|(?<![a-z])fa[23]?_(?:fwd|bwd)"
    r"|mqa_logits"  # DeepGEMM fp8_mqa_logits: the DSA indexer's scores (compare.py counts them as attention)
)
_GEMM_MOE = re.compile(
    r"gemm|gemv|matmul|cutlass|cublas|xmma|(?<![a-z])bmm(?![a-z])|(?<![a-z])mm(?![a-z])"
    r"|moe|expert|grouped_?mat"
    # ROCm's rocBLAS / hipBLASLt GEMMs are Tensile kernels (sglang 0.5.23 environ.py:1880 "rocBLAS/Tensile"), named
    # by their index contraction C[i,j,k] = A x B: Cijk_Ailk_Bljk_..._MT256x256x64_...
    r"|(?<![a-z])cijk_"
)


@lru_cache(maxsize=65536)
def classify(name: str) -> str:
    """Class of one device kernel/op: "communication", "attention", "gemm_moe" or "other"."""
    low = name.lower()
    if _COMMUNICATION.search(low):
        return COMMUNICATION
    if _ATTENTION.search(low):
        return ATTENTION
    if _GEMM_MOE.search(low):
        return GEMM_MOE
    return OTHER


_BACKWARD = re.compile(r"bwd|backward|wgrad|dgrad")


def is_backward(name: str) -> bool:
    """A backward-pass kernel (FlashAttnBwd, *_bwd_*, wgrad/dgrad GEMMs): the trace is a training step."""
    return _BACKWARD.search(name.lower()) is not None
