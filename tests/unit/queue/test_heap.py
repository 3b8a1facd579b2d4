"""The keyed heap against a sorted reference (upstream backend/heap/heap_test.go)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from scheduler_core.queue.heap import KeyedHeap

Op = tuple[str, str, int]
ops = st.lists(
    st.tuples(st.sampled_from(["add", "delete", "pop"]), st.sampled_from("abcdefgh"), st.integers(-5, 5)),
    max_size=60,
)


@given(ops)
def test_heap_matches_a_sorted_reference(operations: list[Op]) -> None:
    heap: KeyedHeap[tuple[str, int]] = KeyedHeap(lambda item: item[0], lambda a, b: (a[1], a[0]) < (b[1], b[0]))
    reference: dict[str, int] = {}
    for op, key, value in operations:
        if op == "add":
            heap.add_or_update((key, value))
            reference[key] = value
        elif op == "delete":
            removed = heap.delete(key)
            expected = reference.pop(key, None)
            assert (removed[1] if removed else None) == expected
        else:
            popped = heap.pop()
            if not reference:
                assert popped is None
                continue
            smallest = min(reference.items(), key=lambda kv: (kv[1], kv[0]))
            assert popped == smallest
            del reference[smallest[0]]
        assert len(heap) == len(reference)
        assert all((k in heap) for k in reference)
    drained = []
    while (item := heap.pop()) is not None:
        drained.append(item)
    assert drained == sorted(reference.items(), key=lambda kv: (kv[1], kv[0]))


def test_set_less_reheapifies() -> None:
    heap: KeyedHeap[int] = KeyedHeap(str, lambda a, b: a < b)
    for i in [5, 1, 4, 2, 3]:
        heap.add_or_update(i)
    heap.set_less(lambda a, b: a > b)
    assert [heap.pop() for _ in range(5)] == [5, 4, 3, 2, 1]
