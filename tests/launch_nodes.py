"""The nodes' commands of a launch, compared for their layout."""
from __future__ import annotations


def pool_apart(argvs: list[list[str]]) -> list[list[str]]:
    """The commands less vLLM's --kv-cache-memory-bytes, which every node gives alike (the plan's pool per rank:
    tests/test_kvmem47.py checks its value); the callers' cases are about the nodes' layout."""
    flag = "--kv-cache-memory-bytes"
    pools = {a[a.index(flag) + 1] for a in argvs if flag in a}
    assert len(pools) <= 1 and all(int(p) > 0 for p in pools)
    return [a[:a.index(flag)] + a[a.index(flag) + 2:] if flag in a else a for a in argvs]
