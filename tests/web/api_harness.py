"""An engine on the fake clock behind the Quart app, with one token per role."""

from __future__ import annotations

import textwrap
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from quart_trio import QuartTrio

from pysched.config import Config, parse_config
from pysched.engine import Engine
from pysched.reload import Reloader
from pysched.tokens import Role, Tokens, save_tokens
from pysched.web import TokenBook, WebContext, create_app
from tests.engine.harness import Harness

CONFIG = """
scheduler:
  timezone: Europe/London
  state_dir: state
  log_dir: logs
jobs:
  extract:
    schedule: "0 2 * * *"
    command: echo extracting
  transform:
    depends_on: [extract]
    command: echo transforming
  flaky:
    schedule: "0 3 * * *"
    command: "false"
    retries: {count: 1, backoff: {initial: 1m}}
"""


@dataclass
class Api:
    app: QuartTrio
    engine: Engine
    harness: Harness
    context: WebContext
    secrets: dict[str, str]
    tokens_path: Path

    def headers(self, role: str | None = "admin") -> dict[str, str]:
        if role is None:
            return {}
        return {"Authorization": f"Bearer {self.secrets[role]}"}

    async def get(self, path: str, role: str | None = "admin", **kw: Any) -> tuple[int, Any]:
        client = self.app.test_client()
        response = await client.get(path, headers=self.headers(role), **kw)
        return response.status_code, await response.get_json()

    async def post(
        self, path: str, body: Any = None, role: str | None = "admin", **kw: Any
    ) -> tuple[int, Any]:
        client = self.app.test_client()
        if body is None:
            response = await client.post(path, headers=self.headers(role), **kw)
        else:
            response = await client.post(path, json=body, headers=self.headers(role), **kw)
        return response.status_code, await response.get_json()

    async def delete(self, path: str, role: str | None = "admin") -> tuple[int, Any]:
        response = await self.app.test_client().delete(path, headers=self.headers(role))
        return response.status_code, await response.get_json()

    async def settle(self) -> None:
        await self.engine.settle()

    async def advance(self, **kw: float) -> None:
        await self.harness.clock.advance(timedelta(**kw))
        await self.engine.settle()


async def inline(fn: Callable[..., Any], *args: Any) -> Any:
    return fn(*args)


def make_tokens(path: Path) -> dict[str, str]:
    tokens = Tokens()
    secrets: dict[str, str] = {}
    for role in Role:
        tokens, secret = tokens.with_new(f"{role.value}-person", role)
        secrets[role.value] = secret
    save_tokens(path, tokens)
    return secrets


@asynccontextmanager
async def open_api(
    tmp_path: Path, text: str = CONFIG, *, config_file: Path | None = None, **harness: Any
) -> AsyncIterator[Api]:
    config: Config = parse_config(textwrap.dedent(text), tmp_path / "pysched.yaml", {})
    if config_file is not None:
        from pysched.config import load_config

        config = load_config(config_file)
    h = Harness(config, **harness)
    tokens_path = tmp_path / "tokens.json"
    secrets = make_tokens(tokens_path)
    from pysched.tokens import load_tokens

    book = TokenBook(tokens_path, load_tokens(tokens_path) or Tokens())
    async with h.engine() as engine:
        reloader = Reloader(engine, config_file, tokens=book) if config_file else None
        context = WebContext(
            engine=engine,
            tokens=book,
            reloader=reloader,
            keepalive_seconds=5,
            offload=inline,  # a worker thread would let the autojump clock race ahead
        )
        yield Api(
            app=create_app(context),
            engine=engine,
            harness=h,
            context=context,
            secrets=secrets,
            tokens_path=tokens_path,
        )
