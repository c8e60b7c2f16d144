"""Where tasks run: in this process, in a pool of worker processes (one per core), or on a Dask cluster.
Each yields (item, result) pairs as tasks finish; results are small summaries, never tables."""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import os
import signal
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from multiprocessing import forkserver
from typing import Any, Protocol

from tracelens.errors import InputError
from tracelens.sizes import DEFAULT_BLOCK_BYTES
from tracelens.sources.lifeline import die_with

LOCAL = "local"
DASK = "dask"
DASK_LOCAL = "dask-local"
EXECUTORS = (LOCAL, DASK, DASK_LOCAL)


class TaskFailed(InputError):
    """A task that raised on a worker (or inline): an error of the whole run, one line and exit 2, the
    dataset left as it was. Never taken for an input read in part (exit 1), which a task reports in its
    result, not by raising."""


@contextmanager
def _task_errors() -> Iterator[None]:
    """Turn what a task raised into `TaskFailed`; an `InputError` (a user's) and a dead worker
    (`BrokenExecutor`, said by the engine) stay as they are."""
    try:
        yield
    except (InputError, cf.BrokenExecutor):
        raise
    except Exception as exc:
        text = (str(exc).strip().splitlines() or [""])[0][:300]
        raise TaskFailed(f"a worker task failed ({type(exc).__name__}: {text})") from exc


