"""Reading ``extender serve``'s arguments: the profile file, the address, the TLS pair.

Every problem is reported as ``FILE: field: reason`` (exit 2, never a traceback), as ``simulate``
reports its input.
"""

from __future__ import annotations

import ssl
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from scheduler_core.config import SchedulerProfileSpec
from scheduler_core.defaults import default_plugins
from scheduler_core.extender.service import ExtenderService
from scheduler_core.names import PROFILE_KIND
from scheduler_core.runtime.build import ProfileError, format_validation_error
from scheduler_core.runtime.registry import default_registry


class UsageError(ValueError):
    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("; ".join(problems))


def load_profile(path: str) -> tuple[SchedulerProfileSpec, str]:
    """A SchedulerProfile manifest's spec, or a bare spec; and the prefix of field paths."""
    try:
        document: Any = yaml.safe_load(Path(path).read_text())
    except OSError as exc:
        raise UsageError([f"{path}: {exc.strerror or exc}"]) from None
    except yaml.YAMLError as exc:
        raise UsageError([f"{path}: not YAML: {exc}"]) from None
    if not isinstance(document, dict):
        raise UsageError([f"{path}: a SchedulerProfile (or its spec) is required"])
    prefix = "spec"
    if "kind" in document:
        if document["kind"] != PROFILE_KIND:
            raise UsageError([f"{path}: kind: {document['kind']!r} is not {PROFILE_KIND}"])
        document = document.get("spec") or {}
    else:
        prefix = ""
    try:
        return SchedulerProfileSpec.model_validate(document), prefix
    except ValidationError as exc:
        raise UsageError([f"{path}: {p}: {r}" for p, r in format_validation_error(prefix, exc)]) from None


def parse_listen(listen: str) -> tuple[str, int]:
    host, sep, port = listen.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise UsageError([f"--listen: {listen!r} is not HOST:PORT"])
    return host.strip("[]") or "0.0.0.0", int(port)


def tls_context(cert: str | None, key: str | None) -> ssl.SSLContext | None:
    if cert is None and key is None:
        return None
    if cert is None or key is None:
        raise UsageError(["--tls-cert and --tls-key: give both or neither"])
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    try:
        context.load_cert_chain(cert, key)
    except (OSError, ssl.SSLError) as exc:
        raise UsageError([f"--tls-cert/--tls-key: cannot load the pair: {exc}"]) from None
    return context


def prepare(
    profile: str, listen: str, cert: str | None, key: str | None
) -> tuple[ExtenderService, str, int, ssl.SSLContext | None]:
    """Everything checked before any connection: the profile builds, the address and TLS pair load."""
    from scheduler_operator.control.extender_server import KubeBinder

    spec, prefix = load_profile(profile)
    host, port = parse_listen(listen)
    tls = tls_context(cert, key)
    registry = default_registry()
    try:
        service = ExtenderService(spec, registry, default_plugins(registry), api=KubeBinder())
    except ProfileError as exc:
        where = f"{prefix}." if prefix else ""
        raise UsageError([f"{profile}: {where}{p}: {r}" for p, r in exc.problems]) from None
    return service, host, port, tls


async def run(service: ExtenderService, host: str, port: int, tls: ssl.SSLContext | None) -> None:
    from kubernetes.config import ConfigException

    from scheduler_operator.control.extender_server import KubeBinder, serve
    from scheduler_operator.io.transport import Credentials, Transport

    try:
        credentials = Credentials.load()
    except ConfigException as exc:
        raise UsageError([f"no Kubernetes credentials (in-cluster or KUBECONFIG): {exc}"]) from None
    transport = Transport(credentials, max_connections=8)
    if isinstance(service.api, KubeBinder):
        service.api.connect(transport)
    try:
        await serve(service, transport, host=host, port=port, tls=tls)
    finally:
        await transport.close()
