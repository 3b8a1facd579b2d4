"""Small helpers over the official ``kubernetes`` client that paper over its rough edges.

``bind_pod`` exists because the pods/binding subresource answers with a ``Status``, not the
``Binding`` the generated client expects: ``create_namespaced_pod_binding`` succeeds on the
server and then fails to deserialise the reply. Asking for the raw response
(``_preload_content=False``) and reading the HTTP status ourselves avoids that.

``retry_delay`` is the one retry policy: of the operator's async HTTP layer
(``scheduler_operator.transport``: every watch, list and write of the operator), and of the
blocking calls of ``explain`` and ``extender serve`` (:func:`retrying`): a timeout on every request
(:data:`REQUEST_TIMEOUT`), and a 429, a 5xx or a lost connection retried after 0.5, 1, 2 s
(or the server's Retry-After, up to 5 s), :data:`ATTEMPTS` attempts in all; any other answer
is final.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any, cast

import aiohttp
import urllib3
from kubernetes import client

from scheduler_operator import decoding

log = logging.getLogger(__name__)

REQUEST_TIMEOUT = (5.0, 30.0)  # (connect, read) seconds
ATTEMPTS = 4
MAX_RETRY_AFTER = 5.0
# A lost or broken connection, from either client (OSError covers timeouts and resets).
CONNECTION_ERRORS = (urllib3.exceptions.HTTPError, OSError, aiohttp.ClientConnectionError, aiohttp.ClientPayloadError)


def retry_delay(attempt: int, error: Exception) -> float | None:
    """Seconds before attempt ``attempt + 1`` after ``error``; None when it is final."""
    if attempt >= ATTEMPTS - 1:
        return None
    if isinstance(error, client.ApiException):
        status = error.status or 0
        if status != HTTPStatus.TOO_MANY_REQUESTS and status < HTTPStatus.INTERNAL_SERVER_ERROR:
            return None
        after = (error.headers or {}).get("Retry-After")
        if after is not None and str(after).isdigit():
            return min(float(after), MAX_RETRY_AFTER)
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
    """Bind pod ``namespace/name`` to ``node_name`` through ``pods/binding``.

    The UID is a precondition, so a pod deleted and re-created under the same name is never
    bound by mistake. ``annotations`` are set on the pod in the same write (the binding
    subresource copies the Binding's annotations onto the pod). Returns True when bound, False
    on 409 Conflict (the pod is already bound, or its UID changed); raises
    ``kubernetes.client.ApiException`` on any other error. ``request``: the client's request
    options (``_request_timeout``).
    """
    body = client.V1Binding(
        metadata=client.V1ObjectMeta(
            name=name, namespace=namespace, uid=uid, annotations=dict(annotations) if annotations else None
        ),
        target=client.V1ObjectReference(api_version="v1", kind="Node", name=node_name),
    )
    try:
        call(client.CoreV1Api(api_client).create_namespaced_pod_binding, name, namespace, body, **request)
    except client.ApiException as error:
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
            raise client.ApiException(status=response.status, reason=response.reason)
    finally:
        response.release_conn()


def read_json(raw: object) -> Any:
    """The JSON body of a ``_preload_content=False`` response (which it releases)."""
    response = cast(urllib3.HTTPResponse, raw)
    try:
        if not HTTPStatus.OK <= response.status < HTTPStatus.MULTIPLE_CHOICES:
            raise client.ApiException(status=response.status, reason=response.reason)
        return decoding.loads(response.data) if response.data else None
    finally:
        response.release_conn()
