"""Keep the cyclic garbage collector's pauses short in a process that renders all day.

Textual makes thousands of `Strip` objects a second while a mirrored pane scrolls, each with
caches that can hold the strip itself, so many die in reference cycles and the collector runs
often. A full (oldest-generation) collection walks every object the process holds: in the
dashboard (~160,000 of them, nearly all made while starting: modules, styles, the DOM) each one
took 50-135 ms, every 3-6 s, and held back the frame that was due (`bench/bench_app.py` with
``gc.callbacks``, 50 agents). Objects made while starting live as long as the process, so once
start-up is over they are moved out of the collector's sight (`gc.freeze`): a full collection
then walks only what was made since, and took 5-20 ms in the same bench.
"""

from __future__ import annotations

import gc

SETTLE_SECONDS = 3.0
"""How long after start the heap is frozen: the first frame is drawn and the panes are seeded."""

_frozen = False
"""Frozen already: a second app in the same process (tests run many) is not a start-up."""


def freeze_long_lived() -> int:
    """Exempt every object the process holds now from later collections, once per process;
    returns how many objects are exempt.

    No collection first: a full one is the very pause this avoids (60-70 ms here, at a moment
    the operator may be watching a pane). The price is that the cyclic garbage of start-up not
    yet collected is frozen with the rest and never freed: at most the few thousand objects a
    full collection finds (7,500-9,900 in the bench), once. Frozen objects are still freed by
    reference counting when dropped.
    """
    global _frozen
    if not _frozen:
        _frozen = True
        gc.freeze()
    return gc.get_freeze_count()
