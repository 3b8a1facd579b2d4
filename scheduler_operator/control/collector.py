"""The garbage collector set for a process whose heap is nearly all long-lived.

CPython's cyclic collector runs a young collection each time the number of container objects
(dicts, lists, class instances...) grows by ``threshold0`` (700), and now and then a full one
that walks every tracked object in the heap. Reference counting frees the operator's churn
(watch events, request bodies) without it; what makes the heap *grow* is the start-up (modules,
plugins, numpy) and then the cache filling with the listed pods and nodes. During the first
sync, decoding a page of 500 pods while the cache grows triggered several full collections over
a heap that only grows, and they cost as much CPU as the decoding itself: the first list of 4,000
pods and 300 nodes took 0.43-0.48 s of CPU with the defaults and 0.22 s with :func:`tune` and
:func:`settle` (``docs/operator-io.md``, "Start-up").

* :func:`tune`, once the operator's modules are imported: what exists then is there for the
  process's life (``gc.freeze``: the collector never walks it again), and a young collection
  only every :data:`YOUNG_THRESHOLD` new containers. Garbage with cycles (asyncio tasks and
  exceptions, mostly) waits a little longer; garbage without cycles is freed at once as before.
* :func:`settle`, once the caches have synced: the listed objects are long-lived too. A frozen
  object that later becomes unreachable is still freed by reference counting; only one caught
  in a cycle would stay (the views in the stores hold none).
* :func:`collect`, after a batch of profile rebuilds (``scheduler_operator.control.reconciler``): a
  replaced framework is cyclic garbage (plugins hold the handle, the handle the framework) that
  has lived long enough to reach the oldest generation, which the thresholds above walk only
  after some 20 million new containers. Under a PluginConfig edit storm every round of rebuilds
  left its frameworks behind (300 profiles: about 8 MiB a round, issue 26), so the reconciler
  asks for a full collection once enough frameworks were replaced.
"""

from __future__ import annotations

import gc

YOUNG_THRESHOLD = 50_000  # new containers between two young collections (CPython: 700)
OLDER_THRESHOLDS = (20, 20)  # young collections per middle one, middle ones per full one (10, 10)


def tune() -> None:
    """Freeze what exists now and make young collections rarer (see the module docstring)."""
    gc.set_threshold(YOUNG_THRESHOLD, *OLDER_THRESHOLDS)
    settle()


def settle() -> None:
    """Everything alive now is long-lived: out of the collector's walks (``gc.freeze``). No
    collection first: it would cost a full walk on the way to the first binding, to spare the
    little garbage there is."""
    gc.freeze()


def collect() -> None:
    """A full collection now (see the module docstring): about 0.15 s on the heap of an operator
    serving 300 profiles, on a loaded 2-core machine."""
    gc.collect()
