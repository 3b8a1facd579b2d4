"""The secure endpoints' delegated authentication and authorization: who gets 401, 403 or the
metrics, and how long the review answers are kept (k8s.io/apiserver's delegating defaults).

The reviews here are answered by a table of what the API server answers (the e2e test,
tests/e2e/test_observability.py, runs the same against the real kube-apiserver and RBAC): this
file checks our side, the decisions and the caches, on a fake clock.
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer
from cryptography import x509

from scheduler_core.metrics.scheduler_metrics import SchedulerMetrics
from scheduler_operator.control.health import HealthState
from scheduler_operator.control.options import SecureServingOptions
from scheduler_operator.control.serving import (
    SUBJECT_ACCESS_REVIEWS,
    TOKEN_REVIEWS,
    DelegatedAuth,
    make_app,
    self_signed_pair,
    server_context,
)

SCRAPER = "system:serviceaccount:mon:scraper"
NOBODY = "system:serviceaccount:mon:nobody"
TOKENS = {"scraper-token": SCRAPER, "nobody-token": NOBODY, "admin-token": "admin"}


class API:
    """Answers TokenReviews and SubjectAccessReviews as the API server would for ``TOKENS``,
    the scraper allowed ``get /metrics``; counts the reviews."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.fail = False

    async def post(self, path: str, body: Mapping[str, Any]) -> Any:
        self.calls.append(path)
        if self.fail:
            raise ConnectionError("connection refused")
        if path == TOKEN_REVIEWS:
            user = TOKENS.get(body["spec"]["token"])
            if user is None:
                return {"status": {"authenticated": False, "error": "invalid bearer token"}}
            groups = ["system:masters"] if user == "admin" else ["system:serviceaccounts"]
            return {"status": {"authenticated": True, "user": {"username": user, "uid": "u-1", "groups": groups}}}
        assert path == SUBJECT_ACCESS_REVIEWS
        spec = body["spec"]
        allowed = spec["user"] == SCRAPER and spec["nonResourceAttributes"] == {"path": "/metrics", "verb": "get"}
        assert "system:authenticated" in spec["groups"] or spec["user"] == "system:anonymous"
        return {"status": {"allowed": allowed}}


class Clock:
    now = 100.0

    def __call__(self) -> float:
        return self.now


def health() -> HealthState:
    state = HealthState(lease_duration=15.0, loop_stuck_after=60.0, api_stale_after=30.0, clock=lambda: 0.0)
    state.synced = lambda: True
    state.lease_observed = lambda: 0.0
    return state


async def client_for(api: API, clock: Clock, options: SecureServingOptions | None = None) -> TestClient:  # type: ignore[type-arg]
    auth = DelegatedAuth(api.post, options or SecureServingOptions(), clock=clock)
    metrics = SchedulerMetrics()
    return TestClient(TestServer(make_app(metrics.registry, health(), auth)))


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.mark.parametrize(
    ("headers", "status", "message"),
    [
        pytest.param(bearer("scraper-token"), 200, None, id="allowed"),
        pytest.param(
            bearer("nobody-token"), 403, f'forbidden: User "{NOBODY}" cannot get path "/metrics"', id="no-right"
        ),
        pytest.param({}, 403, 'forbidden: User "system:anonymous" cannot get path "/metrics"', id="no-token-anonymous"),
        pytest.param(bearer("forged"), 401, "Unauthorized", id="bad-token"),
        pytest.param({"Authorization": "Basic dXNlcjpwdw=="}, 403, None, id="not-bearer-anonymous"),
        pytest.param(bearer("admin-token"), 200, None, id="system-masters"),
    ],
)
async def test_who_gets_the_metrics(headers: dict[str, str], status: int, message: str | None) -> None:
    api = API()
    async with await client_for(api, Clock()) as client:
        answer = await client.get("/metrics", headers=headers)
        assert answer.status == status
        if status == 200:
            assert "scheduler_schedule_attempts_total" in await answer.text() or "process_cpu" in await answer.text()
        else:
            body = await answer.json()
            assert (body["kind"], body["code"]) == ("Status", status)
            if message is not None:
                assert body["message"] == message
    if headers.get("Authorization") == bearer("admin-token")["Authorization"]:
        assert api.calls == [TOKEN_REVIEWS]  # system:masters: no SubjectAccessReview


