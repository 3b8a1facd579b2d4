"""The plugins' one write API (``scheduler_core.framework.writes``): the verbs build one call each,
for the one ``write`` of every implementation; refusals are read by code, not by wording. What
the backends make of the calls is tested on the real API server (tests/e2e/test_backend_contract.py)."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from scheduler_core.framework import PodInfo, Status
from scheduler_core.framework.writes import (
    PERSISTENT_VOLUMES,
    PODS,
    RESOURCE_CLAIMS,
    STATUS,
    ClusterAPI,
    Precondition,
    Verb,
    Write,
    Written,
    is_conflict,
    is_not_found,
    preempt,
    refused,
)
from tests.wrappers import make_pod


class Recorder(ClusterAPI):
    """Records every write and answers it with ``answer``."""

    def __init__(self, answer: Status | None = None) -> None:
        self.calls: list[Write] = []
        self.answer = answer

    async def bind(self, pod: PodInfo, node_name: str, annotations: Mapping[str, str] | None = None) -> Status | None:
        raise AssertionError("no bind here")

    async def write(self, call: Write) -> Written:
        self.calls.append(call)
        return (None, self.answer) if self.answer is not None else (dict(call.obj), None)


CLAIM = {"metadata": {"name": "c", "namespace": "ns", "resourceVersion": "7"}}


async def test_each_verb_is_one_write() -> None:
    api = Recorder()
    version = Precondition(resource_version="6")
    await api.create(RESOURCE_CLAIMS, CLAIM)
    await api.update(RESOURCE_CLAIMS, CLAIM, subresource=STATUS)
    await api.patch(PODS, {"metadata": {"name": "p"}}, precondition=Precondition(uid="u"), subresource=STATUS)
    await api.delete(RESOURCE_CLAIMS, CLAIM, precondition=version)
    assert api.calls == [
        Write(Verb.CREATE, RESOURCE_CLAIMS, CLAIM),
        Write(Verb.UPDATE, RESOURCE_CLAIMS, CLAIM, None, STATUS),
        Write(Verb.PATCH, PODS, {"metadata": {"name": "p"}}, Precondition(uid="u"), STATUS),
        Write(Verb.DELETE, RESOURCE_CLAIMS, CLAIM, version),
    ]


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        pytest.param(Write(Verb.UPDATE, RESOURCE_CLAIMS, CLAIM), Precondition(resource_version="7"), id="put-its-own"),
        pytest.param(Write(Verb.PATCH, RESOURCE_CLAIMS, CLAIM), Precondition(resource_version="7"), id="patch-its-own"),
        pytest.param(
            Write(Verb.UPDATE, RESOURCE_CLAIMS, CLAIM, Precondition(uid="u", resource_version="6")),
            Precondition(uid="u", resource_version="6"), id="given-wins",
        ),
        pytest.param(Write(Verb.DELETE, RESOURCE_CLAIMS, CLAIM), Precondition(), id="delete-only-given"),
        pytest.param(Write(Verb.CREATE, RESOURCE_CLAIMS, CLAIM), Precondition(), id="create-none"),
    ],
)  # fmt: skip
def test_what_a_write_expects_of_the_stored_object(call: Write, expected: Precondition) -> None:
    assert call.expected() == expected


async def test_only_a_pod_is_deleted_with_a_reason() -> None:
    api = Recorder()
    with pytest.raises(ValueError, match=r"delete of resourceclaims.resource.k8s.io ns/c: reason: only a pod"):
        await api.delete(RESOURCE_CLAIMS, CLAIM, reason="preempted")
    assert api.calls == []


@pytest.mark.parametrize(
    ("answer", "done"),
    [
        pytest.param(None, True, id="deleted"),
        pytest.param(refused('pods "p" not found', code=404, reason="NotFound"), True, id="gone-already"),
        pytest.param(refused("the UID in the precondition", code=409, reason="Conflict"), True, id="re-created"),
        pytest.param(refused('pods "p" is forbidden', code=403, reason="Forbidden"), False, id="forbidden"),
        pytest.param(Status.as_error("connection reset"), False, id="network"),
    ],
)
async def test_preempting_a_victim_deletes_it_under_its_uid_with_the_reason(answer: Status | None, done: bool) -> None:
    api = Recorder(answer)
    victim = make_pod().name("p").namespace("ns").uid("u1").info()

    status = await preempt(api, victim, "crd-scheduler: preempting to accommodate a higher priority pod")

    assert (status is None) is done
    assert api.calls == [
        Write(Verb.DELETE, PODS, victim.pod, Precondition(uid="u1"),
              reason="crd-scheduler: preempting to accommodate a higher priority pod"),
    ]  # fmt: skip


def test_refusals_are_read_by_their_code_and_reason() -> None:
    stale = refused("the object has been modified", code=409, reason="Conflict")
    taken = refused('resourceclaims.resource.k8s.io "c" already exists', code=409, reason="AlreadyExists")
    gone = refused('persistentvolumes "pv" not found', code=404, reason="NotFound")
    worded = Status.as_error("Operation cannot be fulfilled: the object has been modified")
    assert [is_conflict(s) for s in (stale, taken, gone, worded)] == [True, False, False, False]
    assert [is_not_found(s) for s in (stale, taken, gone, worded)] == [False, False, True, False]
    assert gone.message() == 'persistentvolumes "pv" not found'
    assert PERSISTENT_VOLUMES.qualified == "persistentvolumes"
    assert RESOURCE_CLAIMS.qualified == "resourceclaims.resource.k8s.io"
