"""bench/cluster.py: the count of the operator's own bindings, CPU and connection readings, a window's timing."""

from __future__ import annotations

import os
import socket
import threading
import time
from pathlib import Path

import pytest

from bench.cluster import BOUND_LINE, cpu_seconds_between, operator_binds, process_cpu, tcp_connections, window_timing


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


def _burn(seconds: float) -> None:
    """Spin this thread until it has used ``seconds`` of CPU."""
    start = time.thread_time()
    while time.thread_time() - start < seconds:
        pass


def test_cpu_between_two_readings_is_measured_to_the_millisecond() -> None:
    # /proc/<pid>/stat counts in clock ticks (10 ms): 100 measured pods in 0.4 s are 20 ticks, so
    # a tick is 0.1 ms per pod. 35 ms of spinning reads as 30 or 40 ms there. A thread's schedstat
    # is exact once it is off the CPU (a context switch brings its run time up to date), as the
    # bench reads the scheduler's threads, mostly waiting; the reading thread's own is up to a
    # scheduler tick stale, which is why the burn runs on a thread of its own (reading this one
    # against time.process_time() was 2.05 and 2.77 ms apart in the whole suite's process).
    go, done, finish = threading.Event(), threading.Event(), threading.Event()
    spent: list[float] = []

    def work() -> None:
        go.wait()
        start = time.thread_time()
        _burn(0.035)
        spent.append(time.thread_time() - start)
        done.set()
        finish.wait()  # alive and off the CPU at the second reading

    worker = threading.Thread(target=work)
    worker.start()
    try:
        before = process_cpu(os.getpid())
        go.set()
        done.wait()
        after = process_cpu(os.getpid())
    finally:
        finish.set()
        worker.join()
    tid = worker.native_id
    assert tid is not None and tid in before.threads and tid in after.threads
    burned = (after.threads[tid] - before.threads[tid]) / 1e9
    assert abs(burned - spent[0]) < 0.001
    others = sum(after.threads[t] - before.threads[t] for t in before.threads if t != tid) / 1e9
    assert cpu_seconds_between(before, after) == pytest.approx(burned + others)


def test_cpu_of_a_thread_that_ended_between_the_readings_is_still_counted() -> None:
    go = threading.Event()

    def work() -> None:
        go.wait()
        _burn(0.05)

    worker = threading.Thread(target=work)
    worker.start()
    before = process_cpu(os.getpid())
    go.set()
    worker.join()
    after = process_cpu(os.getpid())
    assert cpu_seconds_between(before, after) >= 0.04


def test_the_connections_a_process_holds_to_a_port_are_told_apart_from_the_others() -> None:
    """What a window's ``api_connections_opened`` counts: this process's established TCP
    connections whose far end is the API server's port, not those accepted on it nor to others."""
    server, other = socket.create_server(("127.0.0.1", 0)), socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    clients = [socket.create_connection(("127.0.0.1", port)) for _ in range(3)]
    accepted = [server.accept()[0] for _ in clients]
    elsewhere = socket.create_connection(("127.0.0.1", other.getsockname()[1]))
    try:
        before = tcp_connections(os.getpid(), port)
        assert before == {os.fstat(c.fileno()).st_ino for c in clients}
        clients.pop().close()
        clients.append(socket.create_connection(("127.0.0.1", port)))
        accepted.append(server.accept()[0])
        after = tcp_connections(os.getpid(), port)
        assert len(after) == 3 and len(after - before) == 1  # one closed, one opened
    finally:
        for s in (*clients, *accepted, elsewhere, server, other):
            s.close()


def test_a_stream_window_whose_pods_were_bound_before_the_creators_were_joined() -> None:
    # SchedulingBasic's bench reads its creation clock once the creator threads are joined: a
    # fast scheduler has bound the three pods 15 ms after the first create, the clock reads 17.
    figures = window_timing(100.0, 100.017, 100.0, [100.005, 100.010, 100.015], made=3)
    assert figures["creation_seconds"] == 0.015
    assert figures["seconds"] == 0.015
    assert figures["pods_per_second"] == 200.0
    assert figures["bind_span_seconds"] == 0.01
    # A pod left unbound: the last binding says nothing of when the last pod was made.
    assert window_timing(100.0, 100.017, 100.0, [100.005, 100.015], made=3)["creation_seconds"] == 0.017


def test_a_backlog_window_counts_from_the_schedulers_start() -> None:
    figures = window_timing(100.0, 100.4, 101.0, [101.2, 101.5], made=2)
    assert figures["creation_seconds"] == 0.4
    assert figures["seconds"] == 0.5
    assert figures["pods_per_second"] == 4.0
