"""How many workers a run starts, and with what block and task sizes, so that the whole process tree stays
under a memory bound (`--max-memory`) and every worker has work to the end. Plain Python: the engine
sizes a run before it imports any table library.

The model is measured (`bench/scale.py`, bench/RESULTS.md): the tree is the command's own process, the
fork server and the libraries' pages they and the workers share (`PARENT_BYTES`), plus per worker its
own interpreter and allocator pages (`WORKER_BYTES`), a heap that grows with the block it parses
(`PER_BLOCK`) and what it grows by over the first blocks of a task (`PER_TASK`): measured block by
block on a 32 MiB range, a worker's private memory rose by 34-42 MiB from the first 6 MiB block to the
second and third, then stayed flat to the end, so it is the steady parse's working set, not rows piling
up (the part writer held a row group's worth at most); a task of one or two blocks ends before it is
reached, which the linear term overstates past 16 MiB (the model is meant to be high). On a 64 MiB log
with 6 MiB blocks, 8 MiB tasks: 331 MiB at -j 2 and 442 MiB at -j 4 (55 MiB a worker); 16 MiB tasks
385 MiB and 32 MiB tasks 405 MiB at -j 2 (82 and 92 MiB a worker); the model gives 70, 86 and 118.
"""

from __future__ import annotations

from dataclasses import dataclass

MIB = 1 << 20
DEFAULT_MAX_MEMORY = 512 * MIB
PARENT_BYTES = 220 * MIB
WORKER_BYTES = 30 * MIB
PER_BLOCK = 4  # bytes of a worker's heap per byte of its block
PER_TASK = 2  # bytes a worker gathers per byte of its task
# The smallest bound a run can keep: the parent and one worker on the smallest block and task.
MIN_BLOCK_BYTES = 2 * MIB
# Tasks are at least this big (or the --range-size asked for, when smaller): a task pays a plan, a
# scan and its own part files, so smaller ones cost more than their balance gains.
MIN_TASK_BYTES = 8 * MIB
TASKS_PER_WORKER = 4


def tree_bytes(workers: int, block_bytes: int, task_bytes: int) -> int:
    """The process tree's modelled peak with ``workers`` worker processes."""
    return PARENT_BYTES + workers * (WORKER_BYTES + PER_BLOCK * block_bytes + PER_TASK * task_bytes)


MIN_MAX_MEMORY = tree_bytes(1, MIN_BLOCK_BYTES, MIN_TASK_BYTES)


@dataclass(frozen=True)
class Sizing:
    workers: int
    block_bytes: int
    task_bytes: int  # byte ranges of big files and groups of small ones are cut to about this size


def task_bytes_for(todo: int, workers: int, block_bytes: int, range_bytes: int) -> int:
    """A task size that gives each of ``workers`` at least `TASKS_PER_WORKER` tasks of ``todo`` bytes,
    within [a block and `MIN_TASK_BYTES`, ``range_bytes``]: the last tasks to finish are small, so no
    worker waits long for the others."""
    floor = max(block_bytes, MIN_TASK_BYTES)
    return min(range_bytes, max(floor, todo // (workers * TASKS_PER_WORKER)))


def size_run(jobs: int, todo: int, max_memory: int, block_bytes: int, range_bytes: int) -> Sizing:
    """The most workers (up to ``jobs``, and no more than there are tasks) that fit ``max_memory``, with
    the biggest block (``block_bytes``, or halved down to `MIN_BLOCK_BYTES`) that fits that many: a bigger
    block costs less CPU (6 MiB took 6-10% less than 3 MiB), a worker more gives a core more. When not
    even one worker fits, one worker on the smallest block and tasks."""
    best: Sizing | None = None
    block = block_bytes
    while True:
        for workers in range(jobs, 0, -1):
            task = task_bytes_for(todo, workers, block, range_bytes)
            # Smaller tasks when that lets this many workers fit: more tasks only balance better.
            room = (max_memory - PARENT_BYTES) // workers - WORKER_BYTES - PER_BLOCK * block
            task = max(min(task, room // PER_TASK), min(range_bytes, max(block, MIN_TASK_BYTES)))
            tasks = max(1, -(-todo // task))
            if workers <= tasks and tree_bytes(workers, block, task) <= max_memory:
                if best is None or workers > best.workers:
                    best = Sizing(workers, block, task)
                break
        if (best is not None and best.workers == jobs) or block <= MIN_BLOCK_BYTES:
            break
        block = max(block // 2, MIN_BLOCK_BYTES)
    if best is None:
        return Sizing(1, block, min(range_bytes, max(block, MIN_TASK_BYTES)))
    return best
