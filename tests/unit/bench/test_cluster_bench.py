"""bench/cluster.py's count of the operator's own bindings."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from bench.cluster import BOUND_LINE, operator_binds


def test_binds_logged_after_the_watch_saw_them_are_counted(tmp_path: Path) -> None:
    """The watch sees the last bindings before the operator logs them: the count waits for them."""
    log = tmp_path / "operator.log"
    log.write_text("".join(f"INFO {BOUND_LINE}ns/p{i}\n" for i in range(3)))

    def finish() -> None:
        time.sleep(0.2)
        with log.open("a") as out:
            out.write(f"INFO {BOUND_LINE}ns/p3\n")

    writer = threading.Thread(target=finish)
    writer.start()
    try:
        assert operator_binds(log, 4) == 4
    finally:
        writer.join()


def test_binds_another_scheduler_made_stay_uncounted(tmp_path: Path) -> None:
    log = tmp_path / "operator.log"
    log.write_text(f"INFO {BOUND_LINE}ns/p0\n")
    assert operator_binds(log, 2, wait=0.1) == 1
