"""scheduler.listen, scheduler.tls and scheduler.tokens_file: read, defaulted, refused clearly."""

from __future__ import annotations

from pathlib import Path

import pytest

from pysched.config import ConfigError, parse_config
from pysched.config.model import Listen

JOBS = 'jobs:\n  a: {schedule: "0 3 * * *", command: "true"}\n'


def settings(text: str, tmp_path: Path):
    return parse_config(text + JOBS, tmp_path / "pysched.yaml", {}).scheduler


def test_defaults_are_loopback_plain_http_and_tokens_in_the_state_dir(tmp_path: Path) -> None:
    scheduler = settings("", tmp_path)
    assert str(scheduler.listen) == "127.0.0.1:8080"
    assert scheduler.url == "http://127.0.0.1:8080"
    assert scheduler.tls is None
    assert scheduler.tokens_path == tmp_path / "state" / "tokens.json"
    assert scheduler.admin_token_path == tmp_path / "state" / "admin.token"


def test_listen_tls_and_tokens_file(tmp_path: Path) -> None:
    scheduler = settings(
        "scheduler:\n  listen: '[::1]:9443'\n  tls: {cert: c.pem, key: k.pem}\n"
        "  tokens_file: /etc/pysched/tokens.json\n",
        tmp_path,
    )
    assert (scheduler.listen.host, scheduler.listen.port) == ("::1", 9443)
    assert scheduler.url == "https://[::1]:9443"
    assert scheduler.tls is not None and scheduler.tls.cert == tmp_path / "c.pem"
    assert scheduler.tokens_path == Path("/etc/pysched/tokens.json")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("scheduler: {listen: 8080}", "expected HOST:PORT"),
        ("scheduler: {listen: 'localhost:http'}", "is not a number"),
        ("scheduler: {listen: '::1:8080'}", "brackets"),
        ("scheduler: {listen: 'host:70000'}", "from 0 to 65535"),
        ("scheduler: {listen: '[]:8080'}", "no host in the brackets"),
        ("scheduler: {tls: {cert: c.pem}}", "scheduler.tls needs key"),
        ("scheduler: {tls: {cert: c.pem, key: k.pem, ca: x}}", "ca"),
        ("scheduler: {tls: yes}", "scheduler.tls"),
    ],
    ids=[
        "no_port",
        "port_name",
        "ipv6_no_brackets",
        "port_too_big",
        "empty_brackets_would_bind_every_address",
        "tls_no_key",
        "tls_unknown_key",
        "tls_not_a_map",
    ],
)
def test_mistakes_name_the_place_and_the_fix(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        settings(text + "\n", tmp_path)
    problem = caught.value.problems[0]
    assert message in str(problem)
    assert problem.line == 1


@pytest.mark.parametrize("text", ["127.0.0.1:0", "0.0.0.0:8080", "[::]:1", "example.org:443"])
def test_listen_round_trips(text: str) -> None:
    assert str(Listen.parse(text)) == text
