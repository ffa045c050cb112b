"""Who is calling: the bearer token of a request, checked against the tokens in force.

``TokenBook`` holds the current ``Tokens`` (the file is re-read on reload and rewritten when an
admin creates or revokes a token through the API). ``authorize`` answers 401 for a missing or
unknown token and 403 for a role too low, naming the role needed; the caller's token name goes
into the audit trail of every action.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import trio

from pysched.errors import TokenFileError
from pysched.tokens import Role, TokenEntry, Tokens, load_tokens, save_tokens
from pysched.web.api_errors import ApiError

log = logging.getLogger(__name__)


class TokenBook:
    """The tokens in force, and the file they live in."""

    def __init__(self, path: Path, tokens: Tokens) -> None:
        self.path = path
        self.tokens = tokens
        self._lock = trio.Lock()

    async def reload(self) -> None:
        """Re-read the file. ``TokenFileError`` keeps the old set and propagates; a file that
        has gone keeps the old set too (with a warning): locking everyone out, the admin
        included, is never what removing it by mistake should do."""
        async with self._lock:
            loaded = await trio.to_thread.run_sync(load_tokens, self.path)
            if loaded is None:
                log.warning("tokens file %s is gone; keeping the tokens in force", self.path)
                return
            self.tokens = loaded

    async def check(self) -> None:
        """Read the file as a reload would, and keep nothing: ``TokenFileError`` if it cannot
        be read or understood (a file that has gone is no problem: see ``reload``)."""
        await trio.to_thread.run_sync(load_tokens, self.path)

    async def create(self, name: str, role: Role) -> tuple[TokenEntry, str]:
        """A new token (``ValueError`` for a bad or taken name); the secret is returned once.

        The change is made to the file as it is now (a token written there by ``pysched token
        create`` while the server was unreachable is kept), under the book's lock.
        """
        async with self._lock:
            tokens, secret = (await self._current()).with_new(name, role)
            await self._save(tokens)
        entry = tokens.get(name)
        assert entry is not None
        return entry, secret

    async def revoke(self, name: str) -> None:
        """Remove a token (``LookupError`` if there is none of that name, ``ValueError`` if it
        is the last admin token: see ``Tokens.without``)."""
        async with self._lock:
            await self._save((await self._current()).without(name))

    async def _current(self) -> Tokens:
        loaded = await trio.to_thread.run_sync(load_tokens, self.path)
        return loaded if loaded is not None else self.tokens

    async def _save(self, tokens: Tokens) -> None:
        try:
            await trio.to_thread.run_sync(save_tokens, self.path, tokens)
        except OSError as exc:
            raise TokenFileError(f"{self.path}: cannot write the tokens file: {exc}") from exc
        self.tokens = tokens


def still_in_force(book: TokenBook, entry: TokenEntry, needed: Role) -> Callable[[], bool]:
    """Whether ``entry`` (checked when a long request began) is still in force for
    ``needed``: an event stream asks before each write, so a revoked token (or a reload
    that took it away or lowered its role) ends the streams it opened."""
    seen = book.tokens
    answer = True

    def check() -> bool:
        nonlocal seen, answer
        if book.tokens is not seen:  # the set is replaced whenever it changes
            seen = book.tokens
            now = seen.get(entry.name)
            answer = now is not None and now.sha256 == entry.sha256 and now.role.allows(needed)
        return answer

    return check


def authorize(header: str | None, tokens: Tokens, needed: Role) -> TokenEntry:
    """The token entry of an ``Authorization`` header that may do what ``needed`` may."""
    if not header:
        raise ApiError(
            401, "a token is needed: send 'Authorization: Bearer <token>' (pysched token create)"
        )
    scheme, _, secret = header.partition(" ")
    if scheme.lower() != "bearer" or not secret.strip():
        raise ApiError(401, "the Authorization header must be 'Bearer <token>'")
    entry = tokens.check(secret.strip())
    if entry is None:
        raise ApiError(401, "the token is not known (revoked, or from another scheduler?)")
    if not entry.role.allows(needed):
        raise ApiError(
            403,
            f"token {entry.name!r} has role {entry.role.value}; this needs {needed.value}",
        )
    return entry
