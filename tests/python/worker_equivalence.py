"""One rank of an equivalence run: for each configuration (schedule, sizes,
dtype), trains the test stages (models.py) with pipec.torch.Pipeline for a few
optimizer steps and, after every step, compares with a single-process PyTorch
run of the same modules and micro-batches on this rank: the loss (on loss
ranks), every gradient of every held stage copy, and every parameter after the
optimizer.  Also checks the measured live activations after every op against
the compiler's prediction, and, for two-copy schedules, that the copies are
identical bit for bit at the end.

    worker_equivalence.py CONFIGS_JSON

CONFIGS_JSON: a list of {"schedule", "sizes", "dtype": "float64"|"float32",
"steps", "tol"[, "overlap": "threads"][, "optimizer": "sgd"|"adam"]
[, "accumulate": K][, "static_shapes": false][, "channel_groups": true]
[, "pipelines": N][, "twin": PATH][, "evicts": true]}.  "channel_groups" runs the NCCL mode (a process group per
channel) on gloo; "pipelines": N splits the job into N pipelines of equal
size, each checked against the reference on its own.  With "accumulate": K the
gradients of K steps accumulate in .grad (zero_grad and the optimizer every K
steps); with "static_shapes": false the batch size changes from step to step.
With "twin" (a schedule with the same order of F and B and no BPipe transfers)
a second pipeline runs that schedule on the same batches and every gradient and
parameter must equal its twin's bit for bit; with "evicts" every Evict of the
program must have run and moved tensors (summed over the ranks).  Prints a PASS line per configuration
with the largest differences seen; exits 1 at the first failure.
"""

from __future__ import annotations

import json
import os
import sys
from datetime import timedelta

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import models  # noqa: E402
import overlap_test  # noqa: E402
import pipec.torch  # noqa: E402

DTYPES = {"float64": torch.float64, "float32": torch.float32}


def fail(message: str) -> None:
    print(f"FAIL rank {dist.get_rank()}: {message}", flush=True)
    sys.exit(1)


def max_diff(a: torch.Tensor, b: torch.Tensor) -> float:
    """Largest difference, relative to the reference's largest magnitude where that
    exceeds 1 (deep test stacks grow some gradients well above 1)."""
    if not a.numel():
        return 0.0
    scale = max(1.0, b.double().abs().max().item())
    return (a.double() - b.double()).abs().max().item() / scale


def check_twin_order(program, twin, where: str) -> None:
    """The twin runs the same F/B order (ops other than transfers, per rank) and has
    no transfers: the only difference is where saved tensors wait."""
    transfers = ("Evict", "Hold", "Return", "Load")
    for mine, theirs in zip(program.ranks, twin.ranks):
        a = [(op.kind, op.stage, op.mb) for op in mine.ops if op.kind not in transfers]
        b = [(op.kind, op.stage, op.mb) for op in theirs.ops]
        if a != b or any(op.kind in transfers for op in theirs.ops):
            fail(f"{where}: rank {mine.rank}: the order without transfers is not the same "
                 "order of F and B")


def same_bits(pipe, twin, where: str, what: str, value) -> None:
    for (stage, module), (_, other) in zip(pipe.modules(), twin.modules()):
        for (name, p), q in zip(module.named_parameters(), other.parameters()):
            if not torch.equal(value(p), value(q)):
                fail(f"{where}: {what} of stage {stage} {name} differs from the order "
                     "without transfers (expected bit for bit)")


