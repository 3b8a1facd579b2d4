"""Which certificates a client sends in its TLS handshake (``scheduler_core.clientcert``).

A real handshake between two OpenSSL contexts over memory buffers, in TLS 1.2 so that the
client's Certificate message travels in the clear and can be read off the wire.
"""

from __future__ import annotations

import base64
import contextlib
import ssl
import subprocess
from pathlib import Path

import pytest
from kubernetes import client

from scheduler_core.clientcert import load_client_certificate, send_own_chain_only
from scheduler_core.config import Extender
from scheduler_core.extender.client import ssl_context
from scheduler_operator.control.handlers import connection_info
from scheduler_operator.io.transport import Credentials

HANDSHAKE, CHANGE_CIPHER_SPEC = 22, 20
CERTIFICATE = 11


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """root CA → intermediate CA → ``chained`` client; root → ``client`` and ``server``."""
    folder = tmp_path_factory.mktemp("pki")

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=folder, check=True, capture_output=True)

    def key(name: str) -> None:
        openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", f"{name}.key")

    def issue(name: str, issuer: str, extensions: str) -> None:
        key(name)
        openssl("req", "-new", "-key", f"{name}.key", "-subj", f"/CN={name}", "-out", f"{name}.csr")
        (folder / f"{name}.ext").write_text(extensions)
        openssl("x509", "-req", "-in", f"{name}.csr", "-CA", f"{issuer}.crt", "-CAkey", f"{issuer}.key",
                "-CAcreateserial", "-days", "1", "-extfile", f"{name}.ext", "-out", f"{name}.crt")  # fmt: skip

    key("root")
    openssl("req", "-x509", "-new", "-key", "root.key", "-subj", "/CN=root", "-days", "1",
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign",
            "-out", "root.crt")  # fmt: skip
    client_use = "basicConstraints=critical,CA:FALSE\nextendedKeyUsage=clientAuth\n"
    issue("intermediate", "root", "basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign\n")
    issue("client", "root", client_use)
    issue("chained", "intermediate", client_use)
    issue("server", "root", "basicConstraints=critical,CA:FALSE\nsubjectAltName=IP:127.0.0.1\n")

    def concatenate(target: str, *parts: str) -> None:
        (folder / target).write_bytes(b"".join((folder / part).read_bytes() for part in parts))

    concatenate("chained-bundle.crt", "chained.crt", "intermediate.crt")
    # The trust store holds the intermediate too: OpenSSL would chain ``chained`` from it.
    concatenate("trust.crt", "root.crt", "intermediate.crt")
    return folder


def subjects_sent(context: ssl.SSLContext, pki: Path) -> list[str]:
    """The subjects of the certificates ``context`` sends as a client, in order."""
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_context.maximum_version = ssl.TLSVersion.TLSv1_2
    server_context.load_cert_chain(pki / "server.crt", pki / "server.key")
    server_context.load_verify_locations(pki / "trust.crt")
    server_context.verify_mode = ssl.CERT_OPTIONAL
    to_server, to_client, server_in, server_out = ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO()
    tls_client = context.wrap_bio(to_client, to_server, server_hostname="127.0.0.1")
    tls_server = server_context.wrap_bio(server_in, server_out, server_side=True)
    sent = bytearray()
    for _ in range(10):
        for end in (tls_client, tls_server):
            with contextlib.suppress(ssl.SSLWantReadError, ssl.SSLWantWriteError):
                end.do_handshake()
        chunk = to_server.read()
        sent += chunk
        server_in.write(chunk)
        to_client.write(server_out.read())
    return [_subject(der) for der in _certificates(bytes(sent))]


def _certificates(wire: bytes) -> list[bytes]:
    """The DER certificates of the first Certificate message in a TLS 1.2 client's records."""
    handshake = bytearray()
    while len(wire) >= 5 and wire[0] != CHANGE_CIPHER_SPEC:
        length = int.from_bytes(wire[3:5], "big")
        if wire[0] == HANDSHAKE:
            handshake += wire[5 : 5 + length]
        wire = wire[5 + length :]
    while handshake:
        kind, length = handshake[0], int.from_bytes(handshake[1:4], "big")
        body, handshake = bytes(handshake[4 : 4 + length]), handshake[4 + length :]
        if kind == CERTIFICATE:
            listed, offset, found = body[3:], 0, []
            while offset < len(listed):
                size = int.from_bytes(listed[offset : offset + 3], "big")
                found.append(listed[offset + 3 : offset + 3 + size])
                offset += 3 + size
            return found
    raise AssertionError("the client sent no Certificate message")


