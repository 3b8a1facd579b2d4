"""The operator's HTTP endpoints: ``GET /metrics``, ``/healthz``, ``/livez`` and ``/readyz``.

Served as kube-scheduler serves them (v1.36.3 ``cmd/kube-scheduler/app/options/options.go``,
``k8s.io/apiserver`` ``pkg/server/options/{serving,authentication,authorization}.go``):

* **HTTPS** on ``--bind-address``:``--secure-port`` (default ``0.0.0.0:10259``), with the pair of
  ``--tls-cert-file``/``--tls-private-key-file``, else ``crd-scheduler.crt``/``.key`` in
  ``--cert-dir`` (generated there when absent), else a self-signed pair generated in memory at
  start for ``localhost`` and ``127.0.0.1`` (``MaybeDefaultWithSelfSignedCerts``);
* **delegated authentication**: a bearer token is checked with a ``TokenReview``
  (``authentication.k8s.io/v1``), the answer cached for ``--authentication-token-webhook-cache-ttl``
  (10 s, whether the token was accepted or not; a review that failed is not cached); a
  token the API server does not accept, or a review that fails, answers 401. A request with no
  bearer token is ``system:anonymous`` (group ``system:unauthenticated``): anonymous
  authentication is on in kube-scheduler's delegating options, so such a request is *authorized*
  like any other and normally gets 403, not 401. An accepted user also gets the group
  ``system:authenticated`` (``group.NewAuthenticatedGroupAdder``);
* **delegated authorization**: a path of ``--authorization-always-allow-paths`` (default
  ``/healthz,/readyz,/livez``; a trailing ``*`` matches a prefix) and a user in
  ``system:masters`` pass; every other request is asked of the API server with a
  ``SubjectAccessReview`` (``authorization.k8s.io/v1``) for the non-resource URL and the
  request's verb (``get`` for GET), cached for ``--authorization-webhook-cache-authorized-ttl``
  (10 s) when allowed and ``--authorization-webhook-cache-unauthorized-ttl`` (10 s) when not. A
  denial answers 403 with apiserver's message (``User "u" cannot get path "/metrics"``, and the
  review's reason); a review that fails answers 500.

So the operator's ServiceAccount needs ``system:auth-delegator`` (create TokenReviews and
SubjectAccessReviews), and a scraper a ClusterRole with ``nonResourceURLs: ["/metrics"]`` and
``verbs: ["get"]`` (``manifests/rbac.yaml``). The probes stay anonymous on the always-allowed
paths: the kubelet sends no token.

Plain HTTP with no authentication is only served when asked for, ``--port N`` (0, the default,
serves none): for a node-local scrape or a test. The reviews go through a client of their own,
outside the Lease's fence (a standby replica answers scrapes too, and a review writes nothing).

One aiohttp server per listener, on the operator's event loop: a loop blocked by a long
synchronous cycle does not answer, which the kubelet's probe timeout reads as a failure, as it
should. A port already in use is logged and the operator runs on without the endpoints (the
probes then fail visibly) rather than exiting before it can schedule.
"""

from __future__ import annotations

import datetime
import hashlib
import ipaddress
import json
import logging
import ssl
import tempfile
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from http import HTTPStatus
from pathlib import Path
from typing import Any

from aiohttp import web

from scheduler_core.framework import manifest
from scheduler_core.metrics.registry import CONTENT_TYPE, Registry
from scheduler_operator.control.health import HealthState, report
from scheduler_operator.control.options import SecureServingOptions

log = logging.getLogger(__name__)

ALWAYS_ALLOW_GROUPS = ("system:masters",)  # authorization.go AlwaysAllowGroups
PAIR_NAME = "crd-scheduler"  # kube-scheduler's is "kube-scheduler" (options.go PairName)
CACHE_SIZE = 4096
TOKEN_REVIEWS = "/apis/authentication.k8s.io/v1/tokenreviews"
SUBJECT_ACCESS_REVIEWS = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
ANONYMOUS = "system:anonymous"
UNAUTHENTICATED = "system:unauthenticated"
AUTHENTICATED = "system:authenticated"

Post = Callable[[str, Mapping[str, Any]], Awaitable[Any]]


@dataclass(frozen=True)
class User:
    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: Mapping[str, Sequence[str]] = field(default_factory=dict)


ANONYMOUS_USER = User(ANONYMOUS, groups=(UNAUTHENTICATED,))


