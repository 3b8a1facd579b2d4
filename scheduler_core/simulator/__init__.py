"""The in-memory cluster behind ``crd-scheduler simulate`` (and benchmarks).

``manifests`` reads, validates and defaults Kubernetes manifests as the API server would;
``backend`` is the in-memory API server and informer the scheduler binds through; ``run``
drives the real scheduler loop over it until nothing is left to try; ``report`` records each
pod's last attempt and renders it as JSON or a table. No scheduling logic lives here.
"""

from scheduler_core.simulator.backend import Event, InMemoryCluster
from scheduler_core.simulator.errors import InputError, Problem
from scheduler_core.simulator.manifests import (
    DEFAULT_HOME_NAMESPACE,
    Cluster,
    load_files,
    load_lists,
    load_texts,
)
from scheduler_core.simulator.report import PodReport, Recorder, render_json, render_table
from scheduler_core.simulator.run import Simulation, simulate, simulate_async

__all__ = [
    "DEFAULT_HOME_NAMESPACE",
    "Cluster",
    "Event",
    "InMemoryCluster",
    "InputError",
    "PodReport",
    "Problem",
    "Recorder",
    "Simulation",
    "load_files",
    "load_lists",
    "load_texts",
    "render_json",
    "render_table",
    "simulate",
    "simulate_async",
]
