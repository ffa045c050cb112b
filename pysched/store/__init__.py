"""The journal: append-only JSON lines with group commit, snapshots and retention.

The engine keeps its state in memory and makes it durable here, change by change, before it
acts on any (write-ahead). ``Store.open(state_dir)`` is the journal on disk; ``MemoryStore``
keeps the same contract in memory for tests. The contract is written once, on
``pysched.store.base.BaseStore``; the files are described in docs/journal.md and group commit
in docs/group-commit.md. ``check_state_dir`` checks a state dir without opening it.

::

    store = Store.open(home / "state")
    state = fold(store.records())              # replay at start
    [run] = await store.commit([Record(type="run", data={...})])
    if store.wants_snapshot:
        await store.write_snapshot(live_records(state), archived=old_runs(state))
    store.close()
"""

from __future__ import annotations

from pysched.errors import StoreError
from pysched.store.check import check_state_dir
from pysched.store.journal import Store
from pysched.store.memory import MemoryStore
from pysched.store.record import Record, StoreStats

__all__ = ["MemoryStore", "Record", "Store", "StoreError", "StoreStats", "check_state_dir"]
