"""A keyed binary heap: the data structure behind activeQ and backoffQ.

Upstream: ``pkg/scheduler/backend/heap/heap.go`` over Go's ``container/heap``. Items are
found by key (``namespace/name`` for pods), so an item can be updated in place (its position
fixed) or deleted without a scan. The sift-up/sift-down steps mirror ``container/heap``
exactly, so items that compare equal come out in the same order as upstream.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

T = TypeVar("T")

LessFn = Callable[[T, T], bool]


class KeyedHeap(Generic[T]):
    __slots__ = ("_index", "_items", "_key", "_less")

    def __init__(self, key: Callable[[T], str], less: Callable[[T, T], bool]) -> None:
        self._items: list[T] = []
        self._index: dict[str, int] = {}
        self._key = key
        self._less = less

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: str) -> bool:
        return key in self._index

    def __iter__(self) -> Iterator[T]:
        """Items in heap-array order (upstream ``Heap.List``), not sorted."""
        return iter(list(self._items))

    def set_less(self, less: Callable[[T, T], bool]) -> None:
        """Replace the ordering and re-heapify (``heap.Init``)."""
        self._less = less
        n = len(self._items)
        for i in range(n // 2 - 1, -1, -1):
            self._down(i, n)

    def get(self, key: str) -> T | None:
        i = self._index.get(key)
        return None if i is None else self._items[i]

    def add_or_update(self, item: T) -> None:
        key = self._key(item)
        i = self._index.get(key)
        if i is not None:
            self._items[i] = item
            self._fix(i)
            return
        self._items.append(item)
        self._index[key] = len(self._items) - 1
        self._up(len(self._items) - 1)

    def delete(self, key: str) -> T | None:
        i = self._index.get(key)
        if i is None:
            return None
        n = len(self._items) - 1
        if n != i:
            self._swap(i, n)
            if not self._down(i, n):
                self._up(i)
        return self._pop_last()

    def peek(self) -> T | None:
        return self._items[0] if self._items else None

    def pop(self) -> T | None:
        if not self._items:
            return None
        n = len(self._items) - 1
        self._swap(0, n)
        self._down(0, n)
        return self._pop_last()

    def _pop_last(self) -> T:
        item = self._items.pop()
        del self._index[self._key(item)]
        return item

    def _swap(self, i: int, j: int) -> None:
        items = self._items
        items[i], items[j] = items[j], items[i]
        self._index[self._key(items[i])] = i
        self._index[self._key(items[j])] = j

    def _fix(self, i: int) -> None:
        if not self._down(i, len(self._items)):
            self._up(i)

    def _up(self, j: int) -> None:
        while j > 0:
            i = (j - 1) // 2
            if not self._less(self._items[j], self._items[i]):
                break
            self._swap(i, j)
            j = i

    def _down(self, i0: int, n: int) -> bool:
        i = i0
        while True:
            j1 = 2 * i + 1
            if j1 >= n:
                break
            j = j1
            j2 = j1 + 1
            if j2 < n and self._less(self._items[j2], self._items[j1]):
                j = j2
            if not self._less(self._items[j], self._items[i]):
                break
            self._swap(i, j)
            i = j
        return i > i0
