"""The split backward (python/pipec/splitbackward.py) in one process, against
a plain backward of the same module and inputs:

  - I's input gradients and W's parameter gradients equal the plain backward's
    (fp64, 1e-12), for an MLP, tied weights used twice (joins below one another),
    a tuple-output stage with a loss root (tests/python/models.py's last stage),
    and a parameter whose gradient bypasses the input path (the fallback);
  - which method ran: the captured groups, or the fallback where it must;
  - W does only weight work: on a 4-layer MLP it runs 4 matmuls and no GELU
    backward (a W that retraced from the outputs runs 7 and 3), counted with
    torch.profiler;
  - nothing autograd saved outlives W once the caller drops the record, measured
    with the executor's own ActivationTracker (no gc.collect: a graph freed only
    by the cycle collector would show here).

    test_split_backward.py   (the torch environment's Python)
"""

from __future__ import annotations

import collections
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
sys.path.insert(0, HERE)

import torch  # noqa: E402

import models  # noqa: E402
from pipec.activations import ActivationTracker  # noqa: E402
from pipec.splitbackward import input_half, weight_half  # noqa: E402

D = torch.float64
FAILURES = []


def check(ok: bool, what: str) -> None:
    print(("PASS " if ok else "FAIL ") + what, flush=True)
    if not ok:
        FAILURES.append(what)


def mlp(layers=4, width=8):
    torch.manual_seed(1)
    mods = []
    for i in range(layers):
        mods.append(torch.nn.Linear(width, width, dtype=D))
        if i + 1 < layers:
            mods.append(torch.nn.GELU())
    return torch.nn.Sequential(*mods)


class Tied(torch.nn.Module):
    """One Linear applied twice and a scale used on the path and off it (a sum)."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(2)
        self.lin = torch.nn.Linear(8, 8, dtype=D)
        self.scale = torch.nn.Parameter(torch.randn(8, dtype=D))

    def forward(self, x):
        return self.lin(torch.tanh(self.lin(x))) * self.scale + self.scale.sum()


class OffPath(torch.nn.Module):
    """A second output computed from a parameter alone: W must fall back."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(3)
        self.lin = torch.nn.Linear(8, 8, dtype=D)
        self.q = torch.nn.Parameter(torch.randn(8, dtype=D))

    def forward(self, x):
        return self.lin(x), self.q * 2


def last_stage():
    return models.Stage(1, 2)


def run_case(name, make, inputs_fn, loss_root: bool, expect: str) -> None:
    # Reference: the plain backward.
    values = inputs_fn()
    ref = make()
    ref_inputs = [t.clone().requires_grad_(t.is_floating_point()) for t in values]
    out = ref(*ref_inputs)
    outs = list(out) if isinstance(out, tuple) else [out]
    outs = [o for o in outs if o.requires_grad]
    torch.manual_seed(9)
    if loss_root:
        target = torch.randn_like(outs[0])
        roots, root_grads = [torch.nn.functional.mse_loss(outs[0], target) * 0.5], None
    else:
        root_grads = [torch.randn_like(o) for o in outs]
        roots = outs
    torch.autograd.backward(roots, root_grads)

    # The split, under the executor's activation tracker.
    mod = make()
    tracker = ActivationTracker()
    inputs = [t.clone().requires_grad_(t.is_floating_point()) for t in values]
    with tracker.saving((0, 0)):
        out = mod(*inputs)
        outs = list(out) if isinstance(out, tuple) else [out]
        outs = [o for o in outs if o.requires_grad]
        if loss_root:
            roots = [torch.nn.functional.mse_loss(outs[0], target) * 0.5]
        else:
            roots = outs
    del out, outs
    wanted = [t for t in inputs if t.requires_grad]
    params = [p for p in mod.parameters() if p.requires_grad]
    grads, state = input_half(roots, root_grads, wanted, params)
    method = "fallback" if state.roots is not None else "groups"
    check(method == expect, f"{name}: the {expect} method ran (got {method})")
    check(all(p.grad is None for p in params), f"{name}: I leaves parameter gradients alone")
    err = max((g - r.grad).abs().max().item() for g, r in
              zip(grads, [t for t in ref_inputs if t.requires_grad]))
    check(err < 1e-12, f"{name}: input gradients equal the plain backward's ({err:.1e})")
    weight_half(state, params)
    err = max((p.grad - q.grad).abs().max().item() for p, q in zip(params, ref.parameters()))
    check(err < 1e-12, f"{name}: parameter gradients equal the plain backward's ({err:.1e})")
    del state, roots, grads
    alive = tracker.live()  # no record held: counts the micro-batch iff a saved tensor lives
    check(alive == 0, f"{name}: no saved tensor outlives W ({alive} micro-batch(es) live)")


def weight_work() -> None:
    mod = mlp(4, 32)
    x = torch.randn(16, 32, dtype=D, requires_grad=True)
    out = mod(x)
    params = list(mod.parameters())
    _, state = input_half([out], [torch.ones_like(out)], [x], params)
    with torch.profiler.profile() as prof:
        weight_half(state, params)
    counts = collections.Counter(e.name for e in prof.events())
    mm, gelu = counts["aten::mm"], counts["aten::gelu_backward"]
    check(mm == 4 and gelu == 0,
          f"W on a 4-layer MLP: {mm} matmuls and {gelu} GELU backwards (want 4 and 0)")


def main() -> int:
    torch.manual_seed(0)
    x8 = lambda: [torch.randn(4, 8, dtype=D)]  # noqa: E731
    run_case("mlp", mlp, x8, loss_root=False, expect="groups")
    run_case("mlp, loss root", mlp, x8, loss_root=True, expect="groups")
    run_case("tied weights", Tied, x8, loss_root=False, expect="groups")
    run_case("off-path parameter", OffPath, x8, loss_root=False, expect="fallback")
    h, a = models.HIDDEN, models.AUX
    stage_inputs = lambda: [torch.randn(4, h, dtype=D), torch.randn(4, a, dtype=D),  # noqa: E731
                            torch.ones(4, dtype=torch.int64)]
    run_case("models.Stage last stage, loss root", last_stage, stage_inputs, loss_root=True,
             expect="groups")
    weight_work()
    print(f"split backward: {'FAILED ' + str(len(FAILURES)) if FAILURES else 'all passed'}")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