class _TTLCache:
    """Answers kept for a time each, the oldest dropped beyond ``size`` entries."""

    def __init__(self, clock: Callable[[], float], size: int = CACHE_SIZE) -> None:
        self._clock = clock
        self._size = size
        self._entries: OrderedDict[Any, tuple[float, Any]] = OrderedDict()

    def get(self, key: Any) -> Any:
        entry = self._entries.get(key)
        if entry is None:
            return None
        if entry[0] <= self._clock():
            del self._entries[key]
            return None
        return entry[1]

    def put(self, key: Any, value: Any, ttl: float) -> None:
        if ttl <= 0:
            return
        self._entries[key] = (self._clock() + ttl, value)
        self._entries.move_to_end(key)
        while len(self._entries) > self._size:
            self._entries.popitem(last=False)


class Unauthorized(Exception):
    pass


class DelegatedAuth:
    """TokenReview and SubjectAccessReview through ``post`` (the path and the body of a create),
    with upstream's caches."""

    def __init__(
        self, post: Post, options: SecureServingOptions, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._post = post
        self.options = options
        self._tokens = _TTLCache(clock)
        self._decisions = _TTLCache(clock)

    async def authenticate(self, request: web.Request) -> User:
        """The request's user (raises Unauthorized for a bearer token the API server refuses)."""
        scheme, _, token = request.headers.get("Authorization", "").partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            return ANONYMOUS_USER  # no credentials this authenticator reads: anonymous
        key = hashlib.sha256(token.encode()).digest()
        cached = self._tokens.get(key)
        if cached is None:
            try:
                cached = await self._review_token(token)
            except Exception as error:
                # Not cached (delegating.go: cache.New(tokenAuth, cacheErrs=false, ...)).
                log.warning("TokenReview failed: %s", error)
                raise Unauthorized(f"token review failed: {error}") from error
            self._tokens.put(key, cached, self.options.token_cache_ttl)
        if isinstance(cached, User):
            return cached
        raise Unauthorized(cached)

    async def _review_token(self, token: str) -> User | str:
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}}
        answer = await self._post(TOKEN_REVIEWS, body)
        status = manifest.status(answer or {})
        if not status.get("authenticated"):
            return status.get("error") or "token not authenticated"
        user = status.get("user") or {}
        groups = tuple(user.get("groups") or ())
        if AUTHENTICATED not in groups:
            groups += (AUTHENTICATED,)
        return User(user.get("username", ""), user.get("uid", ""), groups, dict(user.get("extra") or {}))

    def always_allowed(self, path: str) -> bool:
        for allowed in self.options.always_allow_paths:
            if (allowed.endswith("*") and path.startswith(allowed[:-1])) or path == allowed:
                return True
        return False

    async def authorize(self, user: User, verb: str, path: str) -> tuple[bool, str]:
        """Whether ``user`` may ``verb`` the non-resource ``path``, and the review's reason."""
        if self.always_allowed(path) or any(g in ALWAYS_ALLOW_GROUPS for g in user.groups):
            return True, ""
        key = (
            user.name,
            user.uid,
            user.groups,
            tuple(sorted((k, tuple(v)) for k, v in user.extra.items())),
            verb,
            path,
        )
        cached = self._decisions.get(key)
        if cached is not None:
            return cached  # type: ignore[no-any-return]
        spec: dict[str, Any] = {
            "user": user.name,
            "groups": list(user.groups),
            "nonResourceAttributes": {"path": path, "verb": verb},
        }
        if user.uid:
            spec["uid"] = user.uid
        if user.extra:
            spec["extra"] = {k: list(v) for k, v in user.extra.items()}
        answer = await self._post(
            SUBJECT_ACCESS_REVIEWS,
            {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec},
        )
        status = manifest.status(answer or {})
        decision = (bool(status.get("allowed")) and not status.get("denied"), str(status.get("reason") or ""))
        ttl = self.options.authorized_ttl if decision[0] else self.options.unauthorized_ttl
        self._decisions.put(key, decision, ttl)
        return decision


# apiserver's request-info verbs for a non-resource request (endpoints/request/requestinfo.go).
_VERBS = {"GET": "get", "HEAD": "get", "POST": "post", "PUT": "put", "PATCH": "patch", "DELETE": "delete"}


def _status(code: HTTPStatus, reason: str, message: str) -> web.Response:
    body = {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": message, "reason": reason, "code": int(code),
    }  # fmt: skip
    return web.Response(
        status=code, text=json.dumps(body), content_type="application/json",
        headers={"X-Content-Type-Options": "nosniff"},
    )  # fmt: skip