class Executor(Protocol):
    workers: int

    def run(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> Iterator[tuple[Any, Any]]: ...

    def close(self) -> None: ...


# Environment of worker processes. One polars thread each: parallelism comes from the processes, and
# N processes x N threads on N cores only thrash. polars' allocator (jemalloc) gives freed pages back
# after 500 ms instead of keeping them for seconds, so a worker's memory follows its last blocks, not its
# past; giving them back at once (0 ms) cost a fifth of the workers' time in page faults, and 200 ms
# (a block takes about 100 ms) still faulted a quarter more pages in than 500 (1,000 and 2,000 ms: no
# fewer). pyarrow (the Parquet writer) allocates from the C library's malloc instead of its default
# mimalloc pool, which kept about 25 MiB per worker it no longer used (measured with
# bench/throughput.py). The C library's malloc itself gets a fixed mmap threshold: by default it raises
# the threshold to the size of each big buffer freed, after which every big buffer comes from the heap,
# which fragments and never shrinks (a worker's heap grew from 13 to 45 MiB over a task). Buffers over
# the threshold are mapped and unmapped instead, their pages faulted in anew each time. It sits just
# above a default block (the bytearray a block is read into, reused from the heap block after block):
# at 4 MiB, below the 6 MiB blocks, a block's pages were faulted in for every block, a quarter of the
# page faults and about 1 CPU-s per GiB (ARCHITECTURE.md, "Block size").
WORKER_ENV = {
    "POLARS_MAX_THREADS": "1",
    "_RJEM_MALLOC_CONF": "dirty_decay_ms:500,muzzy_decay_ms:0",
    "ARROW_DEFAULT_MEMORY_POOL": "system",
    "MALLOC_MMAP_THRESHOLD_": str(DEFAULT_BLOCK_BYTES + (2 << 20)),
    "OPENBLAS_NUM_THREADS": "1",  # numpy's BLAS threads, never used, spin 0.1 CPU-s as numpy loads
}
# What the fork server imports for its workers: the task code, and the modules a task imports on
# its first write (the Parquet writer), so that workers share them rather than each import them (0.1
# CPU-s and a few MiB each). fsspec only for a dataset at a URL: a local one is written with os and
# shutil (`store.LocalFiles`).
PRELOAD = ["tracelens.engine.task", "pyarrow.parquet"]
FSSPEC_PRELOAD = ["fsspec.core"]


@contextmanager
def _worker_environment() -> Iterator[None]:
    """Worker processes started meanwhile inherit `WORKER_ENV`."""
    old = {key: os.environ.get(key) for key in WORKER_ENV}
    os.environ.update(WORKER_ENV)
    try:
        yield
    finally:
        for key, value in old.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _start_worker(parent: int) -> None:
    """Workers leave Ctrl-C to the parent, which stops handing out tasks, lets the running ones end
    and removes what they staged; a worker would otherwise die mid-write with a traceback. They end
    when the parent ends, however it ends (`sources.lifeline`): what they staged is the journal's to
    clear, as after any crash."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with(parent)


class InlineExecutor:
    """Tasks one after another in this process (`--jobs 1`)."""

    workers = 1

    def run(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> Iterator[tuple[Any, Any]]:
        for item in items:
            with _task_errors():
                result = fn(item)
            yield item, result

    def close(self) -> None:
        pass


class PoolExecutor:
    """Up to one worker process per job, forked from a fork server that has imported the task code and
    nothing else: never forked from this process (its polars thread pool may be running), workers
    start fast and share the library's memory pages with each other. A worker starts when a task is
    submitted and none is idle, so a run of fewer tasks than jobs starts fewer workers."""

    def __init__(self, jobs: int, via_fsspec: bool = False) -> None:
        self.workers = jobs
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(PRELOAD + FSSPEC_PRELOAD if via_fsspec else PRELOAD)
        with _worker_environment():
            # The workers are forked from the fork server and inherit its environment: it starts now,
            # while the variables are set, and imports its preload while this process plans.
            forkserver.ensure_running()
        self.pool = cf.ProcessPoolExecutor(
            jobs, mp_context=context, initializer=_start_worker, initargs=(os.getpid(),)
        )

    def run(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> Iterator[tuple[Any, Any]]:
        futures = {self.pool.submit(fn, item): item for item in items}
        for future in cf.as_completed(futures):
            with _task_errors():
                result = future.result()
            yield futures[future], result

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)


class DaskExecutor:
    """The same tasks on a Dask cluster: an existing scheduler, or a LocalCluster started here."""

    def __init__(self, scheduler: str | None, jobs: int) -> None:
        try:
            from distributed import Client, LocalCluster
        except ImportError as exc:  # pragma: no cover - an extra of the package
            raise InputError(
                "--executor dask needs the dask extra: pip install 'tracelens-logs[dask]'"
            ) from exc
        self.cluster = None
        with _worker_environment():
            if scheduler is None:
                self.cluster = LocalCluster(
                    n_workers=jobs, threads_per_worker=1, processes=True, dashboard_address=None
                )
                self.client = Client(self.cluster)
            else:
                try:
                    self.client = Client(scheduler, timeout="20s")
                except OSError as exc:
                    raise InputError(f"cannot reach the Dask scheduler at {scheduler} ({exc})") from exc
        self.workers = max(1, len(self.client.scheduler_info().get("workers", {})))

    def run(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> Iterator[tuple[Any, Any]]:
        from distributed import as_completed

        futures = {}
        for item in items:
            futures[self.client.submit(fn, item, pure=False)] = item
        for future in as_completed(list(futures)):
            with _task_errors():  # distributed re-raises the task's own exception, or KilledWorker
                result = future.result()
            yield futures[future], result

    def close(self) -> None:
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()


def stop_fork_server() -> None:
    """End the fork server `PoolExecutor` started: otherwise it lives as long as this process, and a
    live session that loaded its log through the engine runs for hours after the engine's last task
    (about 100 MiB it would hold for nothing). The next pool starts a new one."""
    server = getattr(forkserver, "_forkserver", None)
    stop = getattr(server, "_stop", None)  # what CPython's own tests call; absent: nothing to stop
    if stop is not None:
        stop()


def make_executor(kind: str, jobs: int | None, scheduler: str | None, via_fsspec: bool = False) -> Executor:
    """``via_fsspec``: the workers write the dataset through fsspec (`Store.via_fsspec`)."""
    jobs = jobs or os.cpu_count() or 1
    if kind == LOCAL:
        if scheduler is not None:
            raise InputError("--scheduler goes with --executor dask")
        return InlineExecutor() if jobs == 1 else PoolExecutor(jobs, via_fsspec)
    if kind == DASK:
        if not scheduler:
            raise InputError("--executor dask needs --scheduler tcp://HOST:PORT")
        return DaskExecutor(scheduler, jobs)
    if kind == DASK_LOCAL:
        return DaskExecutor(None, jobs)
    raise InputError(f"--executor must be one of {', '.join(EXECUTORS)}, got {kind!r}")
