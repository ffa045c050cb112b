"""Admin endpoints: reload the config, read its journaled versions and diff two, manage tokens.

Config versions are the texts the engine journaled each time a config took effect (at start
and at each reload that changed it), so ``diff`` answers "what changed last night" from the
journal itself, not from whatever the file says now.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

from pysched.config.model import version_prefix_problem
from pysched.tokens import check_name, parse_role
from pysched.web.api_errors import ApiError
from pysched.web.context import Call
from pysched.web.inputs import only_keys, text_field, text_query

Reply = tuple[int, Any]


async def reload(call: Call) -> Reply:
    only_keys(call.body, ())
    reloader = call.context.reloader
    if reloader is None:
        raise ApiError(503, "this server cannot reload (it was started without a config file)")
    outcome = await reloader.reload(by=call.who)
    if not outcome.applied:
        raise ApiError(
            422,
            f"the config has {len(outcome.problems)} problem(s); the running config stays",
            field="config",
            problems=outcome.problems,
        )
    return 200, {
        "applied": True,
        "changed": outcome.changed,
        "sha256": outcome.sha256,
        "warnings": list(outcome.warnings),
    }


async def pending_config(call: Call) -> Reply:
    """What a reload would do now, doing none of it: the same checks, and the diff from the
    version in force to the file."""
    reloader = call.context.reloader
    if reloader is None:
        raise ApiError(503, "this server cannot reload (it was started without a config file)")
    preview = await reloader.preview()
    diff = ""
    if preview.text:  # "" when the file cannot be read: no diff, the problem says why
        diff = await call.context.offload(
            _unified_diff,
            preview.current_text,
            preview.text,
            f"config@{preview.current[:12]}",
            f"config@{preview.sha256[:12]}" if preview.valid else "config (as the file is)",
        )
    return 200, {
        "valid": preview.valid,
        "changed": preview.changed,
        "current": preview.current,
        "sha256": preview.sha256,
        "diff": diff,
        "problems": list(preview.problems),
        "warnings": list(preview.warnings),
    }


def _version_view(data: Mapping[str, Any], current: str, *, text: bool) -> dict[str, Any]:
    view = {
        "sha256": data["sha256"],
        "at": data.get("at"),
        "by": data.get("by"),
        "current": data["sha256"] == current,
    }
    if text:
        view["text"] = data.get("text", "")
    return view


def _find_version(call: Call, key: str, field: str) -> Mapping[str, Any]:
    problem = version_prefix_problem(key)
    if problem is not None:
        raise ApiError(400, f"{field} {problem}", field=field)
    matches = [v for v in call.engine.config_versions() if v["sha256"].startswith(key.lower())]
    if not matches:
        raise ApiError(404, f"no config version {key!r}")
    if len(matches) > 1:
        raise ApiError(
            400, f"{key!r} matches {len(matches)} versions: give more digits", field=field
        )
    return matches[0]


async def config_versions(call: Call) -> Reply:
    current = call.engine.config.sha256
    versions = [_version_view(v, current, text=False) for v in call.engine.config_versions()]
    return 200, {"versions": versions}


async def config_version(call: Call) -> Reply:
    version = _find_version(call, call.args["sha"], "sha")
    return 200, _version_view(version, call.engine.config.sha256, text=True)


async def config_diff(call: Call) -> Reply:
    query = call.query
    for field in ("from", "to"):
        if text_query(query, field) is None:
            raise ApiError(
                400, f"{field} is required (a config version's sha256 prefix)", field=field
            )
    old = _find_version(call, query["from"], "from")
    new = _find_version(call, query["to"], "to")
    diff = await call.context.offload(
        _unified_diff,
        str(old.get("text", "")),
        str(new.get("text", "")),
        f"config@{old['sha256'][:12]}",
        f"config@{new['sha256'][:12]}",
    )
    return 200, {"from": old["sha256"], "to": new["sha256"], "diff": diff}


def _unified_diff(old: str, new: str, old_name: str, new_name: str) -> str:
    """A unified diff of two texts (pure; big configs make it slow, so it leaves the loop)."""
    lines = difflib.unified_diff(
        old.splitlines(keepends=True),
        new.splitlines(keepends=True),
        fromfile=old_name,
        tofile=new_name,
    )
    return "".join(lines)


async def list_tokens(call: Call) -> Reply:
    return 200, {"tokens": [entry.public() for entry in call.context.tokens.tokens.entries]}


async def create_token(call: Call) -> Reply:
    only_keys(call.body, ("name", "role"))
    name = text_field(call.body, "name", required=True)
    role_text = text_field(call.body, "role")
    if role_text is None:
        role_text = "viewer"  # left out: the least power ("" is a mistake, refused below)
    assert name is not None
    try:
        check_name(name)
    except ValueError as exc:
        raise ApiError(422, str(exc), field="name") from None
    try:
        role = parse_role(role_text)
    except ValueError as exc:
        raise ApiError(422, str(exc), field="role") from None
    if call.context.tokens.tokens.get(name) is not None:
        raise ApiError(409, f"a token named {name!r} exists already; revoke it first")
    try:
        entry, secret = await call.context.tokens.create(name, role)
    except ValueError as exc:  # taken meanwhile by a concurrent create
        raise ApiError(409, str(exc)) from None
    await call.engine.audit("token_create", name, by=call.who, why=f"role {role.value}")
    return 201, {**entry.public(), "token": secret}


async def revoke_token(call: Call) -> Reply:
    only_keys(call.body, ())
    name = call.args["name"]
    if call.context.tokens.tokens.get(name) is None:
        raise ApiError(404, f"no token named {name!r}")
    try:
        await call.context.tokens.revoke(name)
    except LookupError:  # revoked meanwhile
        raise ApiError(404, f"no token named {name!r}") from None
    except ValueError as exc:  # the last admin token
        raise ApiError(409, str(exc)) from None
    await call.engine.audit("token_revoke", name, by=call.who)
    return 200, {"revoked": name}
