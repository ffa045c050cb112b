"""The HTTP/1.1 protocol pysched serves with: hypercorn's, writing a head with its body."""

from __future__ import annotations

from typing import Any

import h11
from hypercorn.config import Config
from hypercorn.events import Closed, RawData
from hypercorn.protocol.events import Body, EndBody, Response, StreamClosed
from hypercorn.trio.worker_context import WorkerContext
from hypercorn.typing import ConnectionState

from pysched.web.server import _Http11Only  # pyright: ignore[reportPrivateUsage]


def protocol() -> tuple[_Http11Only, list[Any]]:
    """A connection that has read one GET, with what it sends recorded."""
    sent: list[Any] = []

    async def send(event: Any) -> None:
        sent.append(event)

    connection = _Http11Only(
        None,  # type: ignore[arg-type]  (no app: the test plays the app's part)
        Config(),
        WorkerContext(None),
        None,  # type: ignore[arg-type]
        ConnectionState({}),
        False,
        ("127.0.0.1", 40000),
        ("127.0.0.1", 8080),
        send,
    )
    connection.connection.receive_data(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    assert isinstance(connection.connection.next_event(), h11.Request)
    assert isinstance(connection.connection.next_event(), h11.EndOfMessage)
    return connection, sent


def written(sent: list[Any]) -> list[bytes]:
    return [event.data for event in sent if isinstance(event, RawData)]


async def test_an_answer_of_known_length_is_one_write() -> None:
    connection, sent = protocol()
    await connection.stream_send(
        Response(stream_id=1, headers=[(b"content-length", b"2")], status_code=200)
    )
    assert sent == []  # the head waits for the body
    await connection.stream_send(Body(stream_id=1, data=b"ok"))
    await connection.stream_send(EndBody(stream_id=1))
    (answer,) = written(sent)  # and the empty end writes nothing
    assert answer.startswith(b"HTTP/1.1 200 ")
    assert answer.endswith(b"\r\n\r\nok")


async def test_a_streamed_answer_sends_its_head_at_once() -> None:
    connection, sent = protocol()
    await connection.stream_send(
        Response(stream_id=1, headers=[(b"content-type", b"text/event-stream")], status_code=200)
    )
    (head,) = written(sent)
    assert head.endswith(b"\r\n\r\n")


async def test_an_answer_ended_before_its_body_still_sends_its_head_then_closes() -> None:
    connection, sent = protocol()
    await connection.stream_send(
        Response(stream_id=1, headers=[(b"content-length", b"2")], status_code=200)
    )
    await connection.stream_send(StreamClosed(stream_id=1))
    assert len(written(sent)) == 1
    assert written(sent)[0].startswith(b"HTTP/1.1 200 ")
    assert isinstance(sent[-1], Closed)  # the body never came: the connection is closed
