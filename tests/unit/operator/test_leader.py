"""The pure parts of leader election: what is written, when a lease is held, the timing rules.

The state machine against the real API server is in tests/e2e/test_operator_failover.py.
"""

from __future__ import annotations

import pytest

from scheduler_operator.leader import LeaseRecord, desired_record, held_by_other
from scheduler_operator.options import ElectionConfig

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
    assert desired_record("me", current, leading=leading, lease_duration=15.0, now=NOW) == expected


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
    ],
)
def test_election_config_is_checked_as_client_go_does(lease: float, renew: float, retry: float, error: str) -> None:
    with pytest.raises(ValueError, match=error):
        ElectionConfig(lease, renew, retry)


def test_election_defaults_are_kube_schedulers() -> None:
    assert ElectionConfig() == ElectionConfig(15.0, 10.0, 2.0)
