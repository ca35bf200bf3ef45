"""The multi-process PyTorch runtime tests, one named set per ctest test
(tests/python/CMakeLists.txt): each set is a list of configurations that one
job of P gloo processes runs in turn (worker_equivalence.py), under a hard
deadline (launcher.py).

    run_suite.py SET

Differences are relative to max(1, the reference's largest magnitude). fp64
tolerance 1e-10 (largest measured 4.5e-14: interleaved v = 3, P = 4, twelve
stages deep); fp32 tolerance 2e-5, from the measured differences (largest
3.2e-6 on DualPipeV and ZBV gradients at P = 4: the micro-batch gradients are
summed in another order than the single-process backward's).
"""

from __future__ import annotations

import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import launcher  # noqa: E402

FP64_TOL = 1e-10
FP32_TOL = 2e-5
STEPS = 3


def cfg(schedule, dtype="float64", steps=STEPS, **sizes):
    return {"schedule": schedule, "sizes": sizes, "dtype": dtype, "steps": steps,
            "tol": FP64_TOL if dtype == "float64" else FP32_TOL}


# Every library schedule's micro-batch counts at P = 2 and at P = 4, two or
# more each, with the sizes it needs besides P and M.
LIBRARY_SIZES = [
    ("gpipe", {}, (1, 3), (4, 6)),
    ("1f1b", {}, (2, 5), (4, 8)),
    ("interleaved_1f1b", {"v": 2}, (2, 4), (4, 8)),
    ("interleaved_1f1b", {"v": 3}, (4, 2), (4, 8)),
    ("zb_h1", {}, (2, 4), (4, 6)),
    ("zb_h2", {}, (3, 4), (5, 8)),
    ("zbv", {}, (2, 5), (4, 8)),
    ("dualpipev", {}, (4, 6), (8, 10)),
    ("dualpipe", {}, (4, 8), (8, 12)),
    ("chimera", {}, (2, 6), (4, 8)),
]


def library(P: int):
    """Every library schedule at P = 2, or else at P = 4, at two or more M each."""
    P = 2 if P == 2 else 4
    return [cfg(name, P=P, M=M, **extra)
            for name, extra, at2, at4 in LIBRARY_SIZES for M in (at2 if P == 2 else at4)]


def fp32(P: int):
    M2 = 2 * P
    return [cfg("1f1b", "float32", P=P, M=M2), cfg("dualpipe", "float32", P=P, M=M2),
            cfg("dualpipev", "float32", P=P, M=M2), cfg("zbv", "float32", P=P, M=M2)]


def overlap(P: int):
    """Schedules with overlap pairs, their halves forced to interleave."""
    out = []
    for config in (cfg("dualpipe", P=P, M=2 * P), cfg("dualpipe", P=P, M=4 * P),
                   cfg("dualpipev", P=P, M=2 * P), cfg("dualpipev", P=P, M=3 * P)):
        config["overlap"] = "threads"
        out.append(config)
    return out


def random_set(P: int):
    """Random schedules the checks accept (random_schedules.py), some with their
    overlap pairs forced to interleave."""
    import tempfile
    import random_schedules
    import atexit
    import shutil
    directory = tempfile.mkdtemp(prefix=f"pipec-random-P{P}-")
    atexit.register(shutil.rmtree, directory, True)
    plain = random_schedules.write_accepted(os.environ["PIPEC"], directory, P, count=5,
                                            seed=20261202 + P)
    paired = random_schedules.write_accepted(os.environ["PIPEC"], directory, P, count=4,
                                             seed=20261203 + P, pairs=True)
    if len(plain) < 3 or len(paired) < 2:
        raise SystemExit(f"too few random schedules accepted: {len(plain)} and {len(paired)} "
                         "with pairs")
    configs = [cfg(path, steps=2) for path in plain]
    for path in paired:
        config = cfg(path, steps=2)
        config["overlap"] = "threads"
        configs.append(config)
    return configs


def variants(P: int):
    """Adam, gradients accumulated over two steps (two-copy schedules set the
    earlier steps' gradients aside while they sum the copies'), and shapes that
    change from step to step (static_shapes=False)."""
    out = [dict(cfg("dualpipe", steps=4, P=P, M=2 * P), optimizer="adam", accumulate=2),
           dict(cfg("chimera", steps=4, P=P, M=P), accumulate=2),
           dict(cfg("zbv", steps=4, P=P, M=P), optimizer="adam"),
           dict(cfg("1f1b", P=P, M=P), static_shapes=False),
           dict(cfg("dualpipev", P=P, M=2 * P), static_shapes=False)]
    return out


INPUTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs")
EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples")
TRANSFER_OP = re.compile(r"\b(Evict|Hold|Return|Load)\s*\(")


def without_transfers(path: str) -> str:
    """`path` with every line that holds a BPipe transfer (Evict, Hold, Return,
    Load) removed: the same order of F and B with the activations kept where they
    are (worker_equivalence.py checks that the orders agree). Written once per run
    into a temporary folder."""
    import atexit
    import shutil
    import tempfile
    global _STRIPPED_DIR
    if _STRIPPED_DIR is None:
        _STRIPPED_DIR = tempfile.mkdtemp(prefix="pipec-no-transfers-")
        atexit.register(shutil.rmtree, _STRIPPED_DIR, True)
    with open(path, encoding="utf-8") as f:
        kept = [line for line in f if not TRANSFER_OP.search(line)]
    out = os.path.join(_STRIPPED_DIR, os.path.basename(path))
    with open(out, "w", encoding="utf-8") as f:
        f.writelines(kept)
    return out


