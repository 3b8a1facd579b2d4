"""Tests against a real kube-apiserver; conftest.py says how one is found or started."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import pytest
from kubernetes import client, config

DEV_CLUSTER = Path(__file__).resolve().parents[2] / "scripts" / "dev-cluster"

T = TypeVar("T")


@dataclass(frozen=True)
class Cluster:
    kubeconfig: Path
    operator_kubeconfig: Path | None
    # True for the local dev cluster (loopback only, processes known to scripts/dev-cluster).
    dev_cluster: bool

    def api_client(self, *, operator: bool = False) -> client.ApiClient:
        """A new ApiClient (admin, or the unprivileged operator identity); close it after use."""
        path = self.operator_kubeconfig if operator else self.kubeconfig
        if path is None:
            pytest.skip("no unprivileged identity: set CRD_SCHEDULER_TEST_OPERATOR_KUBECONFIG")
        api: client.ApiClient = config.new_client_from_config(config_file=str(path))  # type: ignore[no-untyped-call]
        return api


def eventually(check: Callable[[], T], *, timeout: float = 30.0, interval: float = 0.2) -> T:
    """Call ``check`` until it returns without raising ``AssertionError`` or ``ApiException``.

    For state another process settles asynchronously (a controller, the RBAC cache); the real
    server has no fake clock to advance, so this is the one place e2e tests poll.
    """
    deadline = time.monotonic() + timeout
    while True:
        try:
            return check()
        except (AssertionError, client.ApiException):
            if time.monotonic() > deadline:
                raise
        time.sleep(interval)
