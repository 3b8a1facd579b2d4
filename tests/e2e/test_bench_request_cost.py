"""``python -m bench.request_cost`` on the dev cluster: one pod's status patched, asked four ways."""

from __future__ import annotations

import asyncio

import pytest

from tests.e2e import Cluster


def test_each_mode_is_asked_as_it_says_and_costs_the_api_server_cpu(cluster: Cluster) -> None:
    from bench import request_cost

    if not cluster.dev_cluster:
        pytest.skip("bench.request_cost reads the CPU of the dev cluster's own API server process")
    figures = asyncio.run(request_cost.measure(str(cluster.kubeconfig), requests=20, rounds=1))
    assert figures["json"]["answered"] == ["application/json"], figures
    assert figures["ignore"]["answered"] == ["application/json"], figures
    assert figures["protobuf-answer"]["answered"] == ["application/vnd.kubernetes.protobuf"], figures
    assert figures["both"]["answered"] == ["application/vnd.kubernetes.protobuf"], figures
    for mode in request_cost.MODES:
        assert figures[mode]["apiserver_ms"] > 0, figures
        assert figures[mode]["client_ms"] > 0, figures
