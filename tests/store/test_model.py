"""Random histories of commits, concurrent commits, snapshots and restarts: replay = model."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from store_harness import KINDS, Kind, fold, rec

from pysched.store import Record
from pysched.store.base import BaseStore

keys = st.sampled_from([f"k{i}" for i in range(8)])
values = st.one_of(st.integers(-5, 5), st.text(max_size=5), st.none(), st.lists(st.booleans()))
changes = st.lists(st.tuples(keys, values), min_size=1, max_size=4)
operations = st.lists(
    st.one_of(
        st.tuples(st.just("commit"), changes),
        st.tuples(st.just("concurrent"), st.lists(changes, min_size=2, max_size=5)),
        st.tuples(st.just("snapshot"), st.frozensets(keys, max_size=3)),
        st.tuples(st.just("reopen"), st.none()),
    ),
    max_size=20,
)


async def _play(kind: Kind, script: list[tuple[str, Any]]) -> None:
    store: BaseStore = kind.open()
    model: dict[str, Any] = {}
    archived: list[tuple[str, str, Any]] = []
    next_seq = 1
    for op, arg in script:
        if op == "commit":
            done = await store.commit([rec(k, v) for k, v in arg])
            assert [r.seq for r in done] == list(range(next_seq, next_seq + len(arg)))
            next_seq += len(arg)
            model.update(arg)
        elif op == "concurrent":
            results: list[Record] = []

            async def one(batch: list[tuple[str, Any]]) -> None:
                results.extend(await store.commit([rec(k, v) for k, v in batch]))

            async with trio.open_nursery() as nursery:
                for batch in arg:
                    nursery.start_soon(one, batch)
            results.sort(key=lambda r: r.seq)
            assert [r.seq for r in results] == list(range(next_seq, next_seq + len(results)))
            next_seq += len(results)
            model.update((r.data["id"], r.data["value"]) for r in results)
        elif op == "snapshot":
            gone = [k for k in sorted(arg) if k in model]
            archived += [("2026-10", k, model[k]) for k in gone]
            for k in gone:
                del model[k]
            await store.write_snapshot(
                [rec(k, v) for k, v in model.items()],
                archived=[(month, rec(k, v)) for month, k, v in archived[-len(gone) :]]
                if gone
                else [],
            )
        else:
            store = kind.reopen(store)
            assert fold(store.records()) == model
        assert fold(store.records()) == model
    store = kind.reopen(store)
    replayed = list(store.records())
    assert fold(replayed) == model
    journal = [r.seq for r in replayed if r.seq]
    assert journal == sorted(journal) and len(set(journal)) == len(journal)
    assert [(m, r.data["id"], r.data["value"]) for m, r in store.archived()] == archived
    [last] = await store.commit([rec("last")])
    assert last.seq == next_seq
    store.close()


@pytest.mark.parametrize("name", KINDS)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(script=operations)
def test_replay_matches_the_model(name: str, script: list[tuple[str, Any]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        trio.run(_play, Kind(name, Path(tmp)), script)
