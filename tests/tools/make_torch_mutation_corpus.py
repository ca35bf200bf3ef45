#!/usr/bin/env python3
"""Writes tests/lit/interop/Inputs/torch_valid/: single-edit mutations of
PyTorch's own schedules that PyTorch's validators accept.

    /tmp/tv/bin/python tests/tools/make_torch_mutation_corpus.py [OUTPUT_DIR]
    /tmp/tv/bin/python tests/tools/make_torch_mutation_corpus.py --run CSV...

Sources: the recorded PyTorch CSVs of tests/lit/library/Inputs/ and, generated
from the installed torch as tests/tools/regenerate_torch_csvs.py does, GPipe
at two sizes. Edits, one per mutant, on one rank's actions (idle
slots dropped): swap two adjacent actions, or move one action elsewhere in its
row. A mutant is kept when PyTorch accepts it the way its runtime loads a
compute-only CSV: `_validate_schedule` (every stage's micro-batches complete,
F before B/I before W, one rank per stage), then `_add_send_recv` lowers it to
sends and receives and `_simulate_comms_compute` runs it to the end without
"Schedule is not progressing".

pipec must accept every file written here (tests/lit/interop/torch-valid.test):
these are orders PyTorch runs, many of them consumed on some rank in another
order than they are sent. Deterministic (fixed seed), so rerunning it with the
same torch writes the same files.

--run runs each CSV in PyTorch's real runtime (_PipelineScheduleRuntime,
_load_csv, CPU over gloo, one process per rank; stage s a Linear-Tanh seeded by
s) and prints the largest relative difference of any stage's gradients from a
single-process run of the same micro-batches. Not part of the test suite.
"""
import contextlib
import csv
import io
import os
import random
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
RECORDED = os.path.join(HERE, "..", "lit", "library", "Inputs")
SOURCES_RECORDED = [
    "torch_interleaved1f1b_P4_M8_v2.csv",
    "torch_interleaved1f1b_P3_M4_v3.csv",
    "torch_interleavedzb_v1_P4_M8.csv",
    "torch_zbv_P4_M5.csv",
]
# (label, PyTorch schedule name, ranks, micro-batches, stages per rank)
SOURCES_GENERATED = [
    ("gpipe_P3_M2", "GPipe", 3, 2, 1),
    ("gpipe_P4_M4", "GPipe", 4, 4, 1),
]
# (Not 1F1B: its single-stage order is computed for the constructing rank, and
# the stand-in stage of regenerate_torch_csvs.py is rank 0 for every row.)
SWAPS_PER_SOURCE = 40   # adjacent swaps kept per source, at most
MOVES_PER_SOURCE = 40   # moves kept per source, at most
SEED = 20261201


def generated_order(schedule, ranks, microbatches, per_rank):
    """The compute actions only: the single-stage schedules' orders end with
    gradient reductions, which are no part of the compute-only format."""
    sys.path.insert(0, HERE)
    from regenerate_torch_csvs import pipeline_order
    compute = re.compile(r"^\d+[FBIW]\d+$|^\(")
    return [[str(a) for a in row if a is not None and compute.match(str(a))]
            for row in pipeline_order(schedule, ranks, microbatches, per_rank)]


def recorded_order(name):
    with open(os.path.join(RECORDED, name), newline="") as f:
        return [[cell for cell in row if cell.strip()] for row in csv.reader(f)]


def accepted(rows):
    """True when PyTorch's loader and comms simulation accept the order."""
    from torch.distributed.pipelining.schedules import (
        _Action, _add_send_recv, _simulate_comms_compute, _validate_schedule)
    actions = {r: [_Action.from_str(c) for c in row] for r, row in enumerate(rows)}
    stages = 1 + max(a.stage_index if a.sub_actions is None
                     else max(s.stage_index for s in a.sub_actions)
                     for row in actions.values() for a in row)
    micro = 1 + max(a.microbatch_index for row in actions.values() for a in row
                    if a.sub_actions is None)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            mapping = _validate_schedule(actions, len(rows), stages, micro)
            comms = _add_send_recv(actions, lambda s: mapping[s], stages)
            _simulate_comms_compute(comms, lambda s: mapping[s], stages)
    except (AssertionError, ValueError, KeyError, RuntimeError):
        return False
    return True


def swaps(rows):
    for r, row in enumerate(rows):
        for i in range(len(row) - 1):
            mutant = [list(x) for x in rows]
            mutant[r][i], mutant[r][i + 1] = mutant[r][i + 1], mutant[r][i]
            yield f"swap rank {r} actions {i},{i + 1}", mutant


def moves(rows, rng):
    candidates = [(r, i, j) for r, row in enumerate(rows)
                  for i in range(len(row)) for j in range(len(row)) if abs(i - j) > 1]
    rng.shuffle(candidates)
    for r, i, j in candidates:
        mutant = [list(x) for x in rows]
        mutant[r].insert(j, mutant[r].pop(i))
        yield f"move rank {r} action {i} to {j}", mutant


# --run: the CSV in PyTorch's runtime against a single-process reference.
RUN_HIDDEN, RUN_ROWS = 8, 4


