"""Upstream's scheduler_perf workloads, read from the pinned v1.36.3 sources (issue 25).

``config`` loads the performance-config files, ``inprocess`` runs a variant through our
scheduler over the in-memory cluster, ``upstream`` runs upstream's own test binary, and
``cluster`` runs both schedulers on the dev cluster; ``python -m bench.suite`` drives them.
"""
