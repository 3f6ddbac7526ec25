"""IdentityMemo: values per tuple of objects by identity, each entry holding its objects."""
from __future__ import annotations

from solver.memo import IdentityMemo


class _Obj:
    def __eq__(self, other: object) -> bool:  # equal by value: the memo must not care
        return True

    def __hash__(self) -> int:
        return 0


def test_an_equal_but_other_object_is_computed_again() -> None:
    memo, calls = IdentityMemo(8), []
    a, b = _Obj(), _Obj()
    assert memo.get((a,), 1, lambda: calls.append("a") or "A") == "A"
    assert memo.get((a,), 1, lambda: calls.append("a2") or "A2") == "A"  # hit: same object, same rest
    assert memo.get((b,), 1, lambda: calls.append("b") or "B") == "B"  # equal value, other object
    assert memo.get((a,), 2, lambda: calls.append("a3") or "A3") == "A3"  # other rest
    assert calls == ["a", "b", "a3"]


def test_the_memo_starts_over_past_its_limit() -> None:
    memo = IdentityMemo(2)
    objs = [object() for _ in range(3)]
    for o in objs:
        memo.get((o,), None, lambda: 0)
    assert len(memo) == 1  # the third entry cleared the first two


def test_an_entry_keeps_its_objects_alive() -> None:
    """A hit is trusted by ids alone because each entry holds its objects: none is freed (so no id is reused by
    another object) while its entry exists."""
    import gc
    import weakref

    memo = IdentityMemo(8)
    a = _Slot()
    ref = weakref.ref(a)
    memo.get((a,), None, lambda: 1)
    del a
    gc.collect(0)  # the youngest generation: `a` is in no cycle; a full collection walks the whole suite's heap
    assert ref() is not None
    memo.clear()
    gc.collect(0)
    assert ref() is None


class _Slot:
    pass
