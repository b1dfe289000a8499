"""A served process's startup heap, kept out of the garbage collector's full walks.

CPython's collector walks every tracked object in a full (generation 2) collection, and a
served process holds ~130,000 of them before its first request: modules, FastAPI's and
pydantic's models, the MCP SDK, the embedder. None of them is ever garbage, yet every full
collection walks them all while every thread of the process waits for it (it holds the
GIL): 195 to 260 ms on the shared 2-core machine at load ~10, and many times a minute
under `bench.server`'s 32 clients, since each request's objects that outlive two young
collections count towards the next full one. :func:`settle` moves what is alive at startup
to the permanent generation (:func:`gc.freeze`), which no collection walks; what requests
make afterwards is collected as before. docs/api.md, "Concurrency", has the figures.
"""

from __future__ import annotations

import gc

__all__ = ["settle"]


def settle() -> int:
    """Collect once, then freeze every object still alive out of later collections' walks.

    Call it once the process has built what it keeps for its whole life (the application,
    its routes and models) and before it serves. Frozen objects are never freed by the
    collector, so a cycle that becomes garbage later stays (the startup heap is the
    process's own for its lifetime, so that is nothing in practice). Returns how many
    objects are frozen.
    """
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()
