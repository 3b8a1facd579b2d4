"""Running many scenarios on both sides and keeping score.

:class:`Harness` owns the run's resources (the dev cluster registration, kube-scheduler with
its extender, the API client); :meth:`Harness.run` plays one scenario seed on kube-scheduler,
then through ``simulate`` on the objects the API server stored, and compares. A scenario
agrees when nothing differs; one the harness could not run counts as not agreeing, with its
error. Disagreeing scenarios can be written out (simulate input and both outcomes) to become
regression tests.
"""

from __future__ import annotations

import json
import os
import time
import traceback
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from bench.parity_harness import features as feature_set
from bench.parity_harness import ours
from bench.parity_harness.compare import Disagreement, compare
from bench.parity_harness.generator import Scenario, generate
from bench.parity_harness.kube import DEFAULT_STATE, ROOT, Api, DevCluster
from bench.parity_harness.outcome import Outcome
from bench.parity_harness.profile import ProfilePair, parity_plugins
from bench.parity_harness.upstream import KubeScheduler
from scheduler_core.runtime.registry import default_registry

DEFAULT_WORKDIR = ROOT / "bench" / "results" / "parity"


@dataclass
class ScenarioResult:
    seed: int
    pod: str = ""  # namespace/name of the pending pod
    disagreements: list[Disagreement] = field(default_factory=list)
    error: str | None = None
    anomalies: list[str] = field(default_factory=list)
    upstream_seconds: float = 0.0
    upstream_phases: dict[str, float] = field(default_factory=dict)
    ours_seconds: float = 0.0
    simulate_input: str = ""
    ours: Outcome | None = None
    theirs: Outcome | None = None

    @property
    def agrees(self) -> bool:
        return self.error is None and not self.disagreements

    def to_json(self) -> dict[str, Any]:
        return {
            "seed": self.seed,
            "pod": self.pod,
            "agrees": self.agrees,
            "error": self.error,
            "anomalies": self.anomalies,
            "disagreements": [str(d) for d in self.disagreements],
            "kubeScheduler": self.theirs.to_json() if self.theirs else None,
            "ours": self.ours.to_json() if self.ours else None,
        }


@dataclass
class Summary:
    results: list[ScenarioResult]

    @property
    def agreed(self) -> int:
        return sum(1 for r in self.results if r.agrees)

    @property
    def rate(self) -> float:
        return 100.0 * self.agreed / len(self.results) if self.results else 100.0

    def line(self) -> str:
        return f"agreement: {self.rate:.1f}% ({self.agreed}/{len(self.results)})"

    def disagreements(self) -> list[Disagreement]:
        return [d for r in self.results for d in r.disagreements]


def comparable_features() -> frozenset[str]:
    """Every feature whose plugins this build registers (what a run uses by default)."""
    return feature_set.available([name for name, _ in parity_plugins(frozenset(default_registry()))])


class Harness:
    def __init__(
        self,
        *,
        features: Iterable[str] | None = None,
        state: Path = DEFAULT_STATE,
        workdir: Path = DEFAULT_WORKDIR,
        timeout: float = 60.0,
        pair: ProfilePair | None = None,
    ) -> None:
        """``pair``: run another profile than the default one on both sides (e.g. a
        KubeSchedulerConfiguration's profile and what ``import-config`` made of it)."""
        self.pair = pair
        self.registry = default_registry()
        self.registered = frozenset(self.registry)
        self.plugins = [name for name, _ in parity_plugins(self.registered)]
        self.features = feature_set.select(self.plugins, features)
        self.workdir = workdir
        self.cluster = DevCluster(state)
        self._timeout = timeout
        self._api: Api | None = None
        self._scheduler: KubeScheduler | None = None

    def __enter__(self) -> Harness:
        kubeconfig = self.cluster.up(os.getpid())
        try:
            self._api = Api(kubeconfig)
            self._scheduler = KubeScheduler(
                self.cluster, self._api, self.registered, self.workdir, timeout=self._timeout, pair=self.pair
            )
            self._scheduler.start()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        try:
            if self._scheduler is not None:
                self._scheduler.stop()
        finally:
            if self._api is not None:
                self._api.close()
            self.cluster.release(os.getpid())

    @property
    def namespace(self) -> str:
        """The run's namespace: every scenario's namespaced objects go there."""
        if self._scheduler is None:
            raise RuntimeError("use the Harness as a context manager")
        return self._scheduler.namespace

    def run(self, seed: int) -> ScenarioResult:
        return self.run_scenario(generate(seed, self.features, namespace=self.namespace))

    def run_scenario(self, scenario: Scenario) -> ScenarioResult:
        """Run a scenario (generated, or written by hand in the run's namespace) on both sides."""
        if self._scheduler is None:
            raise RuntimeError("use the Harness as a context manager")
        seed = scenario.seed
        pod = (scenario.namespace, scenario.pending["metadata"]["name"])
        result = ScenarioResult(seed, f"{pod[0]}/{pod[1]}")
        try:
            started = time.monotonic()
            upstream = self._scheduler.run(scenario)
            result.upstream_seconds = time.monotonic() - started
            result.theirs, result.anomalies = upstream.outcome, upstream.anomalies
            result.upstream_phases = upstream.phases
            extender_url = self._scheduler.extender.url if "extenders" in scenario.features else None
            result.simulate_input = ours.scenario_yaml(upstream.objects, self.registered, extender_url, self.pair)
            started = time.monotonic()
            result.ours = ours.run(result.simulate_input, pod, self.registry)
            if upstream.gated_pod is not None:
                objects = [*upstream.objects[:-1], upstream.gated_pod]
                gated_input = ours.scenario_yaml(objects, self.registered, extender_url, self.pair)
                result.ours.gated = ours.held_by_gates(gated_input, pod, self.registry)
            result.ours_seconds = time.monotonic() - started
            result.disagreements = compare(seed, result.ours, result.theirs)
        except Exception as error:  # a scenario the harness cannot run is reported, not fatal
            result.error = f"{type(error).__name__}: {error}\n{traceback.format_exc(limit=4)}"
        return result

    def save(self, result: ScenarioResult, folder: Path) -> Path:
        """Write a scenario's simulate input and both outcomes to ``folder/seed-<seed>.*``."""
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"seed-{result.seed}.yaml").write_text(result.simulate_input)
        path = folder / f"seed-{result.seed}.json"
        path.write_text(json.dumps(result.to_json(), indent=2) + "\n")
        return path
