"""One rank of test_bpipe.py's four-process runs of examples/bpipe.pipe at P = 4,
M = 8 (rank 0 evicts micro-batches 2..7 to rank 3), next to a twin pipeline
running the same order without the transfers (run_suite.without_transfers).

    worker_bpipe.py MODE

The stages (ZeroStage) also save 80 zero-size tensors, so those travel too, and
their description is too long for the header (a message of its own; the memory
suite's stages fit it in the header).
MODE:
  plain          gradients and parameters after 2 SGD steps equal the twin's
                 bit for bit; rank 0's Evicts moved tensors, zero-size ones
                 among them; every rank prints RESULT SAME.
  swap-identity  rank 3's Returns from the second on send the micro-batch the
                 Return before sent (with its identity): rank 0's Load of
                 micro-batch 3 must refuse micro-batch 2's, naming both; prints
                 RESULT REFUSED <error>.
  swap-tensors   the same tensors under the right identity (undetectable on the
                 wire): the gradients must then differ from the twin's (the
                 suite's bit-for-bit check catches it); rank 0 prints RESULT DIFFERS.
"""

from __future__ import annotations

import os
import sys
from datetime import timedelta

import torch
import torch.distributed as dist

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import models  # noqa: E402
import run_suite  # noqa: E402
import pipec.torch  # noqa: E402
from pipec.errors import PipelineError  # noqa: E402

SIZES = {"P": 4, "M": 8}
BPIPE = os.path.join(HERE, "..", "..", "examples", "bpipe.pipe")


class ZeroStage(models.Stage):
    """models.Stage plus a product of zero-size views that autograd saves (a sum of
    no elements: 0, so the values are the plain stage's)."""

    def forward(self, x, z=None, mask=None, **kw):
        out = super().forward(x, z, mask, **kw)
        y = out[0] if isinstance(out, tuple) else out
        e = torch.sigmoid(y)[:, :0]  # y depends on the parameters: mul saves both views
        # 40 products: 80+ saved tensors, so the description does not fit the
        # header and travels as a message of its own (saved_wire.py)
        extra = sum((e * e).sum() for _ in range(40))
        if isinstance(out, tuple):
            return (out[0] + extra,) + tuple(out[1:])
        return out + extra


def patch_return(transport, mode: str) -> None:
    """Rank 3's Returns go wrong from the second on, as a bookkeeping bug would
    make them: each sends what the Return before it sent."""
    send = transport.send_saved
    last = {}

    def wrong(mid, tensors, ident, sending_op):
        if transport.program.messages[mid].kind != "returned":
            return send(mid, tensors, ident, sending_op)
        previous = last.get("previous")
        last["previous"] = (ident, tensors)
        if previous is None:
            return send(mid, tensors, ident, sending_op)
        if mode == "swap-identity":  # another micro-batch, honestly labelled
            return send(mid, previous[1], previous[0], sending_op)
        return send(mid, previous[1], ident, sending_op)  # another's tensors, this label

    transport.send_saved = wrong


def main() -> int:
    mode = sys.argv[1]
    torch.set_num_threads(1)
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    rank = dist.get_rank()
    stage_fn = lambda s: ZeroStage(s, 4)  # noqa: E731
    timeout = 60 if mode != "swap-identity" else 8
    pipe = pipec.torch.Pipeline("bpipe", SIZES, stage_fn, models.loss_fn, timeout=timeout)
    if mode != "plain" and rank == 3:
        patch_return(pipe._transport, mode)
    twin = pipec.torch.Pipeline(run_suite.without_transfers(BPIPE), SIZES, stage_fn,
                                models.loss_fn, timeout=timeout)
    opts = [torch.optim.SGD([p for _, m in pp.modules() for p in m.parameters()], lr=0.1)
            for pp in (pipe, twin)]
    same = True
    for step in range(2):
        x, mask, target = models.batch(step, 16)
        try:
            pipe.step(x, mask=mask, scale=0.5, target=target)
        except PipelineError as error:
            print(f"RESULT REFUSED {error}", flush=True)
            os._exit(0)  # the peers fail or time out on their own; no clean shutdown
        twin.step(x, mask=mask, scale=0.5, target=target)
        moved = pipe.stats["evicted"]
        if rank == 0 and (moved["evicted"] != 6 or moved["tensors"] == 0 or moved["empty"] == 0):
            print(f"RESULT BAD rank 0 evicted {moved}", flush=True)
            return 1
        if rank == 0 and step == 0:
            print(f"MEASURED rank 0 evicted {moved}", flush=True)
        for (_, m), (_, n) in zip(pipe.modules(), twin.modules()):
            same &= all(torch.equal(p.grad, q.grad) for p, q in zip(m.parameters(), n.parameters()))
        for opt in opts:
            opt.step()
            opt.zero_grad()
        for (_, m), (_, n) in zip(pipe.modules(), twin.modules()):
            same &= all(torch.equal(p, q) for p, q in zip(m.parameters(), n.parameters()))
        if pipe.stats["measured_live"] != pipe.stats["predicted_live"]:
            print(f"RESULT BAD live {pipe.stats['measured_live']} != "
                  f"{pipe.stats['predicted_live']}", flush=True)
            return 1
    print(f"RESULT {'SAME' if same else 'DIFFERS'}", flush=True)
    dist.barrier()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
