"""The pure parts of leader election: what is written, when a lease is held, the timing rules.

The state machine against the real API server is in tests/e2e/test_operator_failover.py.
"""

from __future__ import annotations

import re

import pytest

from scheduler_operator.control.leader import LeaderElector, LeaseRecord, desired_record, held_by_other
from scheduler_operator.control.options import ElectionConfig

NOW = "2026-01-01T00:00:10.000000Z"
EARLIER = "2026-01-01T00:00:00.000000Z"


@pytest.mark.parametrize(
    ("current", "leading", "expected"),
    [
        pytest.param(None, False, LeaseRecord("me", 15, NOW, NOW, 0), id="create"),
        pytest.param(
            LeaseRecord("me", 15, EARLIER, EARLIER, 3),
            True,
            LeaseRecord("me", 15, EARLIER, NOW, 3),
            id="renew-keeps-acquire",
        ),
        pytest.param(
            LeaseRecord("other", 15, EARLIER, EARLIER, 3),
            False,
            LeaseRecord("me", 15, NOW, NOW, 4),
            id="take-over-counts",
        ),
        pytest.param(LeaseRecord("", 1, EARLIER, EARLIER, 4), False, LeaseRecord("me", 15, NOW, NOW, 5), id="released"),
    ],
)
def test_desired_record(current: LeaseRecord | None, leading: bool, expected: LeaseRecord) -> None:
    assert desired_record("me", current, leading=leading, lease_seconds=15, now=NOW) == expected


@pytest.mark.parametrize(
    ("holder", "observed_at", "now", "held"),
    [
        pytest.param("other", 100.0, 114.9, True, id="other-valid"),
        pytest.param("other", 100.0, 115.0, False, id="other-expired"),
        pytest.param("", 100.0, 101.0, False, id="released"),
        pytest.param("me", 100.0, 101.0, False, id="mine"),
    ],
)
def test_held_by_other_counts_from_when_we_saw_the_record_change(
    holder: str, observed_at: float, now: float, held: bool
) -> None:
    assert held_by_other("me", LeaseRecord(holder, 15), observed_at, now) is held


def test_record_round_trips_through_the_lease_spec() -> None:
    record = LeaseRecord("me", 15, EARLIER, NOW, 2)

    assert LeaseRecord.from_spec(record.to_spec()) == record
    assert LeaseRecord.from_spec({}) == LeaseRecord("", 0)


@pytest.mark.parametrize(
    ("lease", "renew", "retry", "error"),
    [
        pytest.param(10, 10, 2, "--lease-duration must be greater than --renew-deadline", id="lease-not-longer"),
        pytest.param(15, 2.4, 2, "--renew-deadline must be greater than --retry-period", id="renew-too-short"),
        pytest.param(1.5, 0.1, 0.05, "--retry-period must be at least", id="too-fast"),
        pytest.param(0, 10, 2, "--lease-duration must be a positive duration, got 0", id="zero-lease"),
        pytest.param(-15, 10, 2, "--lease-duration must be a positive duration, got -15", id="negative-lease"),
        pytest.param(15, -1, 2, "--renew-deadline must be a positive duration, got -1", id="negative-renew"),
        pytest.param(15, 10, 0, "--retry-period must be a positive duration, got 0", id="zero-retry"),
        pytest.param(float("nan"), 10, 2, "--lease-duration must be a positive duration, got nan", id="nan"),
        pytest.param(float("inf"), 10, 2, "--lease-duration must be a positive duration, got inf", id="inf"),
        pytest.param(
            7.5,
            7.2,
            2,
            "--lease-duration 7.5s is written to the Lease as 7s (leaseDurationSeconds is whole seconds, as client-go "
            "writes it), which is what other replicas wait; it must be longer than --renew-deadline 7.2s",
            id="whole-seconds-within-the-renew-deadline",
        ),
    ],
)
def test_election_config_is_checked_as_client_go_does(lease: float, renew: float, retry: float, error: str) -> None:
    with pytest.raises(ValueError, match=re.escape(error)):
        ElectionConfig(lease, renew, retry)


def test_election_defaults_are_kube_schedulers() -> None:
    assert ElectionConfig() == ElectionConfig(15.0, 10.0, 2.0)


def test_a_fractional_lease_duration_is_kept_exactly_and_written_in_whole_seconds() -> None:
    """client-go: the record gets ``int(LeaseDuration / time.Second)``, its timing the exact value."""
    config = ElectionConfig(7.5, 5.0, 1.0)

    assert (config.lease_duration, config.lease_seconds) == (7.5, 7)
    record = desired_record("me", None, leading=False, lease_seconds=config.lease_seconds, now=NOW)
    assert record.lease_duration_seconds == 7
    assert held_by_other("me", LeaseRecord("other", 7), 100.0, 106.9) is True  # others wait what the record says
    assert held_by_other("me", LeaseRecord("other", 7), 100.0, 107.0) is False


class HeldLock:
    """A Lease another replica holds; or, ``away``, an API server that does not answer."""

    def __init__(self, away: bool = False) -> None:
        self.away = away

    async def get(self) -> tuple[LeaseRecord, str] | None:
        if self.away:
            raise ConnectionRefusedError("the API server is away")
        return LeaseRecord("other", 15, EARLIER, EARLIER), "1"

    async def create(self, record: LeaseRecord) -> str:
        raise AssertionError("not called")

    async def update(self, record: LeaseRecord, resource_version: str) -> str:
        raise AssertionError("not called")

    async def close(self) -> None:
        pass


@pytest.mark.parametrize(
    ("away", "contacts"), [pytest.param(False, 1, id="answered"), pytest.param(True, 0, id="away")]
)
async def test_a_read_of_the_lease_that_is_answered_tells_of_contact(away: bool, contacts: int) -> None:
    """What wakes the reflectors out of their backoff (``reflector.Wakeup``), held lease or not."""
    seen: list[None] = []
    elector = LeaderElector(HeldLock(away), "me", ElectionConfig(), on_contact=lambda: seen.append(None))

    assert await elector.try_acquire_or_renew() is False
    assert len(seen) == contacts
