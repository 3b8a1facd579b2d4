"""The admission webhook on a real API server: an invalid SchedulerProfile is refused at once
with the message ``crd-scheduler validate`` prints for it; a valid one is admitted; with the
webhook unreachable and ``failurePolicy: Ignore`` an invalid one is admitted and its status
conditions say why (the backstop).

The operator serves the webhook on loopback (the dev cluster's kube-apiserver runs on
127.0.0.1 and calls it by URL) with a self-signed pair made by ``openssl``, the test's CA in
the ValidatingWebhookConfiguration's ``caBundle``. The configuration selects only the test's
namespace, so other tests on the shared cluster never meet it.

A new ValidatingWebhookConfiguration takes effect only once the API server's informer has seen
it, a moment after the create returns; an object created in between is stored unreviewed (a
flake of this file in CI: the first create of an invalid PluginConfig was admitted, the test's
retries then met the webhook, and the valid one of the same name got 409). The ``webhook``
fixture therefore waits, as upstream's e2e does, until the API server sends both kinds to the
webhook, and a refusal is then asserted from one create, never retried.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from scheduler_operator.control.admission import PLUGIN_CONFIG_HANDLER, PROFILE_HANDLER
from scheduler_operator.resources import GROUP, PLUGIN_CONFIG_PLURAL, PROFILE_PLURAL, VERSION
from tests.e2e import eventually
from tests.e2e.operator_support import (
    ROOT,
    Env,
    condition_of,
    free_port,
    plugin_config,
    profile,
    unique,
)

pytestmark = pytest.mark.e2e


def self_signed(tmp: Path) -> tuple[Path, Path, bytes]:
    """(cert, key, CA bundle) for 127.0.0.1, as ``hack/webhook-cert`` makes them."""
    out = subprocess.run(
        ["bash", str(ROOT / "hack" / "webhook-cert"), str(tmp), "127.0.0.1"], capture_output=True, text=True, check=True
    )
    assert out.returncode == 0, out.stderr
    return tmp / "tls.crt", tmp / "tls.key", (tmp / "ca.crt").read_bytes()


def webhook_configuration(name: str, namespace: str, port: int, ca: bytes, policy: str) -> dict[str, Any]:
    """manifests/webhook/validating-webhook.yaml with a URL on loopback instead of the Service."""
    manifest: dict[str, Any] = yaml.safe_load((ROOT / "manifests" / "webhook" / "validating-webhook.yaml").read_text())
    manifest["metadata"] = {"name": name}
    for hook, handler in zip(manifest["webhooks"], (PROFILE_HANDLER, PLUGIN_CONFIG_HANDLER), strict=True):
        hook["clientConfig"] = {"url": f"https://127.0.0.1:{port}/{handler}", "caBundle": base64.b64encode(ca).decode()}
        hook["failurePolicy"] = policy
        hook["namespaceSelector"] = {"matchLabels": {"kubernetes.io/metadata.name": namespace}}
    return manifest


def validate_cli(tmp: Path, obj: dict[str, Any], namespace: str) -> list[str]:
    """What ``crd-scheduler validate`` prints for ``obj`` (file name cut)."""
    path = tmp / f"{obj['metadata']['name']}.yaml"
    path.write_text(yaml.safe_dump({**obj, "metadata": {**obj["metadata"], "namespace": namespace}}))
    result = subprocess.run(
        [sys.executable, "-m", "scheduler_operator", "validate", "-f", str(path)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    return [line.removeprefix(f"{path}: ") for line in result.stdout.splitlines()]


@pytest.fixture
def webhook(env: Env, api: client.ApiClient) -> Iterator[tuple[str, int, bytes]]:
    with serving_webhook(env, api, env.home) as served:
        yield served


@contextlib.contextmanager
def serving_webhook(env: Env, api: client.ApiClient, namespace: str) -> Iterator[tuple[str, int, bytes]]:
    """An operator serving the webhook on loopback, and a configuration that sends it the
    objects of ``namespace``, in effect."""
    cert, key, ca = self_signed(env.tmp)
    port = free_port()
    env.start_operator(
        "--webhook-port", str(port), "--webhook-addr", "127.0.0.1", "--webhook-cert", str(cert), "--webhook-key",
        str(key),
    )  # fmt: skip
    name = unique("crd-scheduler-e2e")
    admission: Any = client.AdmissionregistrationV1Api(api)
    admission.create_validating_webhook_configuration(webhook_configuration(name, namespace, port, ca, "Fail"))
    try:
        wait_in_effect(env, namespace)
        yield name, port, ca
    finally:
        admission.delete_validating_webhook_configuration(name)


def wait_in_effect(env: Env, namespace: str | None = None) -> None:
    """Until the API server sends both kinds to the operator's webhook and the webhook answers.

    Probed with server-side dry-run creates the webhook must deny, so no probe is ever stored,
    even in the window where the configuration is not yet in effect (upstream's e2e waits the
    same way, with marker objects: ``waitWebhookConfigurationReady``,
    ``test/e2e/apimachinery/webhook.go``, v1.36.3).
    """
    probes = [
        profile("probe", env.scheduler, plugins={"score": {"enabled": [{"name": "NoSuchPlugin"}]}}),
        plugin_config("probe", "NoSuchPlugin", {}),
    ]
    custom: Any = client.CustomObjectsApi(env.api)

    def denied(body: dict[str, Any]) -> None:
        plural = PROFILE_PLURAL if body["kind"] == "SchedulerProfile" else PLUGIN_CONFIG_PLURAL
        try:
            custom.create_namespaced_custom_object(GROUP, VERSION, namespace or env.home, plural, body, dry_run="All")
        except client.ApiException as error:
            assert "denied the request" in str(error.body), error.body  # else: not serving yet
            return
        raise AssertionError(f"{body['kind']} probe admitted: the configuration is not in effect yet")

    for probe in probes:
        eventually(functools.partial(denied, probe), timeout=60, interval=0.1)


def _refusal(env: Env, body: dict[str, Any]) -> client.ApiException:
    """The refusal of one create of ``body`` (the webhook is in effect: no retry)."""
    custom: Any = client.CustomObjectsApi(env.api)
    plural = PROFILE_PLURAL if body["kind"] == "SchedulerProfile" else PLUGIN_CONFIG_PLURAL
    with pytest.raises(client.ApiException) as refused:
        custom.create_namespaced_custom_object(GROUP, VERSION, env.home, plural, body)
    return refused.value


def test_invalid_profile_is_refused_with_the_message_validate_prints(env: Env, webhook: Any) -> None:
    bad = profile("bad", env.scheduler, plugins={"score": {"enabled": [{"name": "NoSuchPlugin", "weight": 2}]}})
    error = _refusal(env, bad)
    assert error.status == 422
    message = yaml.safe_load(error.body or "")["message"]
    expected = validate_cli(env.tmp, bad, env.home)
    assert expected == [f"SchedulerProfile {env.home}/bad: spec.plugins.score.enabled[0].name: "
                        "plugin 'NoSuchPlugin' does not exist"]  # fmt: skip
    assert message == f'admission webhook "{PROFILE_HANDLER}.{GROUP}" denied the request: {expected[0]}'


def test_invalid_plugin_config_is_refused_and_valid_objects_are_admitted(env: Env, webhook: Any) -> None:
    bad = plugin_config("fit", "NodeResourcesFit", {"scoringStrategy": {"type": "Nope"}})
    error = _refusal(env, bad)
    assert error.status == 422
    expected = validate_cli(env.tmp, bad, env.home)
    assert len(expected) == 1 and expected[0] in yaml.safe_load(error.body or "")["message"]
    good = profile("good", env.scheduler, pluginConfig=[{"name": "NodeResourcesFit", "args": {
        "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "NodeResourcesFitArgs",
        "scoringStrategy": {"type": "MostAllocated"}}}])  # fmt: skip
    env.custom.create(env.home, good)
    least = {"scoringStrategy": {"type": "LeastAllocated"}}
    env.custom.create(env.home, plugin_config("fit", "NodeResourcesFit", least))
    status = env.custom.wait_status(
        PROFILE_PLURAL, env.home, "good", lambda s: condition_of(s, "Valid").get("status") == "True"
    )
    assert condition_of(status, "Valid")["status"] == "True"


def test_with_the_webhook_down_and_failure_policy_ignore_status_conditions_catch_it(
    env: Env, webhook: tuple[str, int, bytes], api: client.ApiClient
) -> None:
    name, _, ca = webhook
    admission: Any = client.AdmissionregistrationV1Api(api)
    down = webhook_configuration(name, env.home, free_port(), ca, "Ignore")  # nothing listens there
    current = admission.read_validating_webhook_configuration(name)
    down["metadata"]["resourceVersion"] = current.metadata.resource_version
    admission.replace_validating_webhook_configuration(name, down)
    bad = profile("bad", env.scheduler, plugins={"score": {"enabled": [{"name": "NoSuchPlugin"}]}})
    eventually(lambda: env.custom.create(env.home, bad), timeout=30, interval=0.2)
    status = env.custom.wait_status(
        PROFILE_PLURAL, env.home, "bad", lambda s: condition_of(s, "Valid").get("status") == "False"
    )
    assert "plugin 'NoSuchPlugin' does not exist" in condition_of(status, "Valid")["message"]
    fit = plugin_config("fit", "NodeResourcesFit", {"scoringStrategy": {"type": "Nope"}})
    eventually(lambda: env.custom.create(env.home, fit), timeout=30, interval=0.2)
    status = env.custom.wait_status(
        PLUGIN_CONFIG_PLURAL, env.home, "fit", lambda s: condition_of(s, "Valid").get("status") == "False"
    )
    assert 'scoringStrategy.type: Unsupported value: "Nope"' in condition_of(status, "Valid")["message"]


TAKEOVER = (
    "tenant policy rule 'scheduler-names': a profile in namespace '{tenant}' may not serve schedulerName "
    "'default-scheduler': the policy's allowedSchedulerNames does not list it (allowed: ['{allowed}'])"
)


def test_a_tenant_profile_for_default_scheduler_is_refused_and_an_allowed_name_admitted(
    env: Env, api: client.ApiClient
) -> None:
    """The webhook reviews a tenant profile with the home profiles the operator knows (issue 26):
    default-scheduler is refused naming the rule, as the operator and ``validate`` refuse it; a
    name the home profile's policy allows is admitted."""
    allowed = f"{env.scheduler}-team"
    home = profile("default", env.scheduler, tenantPolicy={"allowedSchedulerNames": [allowed]})
    env.custom.create(env.home, home)
    tenant = env.namespace()
    with serving_webhook(env, api, tenant):
        custom: Any = client.CustomObjectsApi(api)
        takeover = profile("takeover", "default-scheduler")
        with pytest.raises(client.ApiException) as refused:
            custom.create_namespaced_custom_object(GROUP, VERSION, tenant, PROFILE_PLURAL, takeover)
        message = yaml.safe_load(refused.value.body or "")["message"]
        rule = TAKEOVER.format(tenant=tenant, allowed=allowed)
        assert refused.value.status == 422
        assert message == (
            f'admission webhook "{PROFILE_HANDLER}.{GROUP}" denied the request: '
            f"SchedulerProfile {tenant}/takeover: spec.schedulerName: {rule}"
        )
        # validate, given the same home profile, says the same.
        (env.tmp / "home.yaml").write_text(
            yaml.safe_dump({**home, "metadata": {**home["metadata"], "namespace": env.home}})
        )
        (env.tmp / "tenant.yaml").write_text(
            yaml.safe_dump({**takeover, "metadata": {"name": "takeover", "namespace": tenant}})
        )
        out = subprocess.run(
            [sys.executable, "-m", "scheduler_operator", "validate", "-f", str(env.tmp / "home.yaml"),
             "-f", str(env.tmp / "tenant.yaml"), "--home-namespace", env.home],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert out.returncode == 2 and rule in out.stdout, out.stdout + out.stderr
        # The name the policy allows is admitted.
        custom.create_namespaced_custom_object(GROUP, VERSION, tenant, PROFILE_PLURAL, profile("own", allowed))