def _run_layout(path):
    from torch.distributed.pipelining.schedules import _Action
    with open(path, newline="") as f:
        rows = [[c for c in r if c.strip()] for r in csv.reader(f)]
    stage_rank, microbatches = {}, set()
    for r, row in enumerate(rows):
        for cell in row:
            action = _Action.from_str(cell)
            for a in action.sub_actions or [action]:
                stage_rank[a.stage_index] = r
                microbatches.add(a.microbatch_index)
    return len(rows), stage_rank, len(microbatches)


def _run_module(stage):
    import torch
    torch.manual_seed(1000 + stage)
    return torch.nn.Sequential(torch.nn.Linear(RUN_HIDDEN, RUN_HIDDEN), torch.nn.Tanh())


def _run_data(microbatches):
    import torch
    torch.manual_seed(7)
    return (torch.randn(microbatches * RUN_ROWS, RUN_HIDDEN),
            torch.randn(microbatches * RUN_ROWS, RUN_HIDDEN))


def _run_loss(output, target):
    import torch
    return torch.nn.functional.mse_loss(output, target, reduction="sum")


def _run_rank(rank, world, path, port, results):
    import torch
    import torch.distributed as dist
    from torch.distributed.pipelining import PipelineStage
    from torch.distributed.pipelining.schedules import _PipelineScheduleRuntime
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    _, stage_rank, microbatches = _run_layout(path)
    stages = len(stage_rank)
    mine = sorted(s for s, r in stage_rank.items() if r == rank)
    modules = {s: _run_module(s) for s in mine}
    schedule = _PipelineScheduleRuntime(
        [PipelineStage(modules[s], s, stages, torch.device("cpu")) for s in mine],
        microbatches, loss_fn=_run_loss, scale_grads=False)
    schedule._load_csv(path, format="compute_only")
    x, y = _run_data(microbatches)
    schedule.step(x if 0 in mine else None, target=y if stages - 1 in mine else None)
    results.put({s: [p.grad.clone() for p in modules[s].parameters()] for s in mine})
    dist.barrier()
    dist.destroy_process_group()


def run_in_torch(path, port):
    import torch.multiprocessing as mp
    world, stage_rank, microbatches = _run_layout(path)
    context = mp.get_context("spawn")
    results = context.SimpleQueue()
    ranks = [context.Process(target=_run_rank, args=(r, world, path, port, results))
             for r in range(world)]
    for p in ranks:
        p.start()
    grads = {}
    for _ in ranks:
        grads.update(results.get())
    for p in ranks:
        p.join(timeout=120)
    modules = [_run_module(s) for s in range(len(stage_rank))]
    x, y = _run_data(microbatches)
    for m in range(microbatches):
        h = x[m * RUN_ROWS:(m + 1) * RUN_ROWS]
        for module in modules:
            h = module(h)
        _run_loss(h, y[m * RUN_ROWS:(m + 1) * RUN_ROWS]).backward()
    error = max(((got - want.grad).abs().max() / want.grad.abs().max()).item()
                for s, module in enumerate(modules)
                for got, want in zip(grads[s], module.parameters()))
    print(f"{os.path.basename(path)}: {world} ranks, {len(stage_rank)} stages, "
          f"{microbatches} micro-batches: max relative gradient error {error:.2e}", flush=True)
    return error


def main():
    try:
        import torch  # noqa: F401
    except ImportError:
        print("make_torch_mutation_corpus: torch is not installed; nothing written")
        return 77
    if len(sys.argv) > 1 and sys.argv[1] == "--run":
        errors = [run_in_torch(path, 29600 + i) for i, path in enumerate(sys.argv[2:])]
        return 0 if errors and max(errors) <= 1e-6 else 1
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        HERE, "..", "lit", "interop", "Inputs", "torch_valid")
    os.makedirs(out, exist_ok=True)
    sources = [(name[len("torch_"):-len(".csv")], recorded_order(name))
               for name in SOURCES_RECORDED]
    sources += [(label, generated_order(*spec)) for label, *spec in SOURCES_GENERATED]
    rng = random.Random(SEED)
    written, tried = 0, 0
    for label, rows in sources:
        if not accepted(rows):
            sys.exit(f"the unmutated {label} is refused by PyTorch's validators")
        seen = {tuple(map(tuple, rows))}
        for kind, edits, limit in (("swap", swaps(rows), SWAPS_PER_SOURCE),
                                   ("move", moves(rows, rng), MOVES_PER_SOURCE)):
            kept = 0
            for what, mutant in edits:
                key = tuple(map(tuple, mutant))
                if key in seen:
                    continue
                seen.add(key)
                tried += 1
                if not accepted(mutant):
                    continue
                path = os.path.join(out, f"{label}_{kind}{kept:02d}.csv")
                with open(path, "w", newline="") as f:
                    f.write("".join(",".join(row) + "\n" for row in mutant))
                kept += 1
                written += 1
                if kept == limit:
                    break
    print(f"{written} mutants accepted by PyTorch's validators written to {out} "
          f"({tried} tried)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
