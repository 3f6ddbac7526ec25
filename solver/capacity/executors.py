"""Where a sweep's solves run: this process, local worker processes, or an existing Ray or Dask cluster.

Every executor takes the same items (a sweep's: one deployment's solves each) and returns each item's result at the
item's own position, so the table a sweep writes is the same bytes whichever runs it. Ray and Dask are optional extras (`pip install
'shardplan[ray]'` / `'shardplan[dask]'`); the cluster's workers need shardplan installed (the same version).
"""
from __future__ import annotations

import atexit
import gc
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from multiprocessing import get_context
from typing import Any, Callable, Sequence

from solver.errors import InputError

Rows = Any  # what the solve function returns for one item (a sweep: each of a deployment's tasks' rows)
ProgressFn = Callable[[int, int, str], None]
SolveFn = Callable[[Any], Rows]

EXECUTORS = ("local", "ray", "dask")


class _Collector:
    """Results in item order and the progress callback, shared by every executor."""

    def __init__(self, tasks: Sequence[Any], progress: ProgressFn | None):
        self.tasks = tasks
        self.progress = progress
        self.rows: list[Rows | None] = [None] * len(tasks)
        self.done = 0

    def put(self, i: int, rows: Rows) -> None:
        self.rows[i] = rows
        self.done += 1
        if self.progress:
            self.progress(self.done, len(self.tasks), self.tasks[i].label)

    def result(self) -> list[Rows]:
        return [r or [] for r in self.rows]


def _largest_first(tasks: Sequence[Any]) -> list[int]:
    """Biggest clusters first, so the slowest solves do not trail at the end."""
    return sorted(range(len(tasks)), key=lambda i: -tasks[i].cards)


def _worker_start() -> None:
    """A local worker process, at its exit, freezes what it holds (gc.freeze) before the interpreter's last
    collection: that collection would otherwise walk every cached table entry of the plans it ran (4 M objects
    after the 512- and 1024-card DeepSeek-V3.2 plans: about 6 s, which the pool waits for on shutdown)."""
    atexit.register(gc.freeze)


def run_local(solve: SolveFn, tasks: Sequence[Any], jobs: int, progress: ProgressFn | None) -> list[Rows]:
    out = _Collector(tasks, progress)
    if jobs == 1 or len(tasks) <= 1:
        for i, t in enumerate(tasks):
            out.put(i, solve(t))
        return out.result()
    # spawn, not fork: OR-Tools keeps threads, and a forked copy of a threaded process can hang
    with ProcessPoolExecutor(max_workers=min(jobs, len(tasks)), mp_context=get_context("spawn"),
                             initializer=_worker_start) as pool:
        futures = {pool.submit(solve, tasks[i]): i for i in _largest_first(tasks)}
        try:
            for fut in as_completed(futures):
                out.put(futures[fut], fut.result())
        except BrokenProcessPool:
            for f in futures:
                f.cancel()
            raise InputError("--jobs", f"a worker process ended before returning its solve (of {jobs} spawned): a "
                                       "script that calls sweep with jobs > 1 must call it under `if __name__ == "
                                       "'__main__':` (spawned workers import the script); else a worker ran out of "
                                       "memory: give fewer jobs") from None
        except BaseException:
            for f in futures:
                f.cancel()
            raise
    return out.result()


def run_dask(solve: SolveFn, tasks: Sequence[Any], address: Any, progress: ProgressFn | None) -> list[Rows]:
    """`address`: a scheduler address ('tcp://host:8786'), or a Client / LocalCluster object (the API's tests)."""
    distributed = _optional("distributed", "dask")
    own = not isinstance(address, distributed.Client)
    try:
        client = distributed.Client(address) if own else address
    except (ValueError, TypeError, OSError) as exc:  # a malformed or unreachable address is the user's input
        raise InputError("--address", f"no Dask scheduler at {address!r}: {exc}") from None
    out = _Collector(tasks, progress)
    try:
        order = _largest_first(tasks)
        futures = client.map(solve, [tasks[i] for i in order], pure=False)
        index = {f.key: i for f, i in zip(futures, order)}
        for fut in distributed.as_completed(futures):
            out.put(index[fut.key], fut.result())
    finally:
        if own:
            client.close()
    return out.result()


def run_ray(solve: SolveFn, tasks: Sequence[Any], address: str | None, progress: ProgressFn | None) -> list[Rows]:
    """`address`: a Ray cluster address ('ray://host:10001' or 'auto'); None only where Ray is already
    initialised (the API's tests), which it joins."""
    ray = _optional("ray", "ray")
    own = not ray.is_initialized()
    if own:
        if address is None:  # ray.init() would start a private instance, not join the cluster asked for
            raise InputError("--address", "--executor ray needs the cluster's address (ray://HOST:10001, or auto "
                                          "for the one `ray start` runs on this machine)")
        try:
            ray.init(address=address, ignore_reinit_error=True, log_to_driver=False)
        except (ValueError, TypeError, ConnectionError, OSError) as exc:
            raise InputError("--address", f"no Ray cluster at {address!r}: {exc}") from None
    out = _Collector(tasks, progress)
    try:
        remote = ray.remote(solve)
        order = _largest_first(tasks)
        pending = {remote.remote(tasks[i]): i for i in order}
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                out.put(pending.pop(ref), ray.get(ref))
    finally:
        if own:
            ray.shutdown()
    return out.result()


def run(solve: SolveFn, tasks: Sequence[Any], *, jobs: int = 1, executor: str = "local", address: Any = None,
        progress: ProgressFn | None = None) -> list[Rows]:
    """The result of every item, in item order, whatever runs them."""
    if executor not in EXECUTORS:
        raise InputError("--executor", f"unknown executor {executor!r}; known: {', '.join(EXECUTORS)}")
    if jobs < 1:
        raise InputError("--jobs", f"must be >= 1, got {jobs}")
    if executor == "local":
        if address is not None:
            raise InputError("--address", "only with --executor ray or dask")
        return run_local(solve, tasks, jobs, progress)
    if executor == "dask":
        if address is None:
            raise InputError("--address", "--executor dask needs the scheduler's address (tcp://HOST:8786)")
        return run_dask(solve, tasks, address, progress)
    return run_ray(solve, tasks, address, progress)


def _optional(module: str, extra: str) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise InputError("--executor", f"{extra} is not installed; pip install 'shardplan[{extra}]'") from None
