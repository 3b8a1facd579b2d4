"""Differential parity between crd-scheduler and the real kube-scheduler.

A seeded :mod:`~bench.parity_harness.generator` makes small random clusters with one pending pod,
using only the features whose plugins this build registers (:mod:`~bench.parity_harness.features`).
Each scenario runs twice:

* on the real kube-scheduler of the dev cluster (:mod:`~bench.parity_harness.upstream`): the objects
  are created on the API server, the kube-scheduler (``--v=10``, same plugins, all nodes
  scored) places the pod, and the outcome is read (:mod:`~bench.parity_harness.reading`) from its log
  (:mod:`~bench.parity_harness.klog`), from a filter extender that records the nodes which passed the
  plugins' filters (:mod:`~bench.parity_harness.extender`), and from the FitError messages
  (:mod:`~bench.parity_harness.fiterror`) of probe pods (:mod:`~bench.parity_harness.probes`);
* through ``crd-scheduler simulate`` on the very objects the API server stored
  (:mod:`~bench.parity_harness.ours`).

:mod:`~bench.parity_harness.compare` then lists every difference in feasibility, filter reasons and
weighted scores per plugin; :mod:`~bench.parity_harness.harness` runs many scenarios and summarises.
"""
