"""Python's cyclic garbage collector: paused around bulk loading, tuned for the service.

Reading a large config or replaying a journal allocates hundreds of thousands of small objects
that all stay alive; on Python 3.11 each full collection rescans every one of them, which made
up a third or more of the time those loads took. Nothing they create forms reference cycles
worth collecting there and then.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Generator


@contextlib.contextmanager
def collection_paused() -> Generator[None]:
    """Disable the cyclic collector inside the block (it is a process-wide switch, restored on
    exit; reference counting frees memory as usual meanwhile)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


FREEZE_AFTER = 10_000
"""Runs (or other main objects) a bulk load must build before ``freeze_if_large`` freezes."""


def freeze_if_large(count: int) -> None:
    """Inside ``collection_paused``, after a bulk load that built ``count`` long-lived objects:
    from ``FREEZE_AFTER`` on, move everything alive to the permanent generation before the
    collector is back. Every object made while it was paused is still young, so the first young
    collection would otherwise walk all of it (a third of a second for 100,000 runs); they live
    as long as the process. The freeze is process-wide, as ``gc.freeze`` is."""
    if count >= FREEZE_AFTER:
        gc.freeze()


YOUNG_THRESHOLD = 5_000
"""Allocations between young collections in a running scheduler (Python's default is 700)."""
MIDDLE_THRESHOLD = 2
"""Young collections between middle ones (default 10): the middle generation stays small, so
no single collection stalls the loop for long (at 10 x 10,000 one took 60 ms)."""
OLD_THRESHOLD = 10


def tune_for_service() -> None:
    """Collect young objects less often, for a long-running scheduler.

    The engine allocates many short-lived objects per run change (records, events, dicts) and
    keeps tens of thousands of runs alive; with the default threshold of 700, young and middle
    collections ran thousands of times a second and took a third of the engine's time in the
    one-day benchmark (``tests/bench/bench_engine.py``: about 2x the lifecycles per second with
    this). Memory still goes by reference counting; only cycles wait a little longer.
    """
    gc.set_threshold(YOUNG_THRESHOLD, MIDDLE_THRESHOLD, OLD_THRESHOLD)


def freeze_startup_heap() -> None:
    """Collect once, then move everything alive to the collector's permanent generation.

    Called once the service is up: the modules it imported (Quart, hypercorn, ...), the config
    and the replayed runs live as long as the process, and a full collection would otherwise
    rescan all of them each time (150-300 ms on the API benchmark). The one collection here is
    a one-time pause at start, before anything is served.
    """
    gc.collect()
    gc.freeze()