def run_config(config: dict) -> dict:
    dtype = DTYPES[config["dtype"]]
    tol = float(config["tol"])
    steps = int(config.get("steps", 3))
    overlap = overlap_test.interleaving_overlap if config.get("overlap") == "threads" else None
    S_holder = {}

    def stage_fn(s):
        return models.Stage(s, S_holder["S"], dtype)

    # The stage count is the schedule's: compile once to read it.
    from pipec.compiler import compile_schedule
    program, _ = compile_schedule(config["schedule"], config["sizes"])
    S_holder["S"] = program.num_stages
    S, M = program.num_stages, program.num_microbatches
    static = config.get("static_shapes", True)
    accumulate = int(config.get("accumulate", 1))
    group = None
    pipelines = int(config.get("pipelines", 1))
    if pipelines > 1:  # several pipelines in one job, as in pipeline x data parallel
        size = dist.get_world_size() // pipelines
        for i in range(pipelines):  # new_group is collective over the job
            g = dist.new_group(list(range(i * size, (i + 1) * size)))
            if dist.get_rank() // size == i:
                group = g
    pipe = pipec.torch.Pipeline(config["schedule"], config["sizes"], stage_fn, models.loss_fn,
                                group=group, timeout=60, overlap_fn=overlap,
                                static_shapes=static,
                                channel_groups=config.get("channel_groups"))
    assert pipe.num_stages == S
    reference = [models.Stage(s, S, dtype) for s in range(S)]
    def optimizer(params):
        if config.get("optimizer", "sgd") == "adam":
            return torch.optim.Adam(params, lr=0.01)
        return torch.optim.SGD(params, lr=0.1, momentum=0.9)

    opt = optimizer([p for _, m in pipe.modules() for p in m.parameters()])
    ref_opt = optimizer([p for m in reference for p in m.parameters()])
    worst = {"loss": 0.0, "grad": 0.0, "param": 0.0}
    switches_before = overlap_test.SWITCHES
    pairs = sum(1 for op in program.ranks[pipe.rank].ops
                if op.pair == "second" and op.kind == "B")
    extras = "".join(f" {k}={config[k]}" for k in ("optimizer", "accumulate", "static_shapes",
                                                  "channel_groups", "pipelines")
                     if k in config)
    where = f"{config['schedule']} {config['sizes']} {config['dtype']}{extras}"
    sized = bool(program.microbatch_sizes)  # rows split in the declared proportions
    units = sum(program.microbatch_sizes) if sized else M
    twin = twin_opt = None
    if config.get("twin"):
        twin = pipec.torch.Pipeline(config["twin"], config["sizes"], stage_fn, models.loss_fn,
                                    group=group, timeout=60, static_shapes=static)
        check_twin_order(program, twin.program, where)
        twin_opt = optimizer([p for _, m in twin.modules() for p in m.parameters()])
    evicts = sum(1 for r in program.ranks for op in r.ops if op.kind == "Evict")
    for step in range(steps):
        rows = 2 * units if static else units * (1 + step % 3)
        x, mask, target = models.batch(step, rows, dtype)
        loss = pipe.step(x, mask=mask, scale=0.5, target=target)
        if config.get("evicts"):
            moved = pipe.stats["evicted"]
            total = torch.tensor([moved["evicted"], moved["tensors"], moved["bytes"]],
                                 dtype=torch.int64)
            dist.all_reduce(total, group=group)
            if evicts == 0 or total[0].item() != evicts or total[2].item() <= 0:
                fail(f"{where}: step {step}: {total[0].item()} Evicts ran moving "
                     f"{total[1].item()} tensors ({total[2].item()} bytes); the program has "
                     f"{evicts} and each must move its saved tensors")
        if twin is not None:
            twin_loss = twin.step(x, mask=mask, scale=0.5, target=target)
            if (loss is None) != (twin_loss is None) or \
                    (loss is not None and not torch.equal(loss, twin_loss)):
                fail(f"{where}: step {step}: loss {loss} differs from the order without "
                     f"transfers' {twin_loss}")
            same_bits(pipe, twin, where, f"step {step}: gradient", lambda p: p.grad)
        ref_loss = models.reference_step(reference, x, mask, target, M, scale=0.5, whole=sized)
        if pipe.computes_loss:
            if loss is None:
                fail(f"{where}: step {step}: no loss on a loss rank")
            worst["loss"] = max(worst["loss"], abs(loss.item() - ref_loss.item())
                                / max(1.0, abs(ref_loss.item())))
        elif loss is not None:
            fail(f"{where}: step {step}: a loss on rank {pipe.rank}, which computes none")
        for stage, module in pipe.modules():
            for (name, p), q in zip(module.named_parameters(), reference[stage].parameters()):
                if p.grad is None:
                    fail(f"{where}: step {step}: stage {stage} {name} has no gradient")
                worst["grad"] = max(worst["grad"], max_diff(p.grad, q.grad))
        stats = pipe.stats
        if stats["measured_live"] != stats["predicted_live"]:
            fail(f"{where}: step {step}: measured live activations {stats['measured_live']} "
                 f"!= predicted {stats['predicted_live']}")
        if stats["measured_peak_activations"] != stats["predicted_peak_activations"]:
            fail(f"{where}: peak {stats['measured_peak_activations']} != "
                 f"{stats['predicted_peak_activations']}")
        if (step + 1) % accumulate:
            continue  # gradients accumulate into the next step
        opt.step()
        ref_opt.step()
        opt.zero_grad()
        ref_opt.zero_grad()
        if twin is not None:
            twin_opt.step()
            twin_opt.zero_grad()
            same_bits(pipe, twin, where, f"step {step}: parameter", lambda p: p.detach())
        for stage, module in pipe.modules():
            for p, q in zip(module.parameters(), reference[stage].parameters()):
                worst["param"] = max(worst["param"], max_diff(p, q))
        for key, value in worst.items():
            if not value <= tol:
                fail(f"{where}: step {step}: {key} differs from single-process PyTorch by "
                     "(relative to max(1, largest reference magnitude)) "
                     f"{value:.3g} > {tol:g}")
    if overlap is not None and pairs and overlap_test.SWITCHES - switches_before < pairs * steps:
        fail(f"{where}: {pairs} overlap pairs per step, but the halves switched only "
             f"{overlap_test.SWITCHES - switches_before} times in {steps} steps")
    if program.copies > 1:  # the copies, bit for bit
        mine = [(s, c, torch.cat([p.detach().reshape(-1) for p in m.parameters()]))
                for s, c, m in pipe.slots()]
        everyone = [None] * dist.get_world_size()
        dist.all_gather_object(everyone, mine)
        by_stage = {}
        for entries in everyone:
            for s, c, flat in entries:
                by_stage.setdefault(s, []).append(flat)
        for s, flats in by_stage.items():
            if len(flats) < 2 or not all(torch.equal(flats[0], f) for f in flats[1:]):
                fail(f"{where}: stage {s}'s {len(flats)} copies are not identical bit for bit")
    print(f"PASS {where} steps={steps} loss={worst['loss']:.2e} grad={worst['grad']:.2e} "
          f"param={worst['param']:.2e} peak={pipe.stats['measured_peak_activations']}"
          f"/{pipe.stats['predicted_peak_activations']}"
          + (f" interleavings={overlap_test.SWITCHES - switches_before}" if overlap else "")
          + (f" evicted={pipe.stats['evicted']['evicted']} twin=bit-identical" if twin else ""),
          flush=True)
    return worst


def main() -> None:
    torch.set_num_threads(1)
    dist.init_process_group("gloo", timeout=timedelta(seconds=60))
    for config in json.loads(sys.argv[1]):
        run_config(config)
        dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
