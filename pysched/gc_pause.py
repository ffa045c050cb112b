"""Pausing Python's cyclic garbage collector around bulk loading.

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
