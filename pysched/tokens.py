"""API tokens: who may call the service, with which role, stored only as hashes.

A token is a long random secret (``pysched_`` and 43 url-safe characters) that a person or a
script sends as ``Authorization: Bearer <token>``. The service keeps only each token's SHA-256
in the tokens file (``scheduler.tokens_file``, default ``state_dir/tokens.json``), with a name
(written into the audit trail of every action) and a role. A SHA-256 is enough here, where a
password would need a slow hash: the secret has 256 bits of randomness, so there is nothing to
guess. Checking a token compares its hash against every stored hash in constant time.

Roles are ranked: ``viewer`` reads, ``operator`` also acts on runs and jobs, ``admin`` also
reloads the config, reads config versions and manages tokens.

So a newcomer needs no set-up, the first ``serve`` that finds no tokens file creates one with an
``admin`` token and writes that token, readable only by its owner, to ``state_dir/admin.token``;
the CLI on the same machine reads it when given the config.

The file::

    {"version": 1, "tokens": [{"name": "admin", "role": "admin", "sha256": "…",
                               "created": "2026-11-30T20:00:00+00:00"}]}
"""

from __future__ import annotations

import enum
import hashlib
import hmac
import os
import re
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from pysched.errors import TokenFileError

PREFIX = "pysched_"
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,63}")
_VERSION = 1


class Role(enum.Enum):
    VIEWER = "viewer"
    OPERATOR = "operator"
    ADMIN = "admin"

    def allows(self, needed: Role) -> bool:
        """Whether this role may do what ``needed`` may (roles are ranked)."""
        return _RANK[self] >= _RANK[needed]


_RANK = {Role.VIEWER: 0, Role.OPERATOR: 1, Role.ADMIN: 2}


@dataclass(frozen=True, slots=True, kw_only=True)
class TokenEntry:
    """One token as stored: never the secret, only its hash."""

    name: str
    role: Role
    sha256: str
    created: str

    def to_data(self) -> dict[str, str]:
        return {
            "name": self.name,
            "role": self.role.value,
            "sha256": self.sha256,
            "created": self.created,
        }

    def public(self) -> dict[str, str]:
        """What the API may show: no hash."""
        return {"name": self.name, "role": self.role.value, "created": self.created}


def new_secret() -> str:
    return PREFIX + secrets.token_urlsafe(32)


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True, slots=True)
class Tokens:
    """The tokens in force: immutable; ``with_new`` and ``without`` return new sets."""

    entries: tuple[TokenEntry, ...] = ()

    def check(self, secret: str) -> TokenEntry | None:
        """The entry whose hash matches ``secret``, or None.

        Every stored hash is compared, each in constant time, so the time taken says nothing
        about which token, or how much of one, matched.
        """
        presented = hash_secret(secret)
        found: TokenEntry | None = None
        for entry in self.entries:
            if hmac.compare_digest(presented, entry.sha256):
                found = entry
        return found

    def get(self, name: str) -> TokenEntry | None:
        return next((entry for entry in self.entries if entry.name == name), None)

    def with_new(self, name: str, role: Role) -> tuple[Tokens, str]:
        """A new set with a fresh token named ``name``, and the secret (shown once)."""
        check_name(name)
        if self.get(name) is not None:
            raise ValueError(f"a token named {name!r} exists already; revoke it first")
        secret = new_secret()
        entry = TokenEntry(
            name=name,
            role=role,
            sha256=hash_secret(secret),
            created=datetime.now(UTC).isoformat(timespec="seconds"),
        )
        return Tokens((*self.entries, entry)), secret

    def without(self, name: str) -> Tokens:
        """A new set without the token ``name``: ``LookupError`` if there is none, and
        ``ValueError`` if it is the last ``admin`` token. Without one, nobody could create or
        revoke tokens, or reload, through the API until the scheduler was stopped and given a
        fresh tokens file: an operator who means to replace it creates the new one first."""
        entry = self.get(name)
        if entry is None:
            raise LookupError(f"no token named {name!r}")
        rest = Tokens(tuple(other for other in self.entries if other.name != name))
        if entry.role is Role.ADMIN and not any(e.role is Role.ADMIN for e in rest.entries):
            raise ValueError(
                f"token {name!r} is the last admin token: without one, nobody could create or "
                "revoke tokens, or reload, through the API; create another first "
                "(pysched token create NAME --role admin), then revoke this one"
            )
        return rest


