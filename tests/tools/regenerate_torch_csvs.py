#!/usr/bin/env python3
"""Writes the PyTorch schedule CSVs in tests/lit/library/Inputs/ again from the
installed torch, so a newer PyTorch can be compared with the library.

    python3 tests/tools/regenerate_torch_csvs.py [OUTPUT_DIR]

Needs torch (CPU is enough; no process group is created). Each CSV is one row per
rank of the schedule's `pipeline_order`, an idle step as an empty cell, written
with Python's csv writer as PyTorch's `_dump_csv` writes it ("\\r\\n" line ends).
"""
import csv
import os
import sys

# (file name, PyTorch schedule name, ranks, micro-batches, stages per rank)
RECORDINGS = [
    ("torch_interleaved1f1b_P4_M8_v2.csv", "Interleaved1F1B", 4, 8, 2),
    ("torch_interleaved1f1b_P4_M10_v2.csv", "Interleaved1F1B", 4, 10, 2),
    ("torch_interleaved1f1b_P3_M4_v3.csv", "Interleaved1F1B", 3, 4, 3),
    ("torch_interleavedzb_v1_P4_M8.csv", "InterleavedZeroBubble", 4, 8, 1),
    # ZB-H1 with fewer micro-batches than ranks (issue 25.15)
    ("torch_interleavedzb_v1_P4_M2.csv", "InterleavedZeroBubble", 4, 2, 1),
    ("torch_interleavedzb_v1_P4_M3.csv", "InterleavedZeroBubble", 4, 3, 1),
    ("torch_interleavedzb_v1_P8_M5.csv", "InterleavedZeroBubble", 8, 5, 1),
    ("torch_interleavedzb_P4_M8_v2.csv", "InterleavedZeroBubble", 4, 8, 2),
    ("torch_interleavedzb_P4_M6_v3.csv", "InterleavedZeroBubble", 4, 6, 3),
    ("torch_interleavedzb_P8_M10_v2.csv", "InterleavedZeroBubble", 8, 10, 2),
    ("torch_interleavedzb_P3_M1_v3.csv", "InterleavedZeroBubble", 3, 1, 3),
    ("torch_interleavedzb_P8_M32_v3.csv", "InterleavedZeroBubble", 8, 32, 3),
    ("torch_interleavedzb_P2_M2_v2.csv", "InterleavedZeroBubble", 2, 2, 2),
    ("torch_zbv_P4_M8.csv", "ZBVZeroBubble", 4, 8, 2),
    ("torch_zbv_P4_M5.csv", "ZBVZeroBubble", 4, 5, 2),
]
# Also reference/torch_dualpipev_P4_M10.txt (ScheduleDualPipeV, P=4, M=10).


def pipeline_order(schedule, ranks, microbatches, stages_per_rank):
    """The schedule's compute order per rank, built without a process group.

    The schedule classes compute `pipeline_order` for every rank in their
    constructor from the stage count and group size alone, so stand-in stages
    that carry those numbers are enough (PyTorch's own visualizer does the same,
    but refuses one stage per rank for the multi-stage classes).
    """
    from unittest import mock

    from torch.distributed.pipelining import PipelineStage
    from torch.distributed.pipelining.schedules import PipelineScheduleSingle, get_schedule_class

    cls = get_schedule_class(schedule)
    stage = mock.create_autospec(PipelineStage, instance=True)
    stage.group_rank, stage.group_size, stage.submod = 0, ranks, None
    stage.num_stages = ranks * stages_per_rank
    stages = stage if issubclass(cls, PipelineScheduleSingle) else [stage] * stages_per_rank
    order = cls(stages, microbatches).pipeline_order
    return [list(order[rank]) for rank in range(ranks)]


def main():
    try:
        import torch  # noqa: F401
    except ImportError:
        print("regenerate_torch_csvs: torch is not installed (pip install torch); nothing written")
        sys.exit(77)  # ctest's skip code
    here = os.path.dirname(os.path.abspath(__file__))
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "lit", "library", "Inputs")
    os.makedirs(out, exist_ok=True)
    for name, schedule, ranks, microbatches, per_rank in RECORDINGS:
        rows = pipeline_order(schedule, ranks, microbatches, per_rank)
        with open(os.path.join(out, name), "w", newline="") as f:
            writer = csv.writer(f)
            for row in rows:
                writer.writerow(["" if action is None else str(action) for action in row])
        print(f"wrote {name} ({schedule}, P={ranks}, M={microbatches}, v={per_rank})")
    os.makedirs(os.path.join(out, "reference"), exist_ok=True)
    write_dualpipev_reference(os.path.join(out, "reference", "torch_dualpipev_P4_M10.txt"))


def write_dualpipev_reference(path):
    """reference/torch_dualpipev_P4_M10.txt: ScheduleDualPipeV's order, "rank: actions"."""
    import torch

    rows = pipeline_order("DualPipeV", 4, 10, 2)
    with open(path, "w") as f:
        f.write("# PyTorch torch.distributed.pipelining ScheduleDualPipeV(P=4 ranks, 8 stages, M=10), "
                f"pipeline_order per rank (torch {torch.__version__.split('+')[0]}); actions are "
                "<stage><type><mb>, OVERLAP_F_B pairs as (a;b)\n")
        for rank, row in enumerate(rows):
            f.write(f"{rank}: " + " ".join(str(a) for a in row if a is not None) + "\n")
    print(f"wrote {path} (DualPipeV, P=4, M=10)")


if __name__ == "__main__":
    main()
