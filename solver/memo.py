"""IdentityMemo: values computed once per tuple of objects, keyed by the objects' identities (hashing their
values would cost more than computing again: a model, a block, a cached sums tuple)."""
from __future__ import annotations

from typing import Callable, Hashable, TypeVar

T = TypeVar("T")


class IdentityMemo:
    """Values keyed by the identities of `objs` plus a hashable `rest`. Each entry keeps its objects, so an id
    that is freed and reused cannot match another object; past `limit` entries the memo starts over."""

    __slots__ = ("_store", "_limit")

    def __init__(self, limit: int) -> None:
        self._store: dict[tuple, tuple[tuple, object]] = {}
        self._limit = limit

    def get(self, objs: tuple, rest: Hashable, build: Callable[[], T]) -> T:
        key = (*map(id, objs), rest)
        hit = self._store.get(key)
        # a hit holds the very objects: the entry keeps alive the objects its ids name, and two live objects
        # never share an id (no identity check needed; it cost a fifth of a hit)
        if hit is not None:
            return hit[1]  # type: ignore[return-value]
        if len(self._store) >= self._limit:
            self._store.clear()
        out = build()
        self._store[key] = (objs, out)
        return out

    def clear(self) -> None:
        self._store.clear()

    def __len__(self) -> int:
        return len(self._store)