@pytest.mark.parametrize("path", ["/healthz", "/readyz", "/livez"])
async def test_probes_stay_anonymous(path: str) -> None:
    api = API()
    async with await client_for(api, Clock()) as client:
        answer = await client.get(path)
        assert answer.status == 200
    assert api.calls == []


async def test_a_bad_token_is_refused_on_the_probes_too() -> None:
    # apiserver authenticates before it looks at the always-allowed paths.
    async with await client_for(API(), Clock()) as client:
        assert (await client.get("/healthz", headers=bearer("forged"))).status == 401


async def test_reviews_are_cached_ten_seconds_each() -> None:
    api, clock = API(), Clock()
    async with await client_for(api, clock) as client:
        for _ in range(3):
            assert (await client.get("/metrics", headers=bearer("scraper-token"))).status == 200
            assert (await client.get("/metrics", headers=bearer("nobody-token"))).status == 403
            assert (await client.get("/metrics", headers=bearer("forged"))).status == 401
        # Three tokens reviewed once each; two users authorized once each.
        assert (api.calls.count(TOKEN_REVIEWS), api.calls.count(SUBJECT_ACCESS_REVIEWS)) == (3, 2)
        clock.now += 9.9
        assert (await client.get("/metrics", headers=bearer("scraper-token"))).status == 200
        assert len(api.calls) == 5
        clock.now += 0.2  # past the 10 s of every answer
        assert (await client.get("/metrics", headers=bearer("scraper-token"))).status == 200
        assert (await client.get("/metrics", headers=bearer("forged"))).status == 401
        assert len(api.calls) == 8


async def test_the_ttls_are_the_flags() -> None:
    api, clock = API(), Clock()
    options = SecureServingOptions(token_cache_ttl=0.0, authorized_ttl=60.0, unauthorized_ttl=1.0)
    async with await client_for(api, clock, options) as client:
        await client.get("/metrics", headers=bearer("scraper-token"))
        await client.get("/metrics", headers=bearer("scraper-token"))
        assert api.calls.count(TOKEN_REVIEWS) == 2  # 0: not cached
        assert api.calls.count(SUBJECT_ACCESS_REVIEWS) == 1
        await client.get("/metrics", headers=bearer("nobody-token"))
        clock.now += 1.5
        await client.get("/metrics", headers=bearer("nobody-token"))
        assert api.calls.count(SUBJECT_ACCESS_REVIEWS) == 3  # the denial expired after 1 s


async def test_a_failed_review() -> None:
    api = API()
    api.fail = True
    async with await client_for(api, Clock()) as client:
        assert (await client.get("/metrics", headers=bearer("scraper-token"))).status == 401
        answer = await client.get("/metrics")  # anonymous: the SubjectAccessReview fails
        assert answer.status == 500
        assert (await answer.json())["message"] == "authorization failed: connection refused"
        # A failed review is not cached (cacheErrs=false): the next request asks again, and passes.
        api.fail = False
        assert (await client.get("/metrics", headers=bearer("scraper-token"))).status == 200


def test_the_self_signed_certificate_names_localhost(tmp_path: Any) -> None:
    pem, _ = self_signed_pair()
    cert = x509.load_pem_x509_certificate(pem)
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == ["localhost"]
    assert [str(ip) for ip in names.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    assert isinstance(server_context(SecureServingOptions()), ssl.SSLContext)
    # --cert-dir: generated once, then reused.
    server_context(SecureServingOptions(cert_dir=str(tmp_path)))
    first = (tmp_path / "crd-scheduler.crt").read_bytes()
    assert (tmp_path / "crd-scheduler.key").stat().st_mode & 0o077 == 0
    server_context(SecureServingOptions(cert_dir=str(tmp_path)))
    assert (tmp_path / "crd-scheduler.crt").read_bytes() == first
