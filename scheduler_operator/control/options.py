"""What ``crd-scheduler run`` can be told: the operator's options, without importing Kopf, aiohttp or kubernetes.

Leader-election defaults are kube-scheduler's (``--leader-elect-lease-duration`` 15 s,
``--leader-elect-renew-deadline`` 10 s, ``--leader-elect-retry-period`` 2 s), checked as
client-go's ``NewLeaderElector`` checks them.

Durations are kept exactly, as client-go keeps them: its own timing (renewals, the renew
deadline, ``LeaderElector.Check`` behind ``/healthz``) uses the exact ``time.Duration``, and only
the Lease object gets whole seconds, ``LeaseDurationSeconds: int(le.config.LeaseDuration /
time.Second)`` (``client-go@v0.36.3/tools/leaderelection/leaderelection.go``, written by
``resourcelock/leaselock.go``'s ``LeaderElectionRecordToLeaseSpec`` as an int32), which is what
other replicas wait. So ``--lease-duration 7.5s`` writes 7 and renews on 7.5 s timings. One check
beyond upstream's: the whole seconds written must still exceed the renew deadline, or a standby
could take over while the fence (``fence.py``) still lets this replica write.
"""

from __future__ import annotations

import argparse
import math
import os
import socket
import uuid
from dataclasses import dataclass, field

from scheduler_operator.io.calls import DEFAULT_BURST, DEFAULT_CRITICAL_LIMIT, DEFAULT_QPS, DEFAULT_REPORTS_LIMIT
from scheduler_operator.io.kube import IN_CLUSTER_ELSE_KUBECONFIG, KubeconfigSource
from scheduler_operator.resources import DEFAULT_LEASE_NAME

JITTER_FACTOR = 1.2  # upstream leaderelection JitterFactor
DEFAULT_LIVENESS = ""  # Kopf's own endpoint: off unless asked for (/healthz on --port is ours)
DEFAULT_HOME_NAMESPACE = "crd-scheduler"
RESYNC_PERIOD = 300.0


@dataclass(frozen=True)
class ElectionConfig:
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    def __post_init__(self) -> None:
        for flag, value in (
            ("--lease-duration", self.lease_duration),
            ("--renew-deadline", self.renew_deadline),
            ("--retry-period", self.retry_period),
        ):
            if not math.isfinite(value) or value <= 0:
                raise ValueError(f"{flag} must be a positive duration, got {value:g}")
        if self.lease_duration <= self.renew_deadline:
            raise ValueError("--lease-duration must be greater than --renew-deadline")
        if self.renew_deadline <= JITTER_FACTOR * self.retry_period:
            raise ValueError(f"--renew-deadline must be greater than --retry-period * {JITTER_FACTOR}")
        if self.retry_period < 0.1 or self.lease_duration < 1:
            raise ValueError("--retry-period must be at least 0.1 s and --lease-duration at least 1 s")
        if self.lease_seconds <= self.renew_deadline:
            raise ValueError(
                f"--lease-duration {self.lease_duration:g}s is written to the Lease as {self.lease_seconds}s "
                "(leaseDurationSeconds is whole seconds, as client-go writes it), which is what other replicas "
                f"wait; it must be longer than --renew-deadline {self.renew_deadline:g}s"
            )

    @property
    def lease_seconds(self) -> int:
        """``spec.leaseDurationSeconds`` as client-go writes it: ``int(LeaseDuration / time.Second)``."""
        return int(self.lease_duration)


def seconds(text: str) -> float:
    """A duration flag's value (an argparse ``type``): seconds (``7.5``) or a Go duration, as
    kube-scheduler's ``--leader-elect-*`` flags take it (``7.5s``, ``1m30s``, ``500ms``)."""
    try:
        value = float(text)
    except ValueError:
        from scheduler_core.extender.client import parse_duration  # aiohttp, pydantic: only when a unit is given

        try:
            value = parse_duration(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{text!r} is not a duration: seconds (7.5) or a Go duration (7.5s, 1m30s, 500ms)"
            ) from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite duration")
    return value


def default_identity() -> str:
    """The pod name in a cluster (Downward API ``POD_NAME``), else client-go's ``hostname_uuid``."""
    return os.environ.get("POD_NAME") or f"{socket.gethostname()}_{uuid.uuid4()}"


@dataclass(frozen=True)
class WebhookOptions:
    """Where the admission webhook listens (``scheduler_operator.control.admission``), and its TLS pair."""

    port: int
    certfile: str
    keyfile: str
    addr: str = "0.0.0.0"
    host: str | None = None
    managed: str | None = None  # a ValidatingWebhookConfiguration Kopf keeps up to date itself


@dataclass(frozen=True)
class ServingOptions:
    """Where ``/metrics``, ``/healthz`` and ``/readyz`` are served over plain HTTP, with no
    authentication: only when asked for, ``--port N`` (``scheduler_operator.control.serving``)."""

    bind_address: str = "0.0.0.0"
    port: int = 0


# k8s.io/apiserver pkg/server/options/authorization.go, as kube-scheduler keeps them.
DEFAULT_ALWAYS_ALLOW_PATHS = ("/healthz", "/readyz", "/livez")
DEFAULT_REVIEW_CACHE_TTL = 10.0  # authentication.go CacheTTL; authorization.go Allow/DenyCacheTTL


@dataclass(frozen=True)
class SecureServingOptions:
    """The HTTPS endpoints with delegated authentication and authorization, as kube-scheduler's
    ``--secure-port`` (``scheduler_operator.control.serving``)."""

    bind_address: str = "0.0.0.0"
    port: int = 10259
    cert_file: str | None = None
    key_file: str | None = None
    cert_dir: str | None = None
    always_allow_paths: tuple[str, ...] = DEFAULT_ALWAYS_ALLOW_PATHS
    token_cache_ttl: float = DEFAULT_REVIEW_CACHE_TTL
    authorized_ttl: float = DEFAULT_REVIEW_CACHE_TTL
    unauthorized_ttl: float = DEFAULT_REVIEW_CACHE_TTL


@dataclass(frozen=True)
class Options:
    home_namespace: str = DEFAULT_HOME_NAMESPACE
    lease_name: str = DEFAULT_LEASE_NAME
    identity: str = field(default_factory=default_identity)
    liveness: str | None = None
    election: ElectionConfig = field(default_factory=ElectionConfig)
    critical_limit: int = DEFAULT_CRITICAL_LIMIT
    reports_limit: int = DEFAULT_REPORTS_LIMIT
    resync_period: float = RESYNC_PERIOD
    qps: float = DEFAULT_QPS  # clientConnection.qps (scheduler_operator.io.transport)
    burst: int = DEFAULT_BURST
    webhook: WebhookOptions | None = None
    serving: ServingOptions | None = None  # plain HTTP, only when asked for
    secure_serving: SecureServingOptions | None = None  # HTTPS with delegated authn/authz
    kubeconfig: KubeconfigSource = IN_CLUSTER_ELSE_KUBECONFIG  # run --kubeconfig/--context