def _auth_middleware(auth: DelegatedAuth) -> Any:
    @web.middleware
    async def middleware(
        request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        try:
            user = await auth.authenticate(request)
        except Unauthorized as error:
            log.info("refused %s %s: unauthorized (%s)", request.method, request.path, error)
            return _status(HTTPStatus.UNAUTHORIZED, "Unauthorized", "Unauthorized")
        verb = _VERBS.get(request.method, request.method.lower())
        try:
            allowed, reason = await auth.authorize(user, verb, request.path)
        except Exception as error:
            log.warning("SubjectAccessReview for %s %s failed: %s", user.name, request.path, error)
            return _status(HTTPStatus.INTERNAL_SERVER_ERROR, "InternalError", f"authorization failed: {error}")
        if not allowed:
            message = f"forbidden: User {json.dumps(user.name)} cannot {verb} path {json.dumps(request.path)}"
            return _status(HTTPStatus.FORBIDDEN, "Forbidden", f"{message}: {reason}" if reason else message)
        return await handler(request)

    return middleware


def make_app(registry: Registry, health: HealthState, auth: DelegatedAuth | None = None) -> web.Application:
    """The endpoints; behind delegated authentication and authorization when ``auth`` is given."""

    async def metrics(request: web.Request) -> web.Response:
        return web.Response(body=registry.render().encode(), headers={"Content-Type": CONTENT_TYPE})

    async def healthz(request: web.Request) -> web.Response:
        return _answer(*report("healthz", health.liveness()))

    async def readyz(request: web.Request) -> web.Response:
        return _answer(*report("readyz", health.readiness()))

    app = web.Application(middlewares=[_auth_middleware(auth)] if auth is not None else [])
    app.router.add_get("/metrics", metrics)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/livez", healthz)
    app.router.add_get("/readyz", readyz)
    return app


def _answer(ok: bool, body: str) -> web.Response:
    # Upstream's healthz answers 500 on a failed check (apiserver/pkg/server/healthz).
    status = HTTPStatus.OK if ok else HTTPStatus.INTERNAL_SERVER_ERROR
    return web.Response(status=status, text=body, headers={"X-Content-Type-Options": "nosniff"})


# -- the serving certificate -------------------------------------------------------------------
def self_signed_pair(host: str = "localhost", ips: Sequence[str] = ("127.0.0.1",)) -> tuple[bytes, bytes]:
    """A self-signed certificate (PEM) and its key for ``host`` and ``ips``, a year long, as
    apiserver's ``GenerateSelfSignedCertKey`` names it (``<host>@<unix time>``)."""
    # Imported here: only a start without a given pair needs it (a dependency, so always there).
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{host}@{int(now.timestamp())}")])
    alt: list[x509.GeneralName] = [x509.DNSName(host)]
    alt += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ips]
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=365))
        .add_extension(x509.SubjectAlternativeName(alt), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return cert.public_bytes(serialization.Encoding.PEM), key_pem


def server_context(options: SecureServingOptions) -> ssl.SSLContext:
    """The TLS context of the secure port (see the module docstring for where the pair comes from)."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    if options.cert_file or options.key_file:
        if not (options.cert_file and options.key_file):
            raise ValueError("--tls-cert-file and --tls-private-key-file go together")
        context.load_cert_chain(options.cert_file, options.key_file)
        return context
    if options.cert_dir:
        cert, key = Path(options.cert_dir, f"{PAIR_NAME}.crt"), Path(options.cert_dir, f"{PAIR_NAME}.key")
        if not (cert.is_file() and key.is_file()):
            _write_pair(self_signed_pair(), cert, key)
            log.info("generated a self-signed serving certificate in %s", options.cert_dir)
        context.load_cert_chain(cert, key)
        return context
    with tempfile.TemporaryDirectory() as folder:  # ssl reads a pair from files only
        cert, key = Path(folder, "tls.crt"), Path(folder, "tls.key")
        _write_pair(self_signed_pair(), cert, key)
        context.load_cert_chain(cert, key)
    log.info("serving with a self-signed certificate generated in memory (give --tls-cert-file or --cert-dir)")
    return context


def _write_pair(pair: tuple[bytes, bytes], cert: Path, key: Path) -> None:
    """The certificate and its key (PEM) into files (their folder made if need be), the key
    readable by its owner only."""
    cert.parent.mkdir(parents=True, exist_ok=True)
    cert.write_bytes(pair[0])
    key.touch(mode=0o600)
    key.write_bytes(pair[1])


class Server:
    """One listener of the endpoints; ``start`` then ``stop``."""

    def __init__(self, app: web.Application, host: str, port: int, ssl_context: ssl.SSLContext | None = None) -> None:
        self.host, self.port = host, port
        self._ssl = ssl_context
        self._runner = web.AppRunner(app, handle_signals=False, access_log=None)

    async def start(self) -> bool:
        await self._runner.setup()
        try:
            await web.TCPSite(self._runner, self.host, self.port, ssl_context=self._ssl).start()
        except OSError as error:
            log.error("cannot serve /metrics, /healthz, /readyz on %s:%d: %s", self.host, self.port, error)
            return False
        scheme = "https" if self._ssl is not None else "http"
        log.info("serving /metrics, /healthz and /readyz on %s://%s:%d", scheme, self.host, self.port)
        return True

    async def stop(self) -> None:
        await self._runner.cleanup()
