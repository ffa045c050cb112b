"""Every ```python block in docs/ runs, so the docs' snippets cannot rot.

Blocks of one page run in order in one namespace, in a temporary folder that holds a copy of
``examples/`` (so a snippet may load ``examples/etl.yaml``). A page whose blocks define an
``async def main()`` has it run under trio with an autojump ``MockClock``, as pytest-trio's
``autojump_clock`` fixture would (so ``FakeClock.advance`` works).
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import trio
import trio.testing

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)
PAGES = sorted(p for p in DOCS.glob("*.md") if BLOCK.search(p.read_text()))


def test_some_pages_have_snippets() -> None:
    assert PAGES, "no ```python snippet found in docs/"


@pytest.mark.parametrize("page", PAGES, ids=[p.stem for p in PAGES])
def test_snippets_run(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": f"docs_{page.stem}"}
    for number, match in enumerate(BLOCK.finditer(page.read_text()), start=1):
        code = compile(match.group(1), f"{page.name}#snippet{number}", "exec")
        exec(code, namespace)
    main = namespace.get("main")
    if main is not None:
        trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))  # type: ignore[arg-type]
