"""The operator's API error, its one retry policy, and where its credentials come from.

:class:`ApiError` is what every path of the operator's HTTP layer raises for an answer outside
2xx (``scheduler_operator.transport``: requests and watches, the reflectors' watch ``ERROR``
events, the Lease, ``extender serve``, ``explain``): the HTTP status, the ``metav1.Status``
reason and message, and the server's ``Retry-After``. A lost or broken connection is an
``OSError`` (:data:`CONNECTION_ERRORS`: ``ConnectionError``, ``TimeoutError``, socket and TLS
errors); the transport raises its watches' aiohttp errors as ``ConnectionError`` so that no
caller needs to know which client carried the request.

:func:`retry_delay` is the one retry policy of that layer: a 429, a 5xx or a lost connection
is retried after 0.5, 1, 2 s (or the server's Retry-After, up to 5 s), :data:`ATTEMPTS`
attempts in all; any other answer is final. Every request has a timeout
(:data:`REQUEST_TIMEOUT`).

The ``kubernetes`` package is used here only to read kubeconfigs and the in-cluster service
account (:func:`load_configuration`), so that token refresh and client certificates behave as
in Kubernetes' own Python client.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any, cast

import urllib3
from kubernetes import client

from scheduler_operator import decoding

REQUEST_TIMEOUT = (5.0, 30.0)  # (connect, read) seconds
ATTEMPTS = 4
MAX_RETRY_AFTER = 5.0
# A lost or broken connection: the socket's, TLS's and time-outs (all OSErrors).
CONNECTION_ERRORS = (OSError, urllib3.exceptions.HTTPError)

log = logging.getLogger(__name__)


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


def retrying(
    call_: Callable[..., Any], /, *args: Any, sleep: Callable[[float], None] = time.sleep, **kwargs: Any
) -> Any:
    """``call_(*args, **kwargs, _request_timeout=REQUEST_TIMEOUT)`` with :func:`retry_delay`'s
    retries (blocking: for threads and one-shot commands)."""
    attempt = 0
    while True:
        try:
            return call_(*args, _request_timeout=REQUEST_TIMEOUT, **kwargs)
        except Exception as error:
            delay = retry_delay(attempt, error)
            if delay is None:
                raise
            log.warning("API call failed (%s); retrying in %.1f s", error, delay)
            sleep(delay)
            attempt += 1


def bind_pod(
    api_client: client.ApiClient,
    namespace: str,
    name: str,
    uid: str,
    node_name: str,
    annotations: Mapping[str, str] | None = None,
    **request: Any,
) -> bool:
    """Bind pod ``namespace/name`` to ``node_name`` through ``pods/binding`` (UID precondition;
    ``annotations`` set on the pod in the same write). True when bound, False on 409 Conflict;
    raises :class:`ApiError` on any other answer."""
    body = client.V1Binding(
        metadata=client.V1ObjectMeta(
            name=name, namespace=namespace, uid=uid, annotations=dict(annotations) if annotations else None
        ),
        target=client.V1ObjectReference(api_version="v1", kind="Node", name=node_name),
    )
    try:
        call(client.CoreV1Api(api_client).create_namespaced_pod_binding, name, namespace, body, **request)
    except ApiError as error:
        if error.status == HTTPStatus.CONFLICT:
            return False
        raise
    return True


# -- added for the operator's backend: configuration and raw JSON calls -------------------------
# The generated client deserialises every answer into models (slow for pod lists, and lossy for
# custom objects); the operator asks for raw responses and reads the JSON it needs.

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


def load_configuration(source: KubeconfigSource = IN_CLUSTER_ELSE_KUBECONFIG) -> client.Configuration:
    """A client ``Configuration`` from ``source``: the one loader of the operator's clients (its
    transport, the Lease keeper's client and Kopf's login)."""
    from kubernetes import config

    configuration = client.Configuration()
    if source == IN_CLUSTER_ELSE_KUBECONFIG:
        try:
            config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
            return configuration
        except config.ConfigException:
            pass
    config.load_kube_config(  # type: ignore[no-untyped-call]
        config_file=source.path, context=source.context, client_configuration=configuration
    )
    return configuration


def new_api_client(
    *, max_connections: int, retries: int | None = None, source: KubeconfigSource = IN_CLUSTER_ELSE_KUBECONFIG
) -> client.ApiClient:
    """An ApiClient configured as Kubernetes clients are (:func:`load_configuration`).

    The connection pool holds ``max_connections`` connections, as many as calls may be in
    flight at once (``scheduler_operator.calls``). ``retries``: urllib3's own retries of a
    request (its default retries a timed-out GET or PUT three times, each with the full timeout).
    """
    configuration = load_configuration(source)
    configuration.connection_pool_maxsize = max_connections
    if retries is not None:
        configuration.retries = retries
    return client.ApiClient(configuration)


def call_json(fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
    """Call a generated API method for its raw response; return the JSON body."""
    return read_json(fn(*args, _preload_content=False, **kwargs))


def call(fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> None:
    """Call a generated API method, ignoring the body of its (successful) answer."""
    response = cast(urllib3.HTTPResponse, fn(*args, _preload_content=False, **kwargs))
    try:
        # Read the body even unused: a connection returned with unread bytes is either dropped
        # by urllib3 (a new TLS handshake for the next call) or, if the bytes arrive late, read
        # by the next call as its status line.
        _ = response.data
        if not HTTPStatus.OK <= response.status < HTTPStatus.MULTIPLE_CHOICES:
            raise ApiError.of_answer(response.status, response.reason or "", response.data or b"", response.headers)
    finally:
        response.release_conn()


def read_json(raw: object) -> Any:
    """The JSON body of a ``_preload_content=False`` response (which it releases)."""
    response = cast(urllib3.HTTPResponse, raw)
    try:
        if not HTTPStatus.OK <= response.status < HTTPStatus.MULTIPLE_CHOICES:
            raise ApiError.of_answer(response.status, response.reason or "", response.data or b"", response.headers)
        return decoding.loads(response.data) if response.data else None
    finally:
        response.release_conn()
