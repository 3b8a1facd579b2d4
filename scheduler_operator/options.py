"""What ``crd-scheduler run`` can be told: the operator's options, without importing a client.

Leader-election defaults are kube-scheduler's (``--leader-elect-lease-duration`` 15 s,
``--leader-elect-renew-deadline`` 10 s, ``--leader-elect-retry-period`` 2 s), checked as
client-go's ``NewLeaderElector`` checks them.
"""

from __future__ import annotations

import os
import socket
import uuid
from dataclasses import dataclass, field

from scheduler_operator.calls import DEFAULT_CRITICAL_LIMIT, DEFAULT_REPORTS_LIMIT
from scheduler_operator.resources import DEFAULT_LEASE_NAME

DEFAULT_QPS = 50.0  # kube-scheduler's clientConnection: pkg/scheduler/apis/config/v1/defaults.go (v1.36.3)
DEFAULT_BURST = 100

JITTER_FACTOR = 1.2  # upstream leaderelection JitterFactor
DEFAULT_LIVENESS = "http://0.0.0.0:8080/healthz"
DEFAULT_HOME_NAMESPACE = "crd-scheduler"
RESYNC_PERIOD = 300.0


@dataclass(frozen=True)
class ElectionConfig:
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    def __post_init__(self) -> None:
        if self.lease_duration <= self.renew_deadline:
            raise ValueError("--lease-duration must be greater than --renew-deadline")
        if self.renew_deadline <= JITTER_FACTOR * self.retry_period:
            raise ValueError(f"--renew-deadline must be greater than --retry-period * {JITTER_FACTOR}")
        if self.retry_period < 0.1 or self.lease_duration < 1:
            raise ValueError("--retry-period must be at least 0.1 s and --lease-duration at least 1 s")


def default_identity() -> str:
    """The pod name in a cluster (Downward API ``POD_NAME``), else client-go's ``hostname_uuid``."""
    return os.environ.get("POD_NAME") or f"{socket.gethostname()}_{uuid.uuid4()}"


@dataclass(frozen=True)
class WebhookOptions:
    """Where the admission webhook listens (``scheduler_operator.admission``), and its TLS pair."""

    port: int
    certfile: str
    keyfile: str
    addr: str = "0.0.0.0"
    host: str | None = None
    managed: str | None = None  # a ValidatingWebhookConfiguration Kopf keeps up to date itself


@dataclass(frozen=True)
class Options:
    home_namespace: str = DEFAULT_HOME_NAMESPACE
    lease_name: str = DEFAULT_LEASE_NAME
    identity: str = field(default_factory=default_identity)
    liveness: str | None = DEFAULT_LIVENESS
    election: ElectionConfig = field(default_factory=ElectionConfig)
    critical_limit: int = DEFAULT_CRITICAL_LIMIT
    reports_limit: int = DEFAULT_REPORTS_LIMIT
    resync_period: float = RESYNC_PERIOD
    qps: float = DEFAULT_QPS  # clientConnection.qps (scheduler_operator.transport)
    burst: int = DEFAULT_BURST
    webhook: WebhookOptions | None = None
