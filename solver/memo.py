"""IdentityMemo: values computed once per tuple of objects, keyed by the objects' identities (hashing their
values would cost more than computing again: a model, a block, a cached sums tuple)."""
from __future__ import annotations

from operator import is_
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
        if hit is not None and all(map(is_, hit[0], objs)):
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
