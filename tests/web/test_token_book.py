"""The API's token book works on the file as it is on disk, one change at a time."""

from __future__ import annotations

from pathlib import Path

import pytest

from pysched.errors import TokenFileError
from pysched.tokens import Role, Tokens, load_tokens, save_tokens
from pysched.web.auth import TokenBook


async def test_a_token_written_offline_survives_a_create_and_a_revoke(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    first, _ = Tokens().with_new("admin", Role.ADMIN)
    save_tokens(path, first)
    book = TokenBook(path, first)
    offline, _ = first.with_new("ci", Role.OPERATOR)  # pysched token create, server unreachable
    save_tokens(path, offline)
    await book.create("alice", Role.VIEWER)
    on_disk = load_tokens(path)
    assert on_disk is not None
    assert [e.name for e in on_disk.entries] == ["admin", "ci", "alice"]
    await book.revoke("alice")
    on_disk = load_tokens(path)
    assert on_disk is not None and [e.name for e in on_disk.entries] == ["admin", "ci"]
    assert [e.name for e in book.tokens.entries] == ["admin", "ci"]


async def test_a_gone_file_keeps_the_tokens_and_a_broken_one_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    tokens, _ = Tokens().with_new("admin", Role.ADMIN)
    save_tokens(path, tokens)
    book = TokenBook(path, tokens)
    path.unlink()
    await book.reload()
    assert book.tokens == tokens
    path.write_text('{"version": 1, "tokens": [{"name": "a\\n"}]}')
    with pytest.raises(TokenFileError):
        await book.reload()
    assert book.tokens == tokens


async def test_the_last_admin_is_judged_on_the_file_as_it_is_now(tmp_path: Path) -> None:
    """An admin token written to the file offline counts: the book reads the file under its
    lock before removing anything."""
    path = tmp_path / "tokens.json"
    first, _ = Tokens().with_new("admin", Role.ADMIN)
    first, _ = first.with_new("ops", Role.OPERATOR)
    save_tokens(path, first)
    book = TokenBook(path, first)
    with pytest.raises(ValueError, match="last admin token"):
        await book.revoke("admin")
    on_disk = load_tokens(path)
    assert on_disk is not None and [e.name for e in on_disk.entries] == ["admin", "ops"]
    offline, _ = first.with_new("root2", Role.ADMIN)  # pysched token create, server unreachable
    save_tokens(path, offline)
    await book.revoke("admin")
    assert [e.name for e in book.tokens.entries] == ["ops", "root2"]
