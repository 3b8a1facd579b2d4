"""The operator's API error, its one retry policy, and where its credentials come from.

:class:`ApiError` is what every path of the operator's HTTP layer raises for an answer outside
2xx (``scheduler_operator.io.transport``: requests and watches, the reflectors' watch ``ERROR``
events, the Lease, ``extender serve``, ``explain``): the HTTP status, the ``metav1.Status``
reason and message, and the server's ``Retry-After``. A lost or broken connection is an
``OSError`` (:data:`CONNECTION_ERRORS`: ``ConnectionError``, ``TimeoutError``, socket and TLS
errors), from a request and from a watch alike: both go through ``http1.Pool``.

:func:`retry_delay` is the one retry policy of that layer: a 429, a 5xx or a lost connection
is retried after 0.5, 1, 2 s (or the server's Retry-After, up to 5 s), :data:`ATTEMPTS`
attempts in all; any other answer is final. Every request has a timeout
(:data:`REQUEST_TIMEOUT`).

The ``kubernetes`` package is used here only to read kubeconfigs and the in-cluster service
account (:func:`load_configuration`), so that token refresh and client certificates behave as
in Kubernetes' own Python client. It is imported there, when credentials are first read, not
with this module: the verbs that never reach a cluster (``simulate``, ``validate``) start
without it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

from scheduler_operator.io import decoding

if TYPE_CHECKING:
    from kubernetes import client

REQUEST_TIMEOUT = (5.0, 30.0)  # (connect, read) seconds
ATTEMPTS = 4
MAX_RETRY_AFTER = 5.0
# A lost or broken connection: the socket's, TLS's and time-outs (all OSErrors).
CONNECTION_ERRORS = (OSError,)


class ApiError(Exception):
    """An answer of the API server outside 2xx.

    ``status``: the HTTP status. ``reason``: the ``metav1.Status`` reason (``NotFound``,
    ``Conflict``, ``AlreadyExists``, ``Expired``...), or the HTTP reason phrase for an answer
    that is no Status. ``message``: the Status's message (what client-go's error says), else
    ``HTTP <status> <reason>``. ``retry_after``: the ``Retry-After`` header in seconds, when it
    is a number. ``details``: the Status's ``details`` (name, kind, causes)."""

    def __init__(
        self,
        status: int,
        reason: str = "",
        message: str = "",
        *,
        retry_after: float | None = None,
        details: Mapping[str, Any] | None = None,
    ) -> None:
        self.status = status
        self.reason = reason
        self.message = message or f"HTTP {status} {reason}".strip()
        self.retry_after = retry_after
        self.details: Mapping[str, Any] = details or {}
        super().__init__(self.message)

    @classmethod
    def of_answer(cls, status: int, phrase: str, body: bytes, headers: Mapping[str, str]) -> ApiError:
        """The error of an HTTP answer: its body read as a ``metav1.Status`` when it is one."""
        try:
            document = decoding.loads(body) if body else None
        except ValueError:  # not JSON (a proxy's page): the status line says it all
            document = None
        after = headers.get("Retry-After")
        retry_after = float(after) if after is not None and after.strip().isdigit() else None
        if not isinstance(document, dict):
            return cls(status, phrase, retry_after=retry_after)
        return cls.of_status(document, status=status, phrase=phrase, retry_after=retry_after)

    @classmethod
    def of_status(
        cls, document: Mapping[str, Any], *, status: int = 0, phrase: str = "", retry_after: float | None = None
    ) -> ApiError:
        """The error a ``metav1.Status`` says (an error answer's body, a watch's ERROR event)."""
        code = document.get("code")
        details = document.get("details")
        return cls(
            status or (code if isinstance(code, int) else 0),
            str(document.get("reason") or phrase or ""),
            str(document.get("message") or ""),
            retry_after=retry_after,
            details=details if isinstance(details, dict) else None,
        )


def retry_delay(attempt: int, error: Exception) -> float | None:
    """Seconds before attempt ``attempt + 1`` after ``error``; None when it is final."""
    if attempt >= ATTEMPTS - 1:
        return None
    if isinstance(error, ApiError):
        if error.status != HTTPStatus.TOO_MANY_REQUESTS and error.status < HTTPStatus.INTERNAL_SERVER_ERROR:
            return None
        if error.retry_after is not None:
            return min(error.retry_after, MAX_RETRY_AFTER)
    elif not isinstance(error, CONNECTION_ERRORS):
        return None
    return 0.5 * float(2**attempt)


def describe(error: BaseException) -> str:
    """An error in one line: ``HTTP 503 Service Unavailable``, ``TimeoutError``..."""
    if isinstance(error, ApiError):
        return f"HTTP {error.status} {error.reason}".strip()
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


CONTENT_MERGE_PATCH = "application/merge-patch+json"
CONTENT_STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"


@dataclass(frozen=True, slots=True)
class KubeconfigSource:
    """Where the operator's credentials come from. Neither field set: in-cluster, else
    ``KUBECONFIG`` (``~/.kube/config``), as Kubernetes clients find them. Either set (``run
    --kubeconfig/--context``, as kubectl's flags): that kubeconfig file and context, and
    in-cluster is not tried."""

    path: str | None = None
    context: str | None = None


IN_CLUSTER_ELSE_KUBECONFIG = KubeconfigSource()


def load_configuration(
    source: KubeconfigSource = IN_CLUSTER_ELSE_KUBECONFIG, *, in_cluster_first: bool = True
) -> client.Configuration:
    """A client ``Configuration`` from ``source``: the one loader of credentials (the operator's
    transports, the Lease's included, and Kopf's login; ``explain`` and ``simulate
    --from-cluster``). ``in_cluster_first``: the operator's order, in-cluster then the
    kubeconfig; else kubectl's, the kubeconfig then in-cluster. A kubeconfig file or context
    named in ``source`` is never followed by in-cluster."""
    from kubernetes import client, config

    configuration = client.Configuration()
    if in_cluster_first and source == IN_CLUSTER_ELSE_KUBECONFIG:
        try:
            config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
            return configuration
        except config.ConfigException:
            pass
    try:
        config.load_kube_config(  # type: ignore[no-untyped-call]
            config_file=source.path, context=source.context, client_configuration=configuration
        )
    except config.ConfigException:
        if in_cluster_first or source.path or source.context:
            raise
        config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
    return configuration
