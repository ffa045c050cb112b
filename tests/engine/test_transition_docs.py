"""The state diagram and the transition table in the docs are exactly TRANSITIONS."""

from __future__ import annotations

import re
from pathlib import Path

from pysched.engine.runs import TRANSITIONS, RunState

DOCS = Path(__file__).parents[2] / "docs"


def test_mermaid_diagram_matches_the_table() -> None:
    text = (DOCS / "engine.md").read_text()
    block = text[text.index("```mermaid") : text.index("```", text.index("```mermaid") + 3)]
    edges = set(re.findall(r"^\s+(\w+) --> (\w+)$", block, re.MULTILINE))
    expected = {(a.value, b.value) for a in RunState for b in TRANSITIONS[a]}
    assert edges == expected


def test_runs_page_table_matches() -> None:
    text = (DOCS / "runs.md").read_text()
    table: dict[str, set[str]] = {}
    for line in text.splitlines():
        match = re.match(r"^\| (`[a-z]+`(?:, `[a-z]+`)*) \| ((?:`[a-z]+`(?:, )?)+) \|", line)
        if match:
            targets = set(re.findall(r"`([a-z]+)`", match.group(2)))
            for source in re.findall(r"`([a-z]+)`", match.group(1)):
                table[source] = targets
    assert table == {s.value: {t.value for t in TRANSITIONS[s]} for s in RunState}
