"""The split backward: I (input gradients only, the graph kept) then W
(parameter gradients).

I is ``torch.autograd.grad`` with respect to the stage inputs with
``retain_graph=True``; W runs ``torch.autograd.backward`` from the stage
outputs (or the loss) again, restricted to the parameters, and frees the
graph.  The W pass therefore traverses the graph from the outputs once more:
the weight half costs about a whole backward.  A stage whose inputs need no
gradient (stage 0) does no I work: its W runs the whole backward, once.

Not used, and why: PyTorch's own split (torch.distributed.pipelining's private
stage_backward_input / stage_backward_weight) captures the gradients where the
parameters' branches join the input path during I, so that W does only weight
work.  With torch 2.15, after its W the tensors autograd saved for the stage
inputs stayed alive (found by this package's activation measurement, which
then counts the micro-batch as live past its W), so its memory would not
match the compiler's prediction.
"""

from __future__ import annotations

from typing import List, Optional

import torch


class SplitState:
    """What I leaves for W: the roots of the stage's graph and their gradients."""

    def __init__(self, roots, root_grads):
        self.roots = roots
        self.root_grads = root_grads


def input_half(roots: List[torch.Tensor], root_grads: Optional[List[torch.Tensor]],
               inputs: List[torch.Tensor]):
    """Returns (the inputs' gradients, the state for W)."""
    if not inputs or not roots or not any(r.requires_grad for r in roots):
        return [], SplitState(roots, root_grads)
    grads = torch.autograd.grad(roots, inputs, root_grads, retain_graph=True, allow_unused=True)
    return list(grads), SplitState(roots, root_grads)


def weight_half(state: SplitState, params: List[torch.nn.Parameter]) -> None:
    """Accumulates the parameters' gradients and frees the graph."""
    roots = state.roots
    if params and roots and any(r.requires_grad for r in roots):
        torch.autograd.backward(roots, state.root_grads, inputs=params)
