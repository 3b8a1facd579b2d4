"""``python -m bench.connections`` on the dev cluster: the operator's own pool, one request at a
time, on one open connection, on a new connection each, and over HTTP/2."""

from __future__ import annotations

import asyncio

import pytest

from tests.e2e import Cluster


def test_a_new_connection_costs_the_operator_more_than_a_request_on_an_open_one(cluster: Cluster) -> None:
    from bench import connections

    if not cluster.dev_cluster:
        pytest.skip("bench.connections reads the CPU of the dev cluster's own API server process")
    figures = asyncio.run(connections.measure(str(cluster.kubeconfig), requests=50, rounds=3))
    # A TLS handshake (OpenSSL) and a socket each: about 3 ms against 0.3 ms here.
    assert figures["new"]["client_ms"] > 2 * figures["open"]["client_ms"], figures
    assert figures["a_new_connection_adds"]["client_ms"] > 0.5, figures
    # The operator's requests now go over HTTP/2: every round's requests on the one connection.
    assert figures["http2_connections_opened"] == 1, figures
    assert figures["http2"]["client_ms"] < figures["new"]["client_ms"] / 2, figures
