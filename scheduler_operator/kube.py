"""Small helpers over the official ``kubernetes`` client that paper over its rough edges.

``bind_pod`` exists because the pods/binding subresource answers with a ``Status``, not the
``Binding`` the generated client expects: ``create_namespaced_pod_binding`` succeeds on the
server and then fails to deserialise the reply. Asking for the raw response
(``_preload_content=False``) and reading the HTTP status ourselves avoids that.
"""

from __future__ import annotations

from http import HTTPStatus
from typing import cast

import urllib3
from kubernetes import client


def bind_pod(api_client: client.ApiClient, namespace: str, name: str, uid: str, node_name: str) -> bool:
    """Bind pod ``namespace/name`` to ``node_name`` through ``pods/binding``.

    The UID is a precondition, so a pod deleted and re-created under the same name is never
    bound by mistake. Returns True when bound, False on 409 Conflict (the pod is already bound,
    or its UID changed); raises ``kubernetes.client.ApiException`` on any other error.
    """
    body = client.V1Binding(
        metadata=client.V1ObjectMeta(name=name, namespace=namespace, uid=uid),
        target=client.V1ObjectReference(api_version="v1", kind="Node", name=node_name),
    )
    try:
        raw = client.CoreV1Api(api_client).create_namespaced_pod_binding(name, namespace, body, _preload_content=False)
        response = cast(urllib3.HTTPResponse, raw)  # what _preload_content=False returns
    except client.ApiException as error:
        if error.status == HTTPStatus.CONFLICT:
            return False
        raise
    try:
        if not HTTPStatus.OK <= response.status < HTTPStatus.MULTIPLE_CHOICES:
            raise client.ApiException(status=response.status, reason=response.reason)
    finally:
        response.release_conn()
    return True
