"""The JSON API over a store of 10,000 runs: reads at rest and while 200 jobs start, and 100
server-sent event clients while 1,000 runs change.

Two processes, so the clients never steal the server's loop: this script starts a server child
in a session of its own (``bench_api.py --serve HOME``: a real ``serve()`` on 127.0.0.1, port 0,
with the local launcher and a disk journal with fsync) and runs the clients in the parent under
trio: httpx for the actions and the event streams, a bare keep-alive HTTP/1.1 client for the
timed GETs (see ``Connection``).

Before the server starts, 10,000 finished runs (100 ``hist-NN`` jobs x 100 run dates, one
succeeded attempt each) are written straight into its journal, so the server replays them;
``history_days`` is large enough that none is archived. The server child runs a 10 ms ticker on
its loop (``trio.sleep_until(t + 0.01)``, lateness = actual wake - intended) and writes the
samples, stamped with ``time.monotonic()`` (CLOCK_MONOTONIC, shared by both processes), when it
stops; the parent cuts them by the windows of its phases.

Phases (a *client* is a task with its own connection that, after each answer, pauses a random
time averaging ``--think-ms`` (default 100 ms) before its next request, as people, CLIs and
dashboards do; ``--think-ms 0`` makes each send as soon as it is answered, a closed loop like
``wrk -c 20``, whose latency is mostly the queue: twenty requests in flight, each waiting for
the CPU time of those before it, on two cores about 20 ms at rest. The goals are read for the
paced clients; the closed loop measures throughput):

0. floor: 20 clients, ``GET /healthz`` only: what hypercorn and Quart cost at this concurrency.
1. at rest: 20 clients, each doing rounds of ``GET /api/v1/runs?date=D`` (100 runs of 100
   jobs), ``GET /api/v1/runs/<id>`` (a random one of the 10,000) and ``GET /healthz``.
2. busy: ``POST /api/v1/jobs/go/trigger``; ``go`` runs ``true`` and 200 jobs ``w-NNN`` that
   depend on it then run ``sleep 1`` each under real minders; the same 20-client load runs from
   the trigger until all 201 runs have succeeded.
3. events: ``hold`` job ``churn`` and ``backfill`` it over 1,000 days (1,000 runs created held);
   then 100 SSE clients connect (``GET /api/v1/events``, resuming after the backfill's own event,
   so none can miss the first change by a race), ``release`` changes the 1,000 runs to waiting
   at once, and a final ``hold`` whose ``why`` marks the end. Each client must receive every
   event id from the first after the backfill to that last one, contiguous, in order, and no
   ``reset``.

The server's CPU time per phase (``/proc/PID/stat``) is reported beside the latencies: on a
shared two-core machine it is the figure that moves least from run to run. Beside it, the whole
machine's busy CPU time (``/proc/stat``) and how long the server's loop thread waited on the
kernel's run queue for a core (``/proc/PID/task/PID/schedstat``): the first says how much else
ran, the second how much of that came between the loop and its work. (On a virtual machine the
second also counts the microseconds an idle virtual CPU takes to wake, a few hundred ms over a
phase at rest: compare it between phases and runs, not with zero.)

Figures (last line, JSON): ``*_p99_ms_rest`` / ``*_p99_ms_busy`` for ``list`` (goal p99 <= 100
ms) and ``one`` (goal p99 <= 20 ms), with p50 and max; ``healthz_p99_ms`` (healthz beside them
in phase 1) and ``floor_p99_ms`` (phase 0) to read them against on a noisy machine; request
rates; ``server_cpu_ms_per_req_*``; ``sse_clients``, ``sse_clients_complete``, ``sse_events``
(per client), ``sse_deliver_s`` (release sent to the end marker at the last client),
``sse_server_us_per_frame`` (server CPU over frames delivered); ``busy_starting_s`` (trigger to
the pass in which the engine started the last of the 200 attempts; their commands follow over
``busy_ends_span_s`` or so), ``busy_starting_requests`` and ``busy_starting_mean_ms`` (the
requests sent in that window and their mean latency: on two cores it is where the busy phase's
slow answers are) and ``busy_over_20_ms`` (busy requests of any kind over 20 ms);
``machine_cpu_s_*``, ``server_queued_ms_*`` and ``client_queued_ms_*`` (the clients' loop
thread: a slow answer can be the client's wait for a core too) per phase (above);
``file_create_us``, the CPU time one new file cost in the bench's folder before it began
(``proc_readings.file_create_us``: the busy phase creates four files an attempt, and on some file
systems that cost moves up to fiftyfold);
``lag_p99_ms_*`` per phase (goal for ``sse`` <= 10 ms); ``gc_max_ms_*``, the server's longest
cyclic-collector pass in each phase (``gc.callbacks``: a long tick that matches one is the
collector, not the engine); and the goals as booleans.

Run: ``uv run python tests/bench/bench_api.py [--rounds N] [--think-ms MS] [--profile FILE]
[--rounds-of-loop]``. ``--profile`` runs the server under cProfile (slower; for finding where
the time goes, not for the figures) and prints its top functions; ``--rounds-of-loop`` records
the server loop's rounds over 4 ms with their longest task steps (``loop_rounds.py``: wall and
CPU time, the wait for a core, the collector's time, and a request's path) and prints the
longest, by phase.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import pstats
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import trio
from figures import percentile
from loop_rounds import LongRounds, print_longest
from proc_readings import file_create_us, machine_busy_s, process_cpu_s, queued_s

HIST_JOBS = 100
HIST_DAYS = 100
WORKERS = 200
CHURN_DAYS = 1_000
CLIENTS = 20
SSE_CLIENTS = 100
TICK = 0.01
SSE_TIMEOUT = 90.0
SERVER_DEADLINE = 300.0
"""The server child stops by itself after this many seconds, whatever happens to the parent."""
START_MARK, END_MARK = "bench-start", "bench-end"


# ---- the state the server starts from ---------------------------------------------------------


def config_text() -> str:
    never = '"0 3 1 1 *"'  # fires once a year: only the bench's own actions make runs
    lines = [
        "scheduler:",
        "  state_dir: state",
        "  log_dir: logs",
        "  max_running: 250",
        f"  history_days: {CHURN_DAYS + HIST_DAYS + 1_000}",
        "jobs:",
    ]
    for i in range(HIST_JOBS):
        lines += [f"  hist-{i:02d}:", f"    schedule: {never}", '    command: ["true"]']
    lines += ["  go:", f"    schedule: {never}", '    command: ["true"]']
    for i in range(WORKERS):
        lines += [f"  w-{i:03d}:", "    depends_on: [go]", '    command: [sleep, "1"]']
    # churn waits on gate, which never runs: released churn runs wait instead of starting
    lines += ["  gate:", f"    schedule: {never}", '    command: ["true"]']
    lines += ["  churn:", "    depends_on: [gate]", '    command: ["true"]']
    return "\n".join(lines) + "\n"


def history_days(today: date) -> list[date]:
    return [today - timedelta(days=HIST_DAYS - i) for i in range(HIST_DAYS)]


def write_history(state_dir: Path, today: date) -> list[str]:
    """Commit HIST_JOBS x HIST_DAYS succeeded runs into the journal; return their ids."""
    from pysched.engine.runs import Attempt, AttemptOutcome, Run, RunState, Trigger
    from pysched.store import Record, Store

    rng = random.Random(5)
    records: list[Record] = []
    ids: list[str] = []
    for day in history_days(today):
        for i in range(HIST_JOBS):
            fired = datetime(day.year, day.month, day.day, 3, tzinfo=UTC) + timedelta(seconds=i * 7)
            run = Run(
                job=f"hist-{i:02d}",
                run_date=day,
                n=1,
                created_at=fired,
                scheduled_for=fired,
                trigger=Trigger.SCHEDULE,
                state=RunState.SUCCEEDED,
                reason="exit 0",
            )
            started = fired + timedelta(milliseconds=rng.randint(15, 60))
            run.attempts.append(
                Attempt(
                    number=1,
                    started_at=started,
                    ended_at=started + timedelta(seconds=rng.uniform(5, 900)),
                    exit_code=0,
                    outcome=AttemptOutcome.SUCCEEDED,
                    info={"minder_pid": rng.randint(1_000, 99_999), "minder_start": 1},
                )
            )
            records.append(Record(type="run", data=run.to_data()))
            ids.append(run.run_id)

    async def commit_all() -> None:
        store = Store.open(state_dir, sync=False)
        try:
            for start in range(0, len(records), 1_000):
                await store.commit(records[start : start + 1_000])
        finally:
            store.close()

    trio.run(commit_all)
    return ids


# ---- the server child -------------------------------------------------------------------------


def serve_child(home: Path, *, rounds: bool = False) -> None:
    """Serve ``home/pysched.yaml`` until SIGTERM (or SERVER_DEADLINE), with a 10 ms ticker;
    write the URL to ``home/url`` once listening and the ticker's samples to ``home/lags.json``
    at the end (with ``rounds``, the loop's long rounds to ``home/rounds.json`` too)."""
    from pysched.config import load_config
    from pysched.config.model import Listen
    from pysched.launch.local import LocalLauncher
    from pysched.service import Serving, serve

    config = load_config(home / "pysched.yaml")
    samples: list[tuple[float, float]] = []
    collections: list[tuple[float, float, int]] = []
    collecting = [0.0]

    def on_collection(phase: str, info: dict[str, int]) -> None:
        # each collection of the cyclic collector: (when it ended, how long, generation)
        if phase == "start":
            collecting[0] = time.perf_counter()
        else:
            spent = (time.perf_counter() - collecting[0]) * 1000
            collections.append((time.monotonic(), spent, info["generation"]))

    gc.callbacks.append(on_collection)

    async def ticker() -> None:
        while True:
            intended = trio.current_time() + TICK
            await trio.sleep_until(intended)
            samples.append((time.monotonic(), (trio.current_time() - intended) * 1000))

    long_rounds = LongRounds() if rounds else None

    async def main() -> None:
        if long_rounds is not None:
            trio.lowlevel.add_instrument(long_rounds)
        async with trio.open_nursery() as outer:
            outer.start_soon(ticker)
            with trio.move_on_after(SERVER_DEADLINE):
                async with trio.open_nursery() as nursery:
                    serving: Serving = await nursery.start(
                        partial(
                            serve,
                            config,
                            launcher_factory=lambda c: LocalLauncher(c.scheduler.log_dir),
                            listen=Listen.parse("127.0.0.1:0"),
                        )
                    )
                    (home / "url.part").write_text(serving.urls[0])
                    (home / "url.part").rename(home / "url")
            outer.cancel_scope.cancel()
        (home / "lags.json").write_text(json.dumps(samples))
        (home / "gc.json").write_text(json.dumps(collections))
        if long_rounds is not None:
            (home / "rounds.json").write_text(json.dumps(long_rounds.rounds))

    trio.run(main)


# ---- the client side --------------------------------------------------------------------------


_T0 = time.monotonic()


def say(text: str) -> None:
    print(f"[{time.monotonic() - _T0:6.1f} s] {text}", flush=True)


@dataclass
class Latencies:
    by_kind: dict[str, list[float]] = field(default_factory=dict[str, list[float]])
    errors: list[str] = field(default_factory=list[str])
    seconds: float = 0.0
    sent: list[tuple[float, float]] = field(default_factory=list[tuple[float, float]])
    """Each request's (when it was sent, on CLOCK_MONOTONIC; its latency in ms)."""

    def add(self, kind: str, ms: float, sent_at: float) -> None:
        self.by_kind.setdefault(kind, []).append(ms)
        self.sent.append((sent_at, ms))

    def summary(self, kind: str) -> dict[str, float]:
        values = self.by_kind.get(kind, [])
        return {
            "p50": round(percentile(values, 0.5), 2),
            "p99": round(percentile(values, 0.99), 2),
            "max": round(max(values, default=float("nan")), 2),
            "n": len(values),
        }

    def rate(self) -> float:
        total = sum(len(v) for v in self.by_kind.values())
        return round(total / self.seconds, 1) if self.seconds else 0.0


Request = tuple[str, str]  # kind, path


class Connection:
    """A bare HTTP/1.1 keep-alive client for GETs answered with a Content-Length.

    The load's clients use it rather than httpx because on two cores the client's own CPU
    time counts: httpx spends about as much per request as the server's whole answer to
    ``/healthz``, and that would be measured as the server's latency.
    """

    def __init__(self, host: str, port: int, token: str) -> None:
        self._host, self._port = host, port
        self._head = f"Host: {host}:{port}\r\nAuthorization: Bearer {token}\r\n\r\n".encode()
        self._stream: trio.SocketStream | None = None
        self._buffer = b""

    async def get(self, path: str) -> tuple[int, bytes]:
        if self._stream is None:
            self._stream = await trio.open_tcp_stream(self._host, self._port)
        stream = self._stream
        await stream.send_all(b"GET %s HTTP/1.1\r\n%s" % (path.encode(), self._head))
        buffer = self._buffer
        while (end := buffer.find(b"\r\n\r\n")) < 0:
            buffer += await self._receive(stream)
        head, body = buffer[:end].lower(), buffer[end + 4 :]
        status = int(head[9:12])
        at = head.find(b"\r\ncontent-length:")
        if at < 0:
            raise RuntimeError(f"GET {path}: no Content-Length in {head!r}")
        length = int(head[at + 17 : head.find(b"\r\n", at + 2)].strip() or b"0")
        while len(body) < length:
            body += await self._receive(stream)
        self._buffer = body[length:]
        return status, body[:length]

    @staticmethod
    async def _receive(stream: trio.SocketStream) -> bytes:
        data = await stream.receive_some(256 * 1024)
        if not data:
            raise RuntimeError("the server closed the connection")
        return data

    async def aclose(self) -> None:
        if self._stream is not None:
            await self._stream.aclose()


async def closed_loop(
    url: str,
    token: str,
    rounds: Callable[[random.Random], list[Request]],
    *,
    clients: int,
    keep_going: Callable[[int], bool],
    think_ms: float = 0.0,
) -> Latencies:
    """``clients`` tasks with a connection each, sending their requests back to back while
    ``keep_going(rounds done)``; with ``think_ms``, each waits a random pause averaging that
    long before its first request and after each answer (people and dashboards, rather than a
    load generator: without the first pause all twenty sent their first request in the same
    millisecond of each phase, and eight lists at once made the phase's slowest answers)."""
    result = Latencies()
    parsed = httpx.URL(url)
    host, port = parsed.host, parsed.port or 80

    async def one_client(index: int) -> None:
        rng = random.Random(index)
        connection = Connection(host, port, token)
        done = 0
        if think_ms:  # people do not all click at the instant a phase begins: nor do these
            await trio.sleep(rng.expovariate(1000.0 / think_ms))
        try:
            while keep_going(done):
                for kind, path in rounds(rng):
                    sent_at, t0 = time.monotonic(), time.perf_counter()
                    status, _ = await connection.get(path)
                    result.add(kind, (time.perf_counter() - t0) * 1000, sent_at)
                    if status != 200:
                        result.errors.append(f"{path}: {status}")
                    if think_ms:
                        await trio.sleep(rng.expovariate(1000.0 / think_ms))
                done += 1
        finally:
            await connection.aclose()

    t0 = time.perf_counter()
    async with trio.open_nursery() as nursery:
        for index in range(clients):
            nursery.start_soon(one_client, index)
    result.seconds = time.perf_counter() - t0
    return result


@dataclass
class Stream:
    """What one SSE client saw."""

    ids: list[int] = field(default_factory=list[int])
    resets: int = 0
    connected: bool = False
    done: bool = False
    done_at: float = 0.0
    error: str = ""


async def sse_frames(response: httpx.Response) -> AsyncIterator[bytes]:
    """The frames of an event stream, each without the blank line that ends it."""
    buffer = b""
    async for chunk in response.aiter_bytes():
        frames = (buffer + chunk).split(b"\n\n")
        buffer = frames.pop()
        for frame in frames:
            yield frame


async def sse_client(
    client: httpx.AsyncClient,
    after: int,
    seen: Stream,
    connected: Callable[[], None],
    *,
    end_mark: bytes,
) -> None:
    """Read the event stream after id ``after`` until the frame carrying ``end_mark``."""
    headers = {"Last-Event-ID": str(after)}
    try:
        async with client.stream("GET", "/api/v1/events", headers=headers) as response:
            if response.status_code != 200:
                seen.error = f"status {response.status_code}"
                connected()
                return
            async for frame in sse_frames(response):
                if frame.startswith(b"retry:"):
                    seen.connected = True
                    connected()
                elif frame.startswith(b"id: "):
                    head, _, rest = frame.partition(b"\n")
                    seen.ids.append(int(head[4:]))
                    if rest.startswith(b"event: reset"):
                        seen.resets += 1
                    if end_mark in rest:
                        seen.done = True
                        seen.done_at = time.monotonic()
                        return
    except httpx.HTTPError as exc:
        seen.error = repr(exc)
        if not seen.connected:
            connected()


async def wait_for_mark(client: httpx.AsyncClient, mark: bytes, action: Awaitable[Any]) -> int:
    """Subscribe, run ``action``, and return the id of the first event carrying ``mark``."""
    seen = Stream()
    subscribed = trio.Event()
    async with trio.open_nursery() as nursery:

        async def read() -> None:
            async with client.stream("GET", "/api/v1/events") as response:
                async for frame in sse_frames(response):
                    if frame.startswith(b"retry:"):
                        subscribed.set()
                    elif frame.startswith(b"id: ") and mark in frame:
                        seen.ids.append(int(frame.partition(b"\n")[0][4:]))
                        nursery.cancel_scope.cancel()
                        return

        nursery.start_soon(read)
        await subscribed.wait()
        await trio.sleep(0.2)  # the stream sets its cursor just after the retry frame
        await action
    return seen.ids[0]


@dataclass
class Phases:
    """Each phase's window on CLOCK_MONOTONIC; the CPU time the server, the clients and the
    whole machine spent in it; and how long the server's loop and the clients' waited for a
    core in it."""

    server_pid: int
    windows: dict[str, tuple[float, float]] = field(default_factory=dict[str, tuple[float, float]])
    server_cpu: dict[str, float] = field(default_factory=dict[str, float])
    client_cpu: dict[str, float] = field(default_factory=dict[str, float])
    machine_cpu: dict[str, float] = field(default_factory=dict[str, float])
    server_queued: dict[str, float] = field(default_factory=dict[str, float])
    client_queued: dict[str, float] = field(default_factory=dict[str, float])

    @contextlib.contextmanager
    def window(self, name: str) -> Iterator[None]:
        t0, server0, client0 = time.monotonic(), process_cpu_s(self.server_pid), time.process_time()
        machine0, queued0 = machine_busy_s(), queued_s(self.server_pid)
        client_queued0 = queued_s(os.getpid())
        try:
            yield
        finally:
            self.windows[name] = (t0, time.monotonic())
            self.server_cpu[name] = process_cpu_s(self.server_pid) - server0
            self.client_cpu[name] = time.process_time() - client0
            self.machine_cpu[name] = machine_busy_s() - machine0
            self.server_queued[name] = queued_s(self.server_pid) - queued0
            self.client_queued[name] = queued_s(os.getpid()) - client_queued0


async def run_clients(
    home: Path, url: str, server_pid: int, run_ids: list[str], args: argparse.Namespace
) -> dict[str, Any]:
    token = (home / "state" / "admin.token").read_text().strip()
    auth = {"Authorization": f"Bearer {token}"}
    today = datetime.now(UTC).date()
    days = history_days(today)
    phases = Phases(server_pid)
    out: dict[str, Any] = {"phases": phases, "think_ms": args.think_ms}
    limits = httpx.Limits(max_connections=SSE_CLIENTS + 10, max_keepalive_connections=SSE_CLIENTS)
    timeout = httpx.Timeout(60.0)
    async with httpx.AsyncClient(
        base_url=url, headers=auth, limits=limits, timeout=timeout
    ) as client:

        def mixed(rng: random.Random) -> list[Request]:
            return [
                ("list", f"/api/v1/runs?date={rng.choice(days).isoformat()}"),
                ("one", f"/api/v1/runs/{rng.choice(run_ids)}"),
                ("healthz", "/healthz"),
            ]

        load = partial(closed_loop, url, token, clients=CLIENTS, think_ms=args.think_ms)
        await load(mixed, keep_going=lambda n: n < 2)  # warm-up: connections, first-call costs

        say("phase 0: floor (healthz only)")
        with phases.window("floor"):
            out["floor"] = await load(
                lambda rng: [("healthz", "/healthz")], keep_going=lambda n: n < args.rounds * 3
            )
        say("phase 1: at rest")
        with phases.window("rest"):
            out["rest"] = await load(mixed, keep_going=lambda n: n < args.rounds)

        # phase 2: the same load while go and its 200 dependents start and run
        say("phase 2: while 200 jobs start")
        finished = trio.Event()
        with phases.window("busy"):
            response = await client.post("/api/v1/jobs/go/trigger", json={"why": "bench"})
            response.raise_for_status()
            run_date = response.json()["run_date"]

            async def watch() -> None:
                deadline = time.monotonic() + 60
                path = f"/api/v1/runs?date={run_date}&state=succeeded&limit=1"
                while time.monotonic() < deadline:
                    answer = await client.get(path)
                    if answer.json()["count"] >= WORKERS + 1:
                        break
                    await trio.sleep(0.2)
                finished.set()

            async with trio.open_nursery() as nursery:
                nursery.start_soon(watch)
                out["busy"] = await load(mixed, keep_going=lambda n: not finished.is_set())
        answer = await client.get(f"/api/v1/runs?date={run_date}&limit=1000")
        today_runs = answer.json()["runs"]
        out["busy_states"] = _count(run["state"] for run in today_runs)
        workers = [run for run in today_runs if run["job"].startswith("w-")]

        def stamps(key: str) -> list[float]:  # on the wall clock
            return sorted(datetime.fromisoformat(r[key]).timestamp() for r in workers if r[key])

        # an attempt's start is the engine's (the pass that started it, journaled before the
        # minder is asked for); its end is the minder's own, ``sleep 1`` after the command
        # started, so the ends show how the commands' starts were spread
        ends = stamps("ended_at")
        out["busy_ends_span_s"] = round(ends[-1] - ends[0], 2) if ends else None
        wall_to_monotonic = time.monotonic() - time.time()
        out["busy_starts"] = [at + wall_to_monotonic for at in stamps("started_at")]

        # phase 3: 1,000 held runs, 100 event-stream clients, then the 1,000 runs change at once
        say("phase 3: event streams")
        first = today - timedelta(days=CHURN_DAYS + HIST_DAYS + 10)
        last = first + timedelta(days=CHURN_DAYS - 1)
        response = await client.post("/api/v1/jobs/churn/hold", json={"why": "bench"})
        response.raise_for_status()
        body = {"from": first.isoformat(), "to": last.isoformat(), "why": START_MARK}
        start_id = await wait_for_mark(
            client, START_MARK.encode(), client.post("/api/v1/jobs/churn/backfill", json=body)
        )
        streams = [Stream() for _ in range(args.sse_clients)]
        all_connected = trio.Event()
        count = 0

        def connected() -> None:
            nonlocal count
            count += 1
            if count == len(streams):
                all_connected.set()

        t_release = time.monotonic()
        with trio.move_on_after(SSE_TIMEOUT):
            async with trio.open_nursery() as nursery:
                for seen in streams:
                    nursery.start_soon(
                        partial(
                            sse_client,
                            client,
                            start_id,
                            seen,
                            connected,
                            end_mark=END_MARK.encode(),
                        )
                    )
                await all_connected.wait()
                say(f"{len(streams)} streams connected; releasing {CHURN_DAYS:,} runs")
                with phases.window("sse"):
                    t_release = time.monotonic()
                    response = await client.post("/api/v1/jobs/churn/release", json={})
                    response.raise_for_status()
                    out["released"] = len(response.json()["released"])
                    response = await client.post("/api/v1/jobs/churn/hold", json={"why": END_MARK})
                    response.raise_for_status()
                    while not all(seen.done or seen.error for seen in streams):
                        await trio.sleep(0.05)
        out["streams"] = streams
        out["start_id"] = start_id
        out["t_release"] = t_release
    return out


def _count(values: Any) -> dict[str, int]:
    counts: dict[str, int] = {}
    for value in values:
        counts[value] = counts.get(value, 0) + 1
    return counts


# ---- the parent: setup, the child's lifetime, the figures ------------------------------------


def start_server(home: Path, profile: Path | None, rounds: bool) -> subprocess.Popen[bytes]:
    command = [sys.executable, __file__, "--serve", str(home)]
    if profile is not None:
        command += ["--profile", str(profile)]
    if rounds:
        command += ["--rounds-of-loop"]
    log = (home / "server.log").open("wb")
    # a session of its own, as a served scheduler has (under systemd, or in another terminal
    # than its clients): where the kernel shares the CPU between sessions (sched_autogroup),
    # the clients' CPU then does not count against the server's share
    return subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def stop_server(server: subprocess.Popen[bytes]) -> None:
    """SIGTERM, a grace period, then SIGKILL."""
    if server.poll() is None:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def wait_for_url(home: Path, server: subprocess.Popen[bytes], seconds: float = 60) -> str:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if (home / "url").exists():
            return (home / "url").read_text()
        if server.poll() is not None:
            log = (home / "server.log").read_text()[-3000:]
            raise SystemExit(f"the server exited ({server.returncode}) before listening:\n{log}")
        time.sleep(0.05)
    raise SystemExit(f"the server did not listen within {seconds} s")


def lags_in(samples: list[list[float]], window: tuple[float, float]) -> list[float]:
    return [lag for at, lag in samples if window[0] <= at <= window[1]]


SLOW_MS = 20.0
"""A request slower than this counts in ``busy_over_20_ms`` (the one-run goal)."""


def while_starting(busy: Latencies, trigger: float, starts: list[float]) -> dict[str, Any]:
    """How the busy phase's requests fared while the engine started its attempts: between the
    trigger and the last attempt's start (``starts``, the engine's), the requests sent and their
    mean latency; and over the whole phase, how
    many took over ``SLOW_MS`` (any kind). Steadier than a p99 over about 120 requests a kind,
    which is about the second-slowest and so rests on which kinds fell into this window."""
    last = starts[-1] if starts else trigger
    during = [ms for at, ms in busy.sent if trigger <= at <= last]
    return {
        "busy_starting_s": round(last - trigger, 3),
        "busy_starting_requests": len(during),
        "busy_starting_mean_ms": round(sum(during) / len(during), 1) if during else None,
        "busy_over_20_ms": sum(ms > SLOW_MS for _, ms in busy.sent),
    }


def report(
    result: dict[str, Any],
    samples: list[list[float]],
    start_s: float,
    collections: list[list[float]],
) -> dict[str, Any]:
    phases: Phases = result["phases"]
    lag = {name: lags_in(samples, window) for name, window in phases.windows.items()}
    gc_ms = {
        name: [spent for at, spent, _ in collections if window[0] <= at <= window[1]]
        for name, window in phases.windows.items()
    }
    cpu_per_request: dict[str, float] = {}
    for name in ("floor", "rest", "busy"):
        latencies: Latencies = result[name]
        parts = [
            f"{kind} p50 {s['p50']} / p99 {s['p99']} / max {s['max']} ms (n={s['n']})"
            for kind in ("list", "one", "healthz")
            if (s := latencies.summary(kind))["n"]
        ]
        requests = sum(len(v) for v in latencies.by_kind.values())
        cpu_per_request[name] = phases.server_cpu[name] / requests * 1000 if requests else 0.0
        lags = lag[name]
        print(
            f"{name}: {latencies.rate()} req/s over {latencies.seconds:.1f} s; " + "; ".join(parts)
        )
        print(
            f"  server CPU {cpu_per_request[name]:.2f} ms a request "
            f"({phases.server_cpu[name]:.1f} s), clients' CPU {phases.client_cpu[name]:.1f} s, "
            f"the machine's {phases.machine_cpu[name]:.1f} s; the server's loop waited "
            f"{phases.server_queued[name] * 1000:.0f} ms for a core, the clients' "
            f"{phases.client_queued[name] * 1000:.0f} ms; "
            f"server loop lateness p99 {percentile(lags, 0.99):.2f} ms, max "
            f"{max(lags, default=float('nan')):.2f} ms; errors {len(latencies.errors)}; "
            f"longest collection {max(gc_ms[name], default=0.0):.1f} ms"
        )
        for error in latencies.errors[:5]:
            print(f"  error: {error}")
    print(
        f"busy: today's runs by state {result['busy_states']}; the {WORKERS} w-NNN attempts "
        f"ended over {result['busy_ends_span_s']} s (so started over about as long)"
    )
    starting = while_starting(result["busy"], phases.windows["busy"][0], result["busy_starts"])
    print(
        f"  while the engine started the {WORKERS} attempts ({starting['busy_starting_s']} s "
        f"from the trigger): {starting['busy_starting_requests']} requests sent, mean "
        f"{starting['busy_starting_mean_ms']} ms; requests over {SLOW_MS:g} ms in the whole "
        f"busy phase: {starting['busy_over_20_ms']}"
    )
    streams: list[Stream] = result["streams"]
    start_id: int = result["start_id"]
    ends = [s.ids[-1] for s in streams if s.done and s.ids]
    end_id = max(ends) if ends else start_id
    expected = list(range(start_id + 1, end_id + 1))
    complete = [s for s in streams if s.done and s.resets == 0 and s.ids == expected]
    deliver = max((s.done_at for s in streams if s.done), default=float("nan"))
    deliver_s = deliver - result["t_release"]
    for s in streams:
        if s not in complete:
            problem = s.error or (
                f"{len(s.ids)} ids, resets {s.resets}, done {s.done}, "
                f"first {s.ids[:1]}, last {s.ids[-1:]}"
            )
            print(f"  an incomplete stream: {problem}")
            break
    sse_lags = lag.get("sse", [])
    frames = len(streams) * len(expected)
    sse_cpu = phases.server_cpu.get("sse", float("nan"))
    print(
        f"sse: {len(streams)} clients, {len(complete)} got all {len(expected)} events "
        f"(ids {start_id + 1}..{end_id}) in order; released {result.get('released')} runs; "
        f"the last client had them all {deliver_s:.2f} s after the release was sent"
    )
    print(
        f"  server CPU {sse_cpu:.1f} s ({sse_cpu / frames * 1e6 if frames else 0:.0f} µs a frame "
        f"sent), clients' CPU {phases.client_cpu.get('sse', float('nan')):.1f} s; server loop "
        f"lateness p99 {percentile(sse_lags, 0.99):.2f} ms, max "
        f"{max(sse_lags, default=float('nan')):.2f} ms over {len(sse_lags)} ticks; longest "
        f"collection {max(gc_ms.get('sse', []), default=0.0):.1f} ms"
    )
    floor, rest, busy = result["floor"], result["rest"], result["busy"]
    figures: dict[str, Any] = {
        "runs_in_store": HIST_JOBS * HIST_DAYS,
        "start_s": round(start_s, 2),
        "clients": CLIENTS,
        "think_ms": result["think_ms"],
        "list_p50_ms_rest": rest.summary("list")["p50"],
        "list_p99_ms_rest": rest.summary("list")["p99"],
        "one_p50_ms_rest": rest.summary("one")["p50"],
        "one_p99_ms_rest": rest.summary("one")["p99"],
        "healthz_p99_ms": rest.summary("healthz")["p99"],
        "rest_req_per_s": rest.rate(),
        "list_p50_ms_busy": busy.summary("list")["p50"],
        "list_p99_ms_busy": busy.summary("list")["p99"],
        "one_p50_ms_busy": busy.summary("one")["p50"],
        "one_p99_ms_busy": busy.summary("one")["p99"],
        "healthz_p99_ms_busy": busy.summary("healthz")["p99"],
        "busy_req_per_s": busy.rate(),
        "busy_s": round(busy.seconds, 2),
        "busy_succeeded": result["busy_states"].get("succeeded", 0),
        "busy_ends_span_s": result["busy_ends_span_s"],
        **starting,
        "floor_p50_ms": floor.summary("healthz")["p50"],
        "floor_p99_ms": floor.summary("healthz")["p99"],
        "floor_req_per_s": floor.rate(),
        "server_cpu_ms_per_req_floor": round(cpu_per_request["floor"], 2),
        "server_cpu_ms_per_req_rest": round(cpu_per_request["rest"], 2),
        "server_cpu_ms_per_req_busy": round(cpu_per_request["busy"], 2),
        "file_create_us": result["file_create_us"],
        **{
            f"machine_cpu_s_{name}": round(phases.machine_cpu[name], 2)
            for name in ("floor", "rest", "busy")
        },
        **{
            f"server_queued_ms_{name}": round(phases.server_queued[name] * 1000, 1)
            for name in ("floor", "rest", "busy")
        },
        **{
            f"client_queued_ms_{name}": round(phases.client_queued[name] * 1000, 1)
            for name in ("floor", "rest", "busy")
        },
        "errors": len(floor.errors) + len(rest.errors) + len(busy.errors),
        "sse_clients": len(streams),
        "sse_clients_complete": len(complete),
        "sse_events": len(expected),
        "sse_deliver_s": round(deliver_s, 2),
        "sse_server_us_per_frame": round(sse_cpu / frames * 1e6) if frames else None,
        "lag_p99_ms_rest": round(percentile(lag["rest"], 0.99), 2),
        "lag_p99_ms_busy": round(percentile(lag["busy"], 0.99), 2),
        "lag_p99_ms_sse": round(percentile(sse_lags, 0.99), 2),
        "lag_max_ms_sse": round(max(sse_lags, default=float("nan")), 2),
        "gc_max_ms_rest": round(max(gc_ms["rest"], default=0.0), 1),
        "gc_max_ms_busy": round(max(gc_ms["busy"], default=0.0), 1),
        "gc_max_ms_sse": round(max(gc_ms.get("sse", []), default=0.0), 1),
    }
    figures["goal_list_p99"] = max(figures["list_p99_ms_rest"], figures["list_p99_ms_busy"]) <= 100
    figures["goal_one_p99"] = max(figures["one_p99_ms_rest"], figures["one_p99_ms_busy"]) <= 20
    figures["goal_sse_complete"] = len(complete) == len(streams) and len(expected) > 0
    figures["goal_sse_lag"] = figures["lag_p99_ms_sse"] <= 10
    for goal, text in [
        ("goal_list_p99", "list p99 ≤ 100 ms (rest and busy)"),
        ("goal_one_p99", "one run p99 ≤ 20 ms (rest and busy)"),
        ("goal_sse_complete", "every SSE client gets every event in order"),
        ("goal_sse_lag", "loop lateness p99 ≤ 10 ms while events stream"),
    ]:
        print(f"goal {text}: {'met' if figures[goal] else 'NOT met'}")
    return figures


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--serve", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--rounds", type=int, default=20, help="rounds per client at rest")
    parser.add_argument(
        "--think-ms",
        type=float,
        default=100.0,
        help="mean pause of each client after each answer (default 100; 0: back to back)",
    )
    parser.add_argument("--sse-clients", type=int, default=SSE_CLIENTS)
    parser.add_argument("--profile", type=Path, help="run the server under cProfile into FILE")
    parser.add_argument(
        "--rounds-of-loop",
        action="store_true",
        help="record the server loop's rounds over 4 ms and print the longest (loop_rounds.py)",
    )
    args = parser.parse_args()
    if args.serve is not None:
        if args.profile is None:
            serve_child(args.serve, rounds=args.rounds_of_loop)
        else:
            import cProfile

            with cProfile.Profile() as profiler:
                try:
                    serve_child(args.serve, rounds=args.rounds_of_loop)
                finally:
                    profiler.dump_stats(args.profile)
        return

    print(
        f"{HIST_JOBS * HIST_DAYS:,} runs in the store; {CLIENTS} clients pausing "
        f"{args.think_ms:g} ms on average after each answer; {WORKERS} x `sleep 1` under "
        f"real minders; {args.sse_clients} SSE clients while "
        f"{CHURN_DAYS:,} runs change; server in its own process, disk journal with fsync"
    )
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        create_us = file_create_us(home / "probe")
        say(f"a new file in the bench's folder costs {create_us:.0f} µs of CPU")
        (home / "pysched.yaml").write_text(config_text())
        run_ids = write_history(home / "state", datetime.now(UTC).date())
        say("history written; starting the server")
        t0 = time.monotonic()
        server = start_server(home, args.profile, args.rounds_of_loop)
        try:
            url = wait_for_url(home, server)
            start_s = time.monotonic() - t0
            say(f"server listening at {url}")
            result = trio.run(run_clients, home, url, server.pid, run_ids, args)
            result["file_create_us"] = round(create_us)
        finally:
            stop_server(server)
        lags, gcs = home / "lags.json", home / "gc.json"
        samples = json.loads(lags.read_text()) if lags.exists() else []
        collections = json.loads(gcs.read_text()) if gcs.exists() else []
        if (home / "rounds.json").exists():
            print_longest(json.loads((home / "rounds.json").read_text()), result["phases"].windows)
        if args.profile is not None:
            stats = pstats.Stats(str(args.profile))
            stats.sort_stats("tottime").print_stats(30)
            stats.sort_stats("cumulative").print_stats(40)
    print(json.dumps(report(result, samples, start_s, collections)))


if __name__ == "__main__":
    main()