def check_name(name: str) -> None:
    """A token name: letters, digits and ``. _ @ -``, up to 64, starting with a letter or
    digit (it is written into the audit trail)."""
    if not NAME_PATTERN.fullmatch(name):
        raise ValueError(
            f"token name {name!r} is not allowed: use letters, digits and . _ @ - "
            "(up to 64, starting with a letter or digit)"
        )


def parse_role(text: str) -> Role:
    try:
        return Role(text)
    except ValueError:
        choices = ", ".join(role.value for role in Role)
        raise ValueError(f"unknown role {text!r}: choose one of {choices}") from None


def load_tokens(path: Path) -> Tokens | None:
    """The tokens in ``path``, or None when there is no such file.

    Raises ``TokenFileError`` naming the file for anything unreadable or malformed: a bad
    tokens file must stop the service rather than let everyone (or no one) in.
    """
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise TokenFileError(f"{path}: cannot read the tokens file: {exc.strerror}") from exc
    try:
        data: Any = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise TokenFileError(f"{path}: not valid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise TokenFileError(f"{path}: not a pysched tokens file (an object expected)")
    document: dict[str, Any] = data  # pyright: ignore[reportUnknownVariableType]
    if document.get("version") != _VERSION:
        raise TokenFileError(f"{path}: not a pysched tokens file (version {_VERSION} expected)")
    items: Any = document.get("tokens")
    if not isinstance(items, list):
        raise TokenFileError(f"{path}: 'tokens' must be a list")
    listed: list[Any] = items  # pyright: ignore[reportUnknownVariableType]
    entries = [_entry(path, index, item) for index, item in enumerate(listed)]
    names = [entry.name for entry in entries]
    hashes = [entry.sha256 for entry in entries]
    if len(set(names)) != len(names) or len(set(hashes)) != len(hashes):
        raise TokenFileError(f"{path}: a token name or hash is listed twice")
    return Tokens(tuple(entries))


def _entry(path: Path, index: int, item: Any) -> TokenEntry:
    where = f"{path}: tokens[{index}]"
    if not isinstance(item, dict):
        raise TokenFileError(f"{where} must be an object")
    fields: dict[str, Any] = item  # pyright: ignore[reportUnknownVariableType]
    values: dict[str, str] = {}
    for key in ("name", "role", "sha256", "created"):
        value = fields.get(key)
        if not isinstance(value, str):
            raise TokenFileError(f"{where}.{key} must be a string")
        values[key] = value
    if not re.fullmatch(r"[0-9a-f]{64}", values["sha256"]):
        raise TokenFileError(f"{where}.sha256 is not a SHA-256 in hex")
    try:
        role = parse_role(values["role"])
    except ValueError as exc:
        raise TokenFileError(f"{where}.role: {exc}") from None
    if not NAME_PATTERN.fullmatch(values["name"]):
        raise TokenFileError(f"{where}.name {values['name']!r} is not a token name")
    return TokenEntry(
        name=values["name"], role=role, sha256=values["sha256"], created=values["created"]
    )


def save_tokens(path: Path, tokens: Tokens) -> None:
    """Write ``tokens`` atomically (temp file, fsync, rename), readable only by the owner."""
    data = {"version": _VERSION, "tokens": [entry.to_data() for entry in tokens.entries]}
    write_private(path, orjson.dumps(data, option=orjson.OPT_INDENT_2) + b"\n")


def write_private(path: Path, content: bytes) -> None:
    """Atomically replace ``path`` with ``content``, mode 0600 from the first byte."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        view = memoryview(content)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(temp, path)
    folder = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)


def first_admin_token(tokens_path: Path, admin_token_path: Path) -> Tokens:
    """The tokens in force; when there is no tokens file yet, create one with an ``admin``
    token and write that token to ``admin_token_path`` (mode 0600) for the local CLI."""
    tokens = load_tokens(tokens_path)
    if tokens is not None:
        return tokens
    tokens, secret = Tokens().with_new("admin", Role.ADMIN)
    write_private(admin_token_path, (secret + "\n").encode())
    save_tokens(tokens_path, tokens)
    return tokens


def read_admin_token(admin_token_path: Path) -> str | None:
    """The local admin token written by the first ``serve``, or None if it is not there or
    not readable by this user."""
    try:
        text = admin_token_path.read_text().strip()
    except OSError:
        return None
    return text or None
