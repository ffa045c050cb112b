"""The SSE stream: resuming with Last-Event-ID, ``reset`` for a reader left behind, stopping."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime

import orjson
import pytest
import trio

from pysched.engine.events import EventLog
from pysched.web.api_errors import ApiError
from pysched.web.event_stream import (
    EncodedEvents,
    Stopping,
    Turns,
    event_frames,
    resume_point,
)

AT = datetime(2026, 10, 19, tzinfo=UTC)


def parse(frame: bytes) -> tuple[int, str, dict[str, object]]:
    fields = dict(line.split(": ", 1) for line in frame.decode().strip().split("\n"))
    return int(fields["id"]), fields["event"], orjson.loads(fields["data"])


async def collect(log: EventLog, after: int | None, stopping: Stopping, count: int) -> list:
    frames = []
    stream = event_frames(
        log, after, stopping=stopping, keepalive_seconds=60, encoded=EncodedEvents()
    )
    async for chunk in stream:
        for frame in chunk.split(b"\n\n"):
            if not frame or frame.startswith((b"retry", b":")):
                continue
            frames.append(parse(frame + b"\n\n"))
        if len(frames) >= count:
            break
    await stream.aclose()
    return frames


def publish(log: EventLog, n: int) -> None:
    for i in range(n):
        log.publish(AT, "run_changed", {"run_id": f"a.2026-10-19.{i}", "state": "queued"})


async def test_resuming_after_an_id_gets_what_was_missed_in_order() -> None:
    log = EventLog(capacity=100)
    publish(log, 10)
    frames = await collect(log, 6, Stopping(), 4)
    assert [f[0] for f in frames] == [7, 8, 9, 10]
    assert frames[0][1] == "run_changed"
    assert frames[0][2]["data"] == {"run_id": "a.2026-10-19.6", "state": "queued"}


async def test_without_an_id_the_stream_starts_from_now() -> None:
    log = EventLog(capacity=100)
    publish(log, 3)
    async with trio.open_nursery() as nursery:
        got: list = []

        async def reader() -> None:
            got.extend(await collect(log, None, Stopping(), 2))

        nursery.start_soon(reader)
        await trio.testing.wait_all_tasks_blocked()
        publish(log, 2)
    assert [f[0] for f in got] == [4, 5]


async def test_events_ready_together_go_out_in_one_write() -> None:
    log = EventLog(capacity=1_000)
    publish(log, 600)
    stream = event_frames(
        log, 0, stopping=Stopping(), keepalive_seconds=60, encoded=EncodedEvents()
    )
    assert await stream.__anext__() == b"retry: 2000\n\n"
    sizes = [(await stream.__anext__()).count(b"\nevent: ") for _ in range(3)]
    assert sizes == [256, 256, 88]
    await stream.aclose()


async def test_a_reader_behind_the_ring_gets_a_reset_then_live_events() -> None:
    log = EventLog(capacity=5)
    publish(log, 20)
    frames = await collect(log, 2, Stopping(), 1)
    assert frames == [(20, "reset", {"id": 20, "kind": "reset", "data": {}})]


async def test_an_id_from_before_a_restart_gets_a_reset() -> None:
    log = EventLog(capacity=100)
    publish(log, 3)
    frames = await collect(log, 5_000, Stopping(), 1)
    assert frames[0][:2] == (3, "reset")


async def test_an_id_from_an_earlier_life_gets_a_reset_before_any_new_event() -> None:
    # the new scheduler counts from the clock: ids of the old one are below its first, and a
    # client that comes back with one hears "reset" at once, not at the next event
    log = EventLog(capacity=100, first_id=1_000_000)
    with trio.fail_after(5):
        frames = await collect(log, 999_000, Stopping(), 1)
    assert frames[0][:2] == (999_999, "reset")


async def test_after_a_restart_a_client_gets_what_the_new_scheduler_did_since_it_started() -> None:
    log = EventLog(capacity=100, first_id=1_000_000)
    publish(log, 3)  # what it did while starting: attempts adopted or lost, catch-up
    frames = await collect(log, 999_000, Stopping(), 4)
    assert [(id, kind) for id, kind, _ in frames] == [
        (999_999, "reset"),
        (1_000_000, "run_changed"),
        (1_000_001, "run_changed"),
        (1_000_002, "run_changed"),
    ]
    assert frames[0][2]["data"] == {"restarted": True}


async def test_the_stream_ends_when_the_service_stops() -> None:
    log = EventLog(capacity=100)
    stopping = Stopping()
    frames: list[bytes] = []

    async def reader() -> None:
        stream = event_frames(
            log, None, stopping=stopping, keepalive_seconds=60, encoded=EncodedEvents()
        )
        async for frame in stream:
            frames.append(frame)

    with trio.fail_after(1):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(reader)
            await trio.testing.wait_all_tasks_blocked()
            stopping.set()
    assert frames == [b"retry: 2000\n\n"]


async def test_keepalive_comments_while_nothing_happens(autojump_clock: object) -> None:
    log = EventLog(capacity=10)
    stream = event_frames(
        log, None, stopping=Stopping(), keepalive_seconds=15, encoded=EncodedEvents()
    )
    assert await stream.__anext__() == b"retry: 2000\n\n"
    start = trio.current_time()
    assert await stream.__anext__() == b": keepalive\n\n"
    assert trio.current_time() - start == pytest.approx(15)
    await stream.aclose()


def test_resume_point_reads_the_header_first() -> None:
    assert resume_point("12", "5") == 12
    assert resume_point(None, "5") == 5
    assert resume_point("", None) is None
    with pytest.raises(ApiError) as caught:
        resume_point("-1", None)
    assert caught.value.status == 400


async def test_streams_woken_together_write_a_few_at_a_time() -> None:
    """One publish wakes every stream; ``Turns`` lets only a few write in each round of the
    scheduler, so the loop is never held by all of them at once."""
    log = EventLog(capacity=100)
    turns = Turns(per_round=4)
    stopping = Stopping()
    rounds = 0
    written_in_round: list[int] = []

    async def counter() -> None:
        nonlocal rounds
        while not stopping.is_set():
            rounds += 1
            await trio.lowlevel.checkpoint()

    async def reader() -> None:
        stream = event_frames(
            log, 0, stopping=stopping, keepalive_seconds=60, encoded=EncodedEvents(), turns=turns
        )
        async for chunk in stream:
            if chunk.startswith(b"id:"):
                written_in_round.append(rounds)
                break
        await stream.aclose()

    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            for _ in range(20):
                nursery.start_soon(reader)
            await trio.testing.wait_all_tasks_blocked()  # every stream waits for an event
            nursery.start_soon(counter)
            publish(log, 1)
            while len(written_in_round) < 20:
                await trio.lowlevel.checkpoint()
            stopping.set()
    per_round = Counter(written_in_round)
    assert max(per_round.values()) <= 4
    assert len(per_round) >= 5
