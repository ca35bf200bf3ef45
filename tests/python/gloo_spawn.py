"""Runs a function on N local processes joined by a gloo group, under a deadline.

    run_gloo(fn, world, *args, deadline_s=120, timeout_s=60)

Each process calls fn(rank, world, *args) after init_process_group("gloo")
through a file store in a fresh temporary directory (no ports to collide on);
timeout_s bounds each collective and receive (gloo's own timeout).
An exception in any process fails the caller with that process's traceback;
a process still running at the deadline is killed and the caller fails naming
it, so a hung collective never hangs the test suite.
"""
import datetime
import os
import tempfile
import time

import torch.distributed as dist
import torch.multiprocessing as mp


def _entry(rank, fn, world, store, timeout_s, args):
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=timeout_s))
    try:
        fn(rank, world, *args)
    finally:
        dist.destroy_process_group()


def run_gloo(fn, world, *args, deadline_s=120, timeout_s=60):
    with tempfile.TemporaryDirectory() as tmp:
        store = os.path.join(tmp, "store")
        ctx = mp.start_processes(_entry, args=(fn, world, store, timeout_s, args), nprocs=world,
                                 join=False, start_method="spawn")
        end = time.monotonic() + deadline_s
        while not ctx.join(timeout=max(0.1, min(1.0, end - time.monotonic()))):
            if time.monotonic() > end:
                alive = [i for i, p in enumerate(ctx.processes) if p.is_alive()]
                for p in ctx.processes:
                    if p.is_alive():
                        p.kill()
                raise TimeoutError(f"ranks {alive} still running after {deadline_s} s")