def _subject(der: bytes) -> str:
    text = ssl.DER_cert_to_PEM_cert(der)
    done = subprocess.run(["openssl", "x509", "-noout", "-subject", "-nameopt", "RFC2253"],
                          input=text, capture_output=True, text=True, check=True)  # fmt: skip
    return done.stdout.strip().removeprefix("subject=")


def configuration(pki: Path, cert: str) -> client.Configuration:
    configuration = client.Configuration(host="https://127.0.0.1:6443")
    configuration.ssl_ca_cert = str(pki / "trust.crt")
    configuration.cert_file, configuration.key_file = str(pki / f"{cert}.crt"), str(pki / f"{cert.split('-')[0]}.key")
    return configuration


def test_the_operator_sends_its_kubeconfig_certificate_without_the_ca_as_go_clients_do(pki: Path) -> None:
    # OpenSSL alone sends the root CA from the trust store after the leaf, and the API server
    # verifies each request's chain with it (see scheduler_core.clientcert).
    assert subjects_sent(Credentials.of(configuration(pki, "client")).ssl, pki) == ["CN=client"]  # type: ignore[arg-type]


def test_kopfs_connection_sends_the_certificate_without_the_ca(pki: Path) -> None:
    context = connection_info(configuration(pki, "client"), trust_env=False).as_ssl_context()
    assert subjects_sent(context, pki) == ["CN=client"]


def test_an_intermediate_only_the_trust_store_holds_is_not_sent_as_kubectl_does_not(pki: Path) -> None:
    # OpenSSL alone would send ['CN=chained', 'CN=intermediate', 'CN=root'].
    assert subjects_sent(Credentials.of(configuration(pki, "chained")).ssl, pki) == ["CN=chained"]  # type: ignore[arg-type]


def test_a_certificate_file_with_its_intermediate_is_sent_as_the_file_holds_it(pki: Path) -> None:
    context = Credentials.of(configuration(pki, "chained-bundle")).ssl
    assert subjects_sent(context, pki) == ["CN=chained", "CN=intermediate"]  # type: ignore[arg-type]


def test_the_extender_client_sends_its_certificate_without_the_ca(pki: Path) -> None:
    files = {"caData": "trust.crt", "certData": "client.crt", "keyData": "client.key"}
    data = {name: base64.b64encode((pki / file).read_bytes()).decode() for name, file in files.items()}
    context = ssl_context(Extender.model_validate({"urlPrefix": "https://127.0.0.1:1", "tlsConfig": data}))
    assert context is not None
    assert subjects_sent(context, pki) == ["CN=client"]


@pytest.mark.parametrize(
    ("leaf", "built"), [("client", ["CN=client", "CN=root"]), ("chained", ["CN=chained", "CN=intermediate", "CN=root"])]
)
def test_without_the_switch_openssl_would_add_the_trust_stores_certificates(
    pki: Path, leaf: str, built: list[str]
) -> None:
    # What the tests above guard against: the same context, loaded without the switch.
    context = ssl.create_default_context(cafile=pki / "trust.crt")
    context.load_cert_chain(pki / f"{leaf}.crt", pki / f"{leaf}.key")
    assert subjects_sent(context, pki) == built
    assert send_own_chain_only(context)
    assert subjects_sent(context, pki) == [f"CN={leaf}"]


def test_only_an_ssl_context_of_this_interpreter_is_addressed(pki: Path) -> None:
    class NotAContext:
        options = 0

    assert not send_own_chain_only(NotAContext())  # type: ignore[arg-type]


def test_a_context_the_switch_cannot_address_is_left_as_it_is(pki: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import scheduler_core.clientcert as clientcert

    context = ssl.create_default_context(cafile=pki / "trust.crt")
    monkeypatch.setattr(clientcert, "_libssl", lambda: None)
    load_client_certificate(context, str(pki / "client.crt"), str(pki / "client.key"))
    assert subjects_sent(context, pki) == ["CN=client", "CN=root"]