_STRIPPED_DIR = None


def bpipe(config: dict, path: str) -> dict:
    """A BPipe configuration: also bit for bit against the order without its
    transfers ("twin"), and at least one Evict must move tensors ("evicts")."""
    return dict(config, twin=without_transfers(path), evicts=True)


def memory_set(P: int):
    """Recomputation (R), per-micro-batch sizes, Offload/Reload and BPipe's
    Evict/Hold/Return/Load: gradients equal to the single-process reference
    (sizes: the mean over the whole batch's samples) and measured live
    activations equal to the prediction after every op. BPipe's configurations
    are also compared bit for bit with the same order without its transfers."""
    recompute = "1f1b_recompute"
    sizes = os.path.join(INPUTS, "1f1b_sizes.pipe")
    split = os.path.join(INPUTS, "zb_recompute_sizes.pipe")
    offload_all = os.path.join(INPUTS, "offload_all.pipe")
    # 1f1b_offload moves activations only where P - r > K (none at P = 2, K = 2).
    offload = [cfg("1f1b_offload", P=P, M=2 * P, K=2), cfg("1f1b_offload", "float32", P=P, M=2 * P + 1, K=2)]
    # examples/bpipe.pipe evicts only where P - r > T = ceil((P+2)/2): rank 0 at
    # P = 4 (T = 3), none at P = 2; Inputs/evict_all.pipe evicts from every rank of
    # the first half, at P = 2 too.
    bpipe_path = os.path.join(EXAMPLES, "bpipe.pipe")
    evict_all = os.path.join(INPUTS, "evict_all.pipe")
    transfers = [bpipe(cfg(evict_all, P=P, M=P), evict_all),
                 bpipe(cfg(evict_all, P=P, M=2 * P + 1), evict_all),
                 bpipe(dict(cfg(evict_all, P=P, M=2 * P), static_shapes=False), evict_all)]
    if P >= 4:
        transfers += [bpipe(cfg("bpipe", P=P, M=P), bpipe_path),
                      bpipe(cfg("bpipe", P=P, M=2 * P), bpipe_path),
                      bpipe(cfg("bpipe", "float32", P=P, M=2 * P + 1), bpipe_path),
                      bpipe(dict(cfg("bpipe", P=P, M=2 * P), static_shapes=False), bpipe_path),
                      # NCCL's layout on gloo: a process group per channel, batched sends
                      bpipe(dict(cfg("bpipe", P=P, M=2 * P + 1), channel_groups=True), bpipe_path)]
    return offload + transfers + [
            cfg(offload_all, P=P, M=P + 1, S=0), cfg(offload_all, P=P, M=2 * P, S=1),
            dict(cfg(offload_all, P=P, M=2 * P, S=1), static_shapes=False),
            cfg(recompute, P=P, M=P), cfg(recompute, P=P, M=2 * P + 1),
            cfg(recompute, "float32", P=P, M=2 * P),
            dict(cfg(recompute, P=P, M=2 * P), static_shapes=False),
            cfg(sizes, P=P, M=4), cfg(sizes, P=P, M=2 * P + 1),
            dict(cfg(sizes, P=P, M=2 * P), static_shapes=False),
            cfg(split, P=P, M=2 * P), cfg(split, P=P, M=2 * P + 1)]


def groups_set():
    """Four processes as two pipelines of two (pipeline x data parallel's layout,
    without the data-parallel reduction), and the per-channel process groups
    that NCCL uses, here on gloo."""
    return [dict(cfg("dualpipe", P=2, M=4), pipelines=2),
            dict(cfg("zbv", P=2, M=4), pipelines=2, channel_groups=True),
            dict(cfg("chimera", P=2, M=4), pipelines=2, channel_groups=True),
            dict(cfg("dualpipe", P=4, M=8), channel_groups=True),
            dict(cfg("interleaved_1f1b", P=4, M=8, v=2), channel_groups=True)]


SETS = {
    "groups-p4": (4, groups_set),
    "library-p2": (2, lambda: library(2) + fp32(2) + variants(2)),
    "memory-p2": (2, lambda: memory_set(2)),
    "memory-p4": (4, lambda: memory_set(4)),
    "library-p4": (4, lambda: library(4) + fp32(4) + variants(4)),
    "overlap-p2": (2, lambda: overlap(2)),
    "overlap-p4": (4, lambda: overlap(4)),
    "random-p2": (2, lambda: random_set(2)),
    "random-p4": (4, lambda: random_set(4)),
}


def main() -> int:
    name = sys.argv[1]
    if name not in SETS:
        print(f"unknown set {name}; sets: {', '.join(SETS)}")
        return 2
    P, make = SETS[name]
    configs = make()
    here = os.path.dirname(os.path.abspath(__file__))
    deadline = 60 + 15 * len(configs) * P / 2
    results = launcher.launch(P, deadline, [os.path.join(here, "worker_equivalence.py"),
                                            json.dumps(configs)])
    ok = all(code == 0 for code, _ in results)
    for rank, (code, out) in enumerate(results):
        if not ok:
            print(f"===== rank {rank} (exit {code}) =====\n{out}")
        elif rank == 0:
            print(out)
    print(f"{name}: {len(configs)} configurations on {P} processes: {'ok' if ok else 'FAILED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
