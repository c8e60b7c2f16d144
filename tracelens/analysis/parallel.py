"""Independent pieces of the analysis on several threads, results in order.

Most of the analysis's time is inside polars, which releases the GIL, and most of it is one run (or
one detector) at a time: on threads, a second core works on the next run while the first finishes
this one. At most ``workers`` items are in flight, so a pass over runs holds that many runs' rows, not
all of them. The default (`WORKERS`) is one for now: see its comment.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

Item = TypeVar("Item")
Result = TypeVar("Result")

# Items in flight by default. Two would put the second core to work (under load, `check` on the 1 GiB
# log's dataset took about 15% less wall time), but each run in flight holds about 60 MiB more at its
# peak, and on the dataset of a 4 GiB log (42 long runs) `summary` then peaked at 498 to 516 MiB
# against the 512 MiB bound. One, until a run's working set is smaller (`workers=` asks for more).
WORKERS = 1


def in_order(
    fn: Callable[[Item], Result], items: Iterable[Item], workers: int | None = None
) -> Iterator[Result]:
    """``fn`` of each item, in the items' order, computed on up to ``workers`` threads. ``items`` is
    read as the work goes (a generator that reads a run's rows is read one run ahead, not all at once)."""
    workers = WORKERS if workers is None else workers
    if workers <= 1:
        yield from map(fn, items)
        return
    with ThreadPoolExecutor(workers, thread_name_prefix="tracelens-analysis") as pool:
        pending: deque[Future[Result]] = deque()
        for item in items:
            pending.append(pool.submit(fn, item))
            if len(pending) >= workers:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
