"""The split backward: I (input gradients only, the graph kept) then W
(parameter gradients only, from where I left off).

I walks the stage's autograd graph once (Python, a few nodes per layer) to find,
for every parameter, the first nodes on the path from the outputs to the stage
inputs that its gradient flows through (the "joins": a Linear's AddmmBackward,
whose weight branch leaves the input path there).  Parameters whose branches
share a join form one group.  Pre-hooks on the joins capture the gradients that
reach them while ``torch.autograd.grad`` computes the inputs' gradients (the
graph kept).  W then runs ``torch.autograd.grad`` from those joins to the
parameters' accumulators with the captured gradients, so it computes only the
weight branches (each join's input-gradient output is not needed and autograd
skips it), and accumulates into ``.grad``.  This is the method of PyTorch's
``torch.distributed.pipelining._backward`` ("param groups"), reimplemented so
that nothing outlives W: the state holds the joins only until W, the hooks are
removed as soon as I is done, and W drops the state, so the graph (and every
tensor autograd saved for it, the input path's included) is freed when the
executor drops the micro-batch's record.  The activation measurement checks
this after every op.

When a parameter's gradient does not flow through the input path at all (stage
0, whose inputs need no gradient; a loss term on the parameters alone; an output
computed from parameters only), or when grouping fails to cover every parameter
(a wrapper whose parameters are not the graph's leaves), the stage falls back to
the plain split: W backpropagates from the outputs again, restricted to the
parameters, which costs about a whole backward but is always right.

An earlier attempt with PyTorch's own functions appeared to leave saved tensors
alive after W.  The cause was this package's activation measurement: its pack
hook held saved outputs together with their grad_fn, a reference cycle through
the graph that only a backward traversing a node could break, so nodes W does
not traverse (the input path's) were never freed.  activations.py now packs
detached tensors, and the graph is freed when it is dropped.
"""

from __future__ import annotations

import collections
from typing import Dict, List, Optional

import torch
from torch.autograd.graph import GradientEdge


def _node_of(t: torch.Tensor):
    """The node a gradient for `t` reaches: its grad_fn, or a leaf's accumulator."""
    if t.grad_fn is not None:
        return t.grad_fn
    if t.requires_grad:  # a leaf: its AccumulateGrad node, through a throwaway view
        return t.view_as(t).grad_fn.next_functions[0][0]
    return None


def _reverse_edges(roots) -> Dict[object, List[object]]:
    """node -> the nodes that feed gradients into it (its consumers in the forward)."""
    reverse: Dict[object, List[object]] = collections.defaultdict(list)
    seen = set(roots)
    queue = collections.deque(roots)
    while queue:
        node = queue.popleft()
        for nxt, _ in node.next_functions:
            if nxt is None:
                continue
            reverse[nxt].append(node)
            if nxt not in seen:
                seen.add(nxt)
                queue.append(nxt)
    return reverse


def _closure(starts, stop, reverse):
    """Nodes reachable upwards from `starts` without entering `stop`, and the
    `stop` nodes met on the way."""
    closure, met = set(), set()
    queue = collections.deque()
    for node in starts:
        if node is not None and node not in closure:
            closure.add(node)
            queue.append(node)
    while queue:
        for up in reverse.get(queue.popleft(), ()):
            if up in closure:
                continue
            if up in stop:
                met.add(up)
                continue
            closure.add(up)
            queue.append(up)
    return closure, met


class _Group:
    __slots__ = ("accumulators", "joins", "grads")

    def __init__(self, accumulator, joins):
        self.accumulators = [accumulator]
        self.joins = set(joins)
        self.grads = None


def _param_groups(root_nodes, input_nodes, param_nodes):
    """Groups of parameters by their joins with the input path, or None when
    some parameter's gradient does not reach the outputs through that path."""
    reverse = _reverse_edges(root_nodes)
    on_path, _ = _closure(input_nodes, set(), reverse)
    by_join: Dict[object, _Group] = {}
    groups: List[_Group] = []
    for acc in param_nodes:
        if acc not in reverse:  # not in this graph: unused (no gradient), as autograd leaves it
            continue
        branch, joins = _closure([acc], on_path, reverse)
        if not joins or any(node in root_nodes and node not in on_path for node in branch):
            return None  # reaches an output off the input path: fall back
        group = _Group(acc, joins)
        merged = {id(by_join[j]): by_join[j] for j in joins if j in by_join}
        for other in merged.values():
            group.accumulators += other.accumulators
            group.joins |= other.joins
            groups.remove(other)
        for j in group.joins:
            by_join[j] = group
        groups.append(group)
    return groups


class SplitState:
    """What I leaves for W: captured join gradients, or (fallback) the roots."""

    def __init__(self, groups=None, roots=None, root_grads=None, params=None):
        self.groups = groups
        self.roots = roots
        self.root_grads = root_grads
        self.params = params  # accumulator -> parameter, for the groups


def input_half(roots: List[torch.Tensor], root_grads: Optional[List[torch.Tensor]],
               inputs: List[torch.Tensor], params: List[torch.nn.Parameter]):
    """Returns (the inputs' gradients, the state for W)."""
    if not roots or not any(r.requires_grad for r in roots):
        return [], SplitState()
    if not inputs:  # nothing to send back: W does the whole backward, once
        return [], SplitState(roots=roots, root_grads=root_grads)
    root_nodes = [n for n in (_node_of(r) for r in roots) if n is not None]
    input_nodes = [n for n in (_node_of(t) for t in inputs) if n is not None]
    by_acc = {}
    for p in params:
        acc = _node_of(p)
        if acc is not None:
            by_acc[acc] = p
    groups = _param_groups(root_nodes, input_nodes, list(by_acc))
    if groups is None:
        grads = torch.autograd.grad(roots, inputs, root_grads, retain_graph=True,
                                    allow_unused=True)
        return list(grads), SplitState(roots=roots, root_grads=root_grads)
    handles = []
    try:
        for group in groups:
            group.joins = list(group.joins)
            group.grads = [None] * len(group.joins)
            for i, join in enumerate(group.joins):
                def capture(grad_outputs, group=group, i=i):
                    group.grads[i] = grad_outputs
                handles.append(join.register_prehook(capture))
        grads = torch.autograd.grad(roots, inputs, root_grads, retain_graph=True,
                                    allow_unused=True)
    finally:
        for handle in handles:
            handle.remove()
    return list(grads), SplitState(groups=groups, params=by_acc)


def weight_half(state: SplitState, params: List[torch.nn.Parameter]) -> None:
    """Accumulates the parameters' gradients; the caller then drops the graph."""
    if state.roots is not None:
        if params and any(r.requires_grad for r in state.roots):
            torch.autograd.backward(state.roots, state.root_grads, inputs=params)
        state.roots = state.root_grads = None
        return
    groups, by_acc = state.groups or [], state.params
    state.groups = state.params = None
    for n, group in enumerate(groups):
        edges, grads = [], []
        for join, captured in zip(group.joins, group.grads):
            for i, g in enumerate(captured or ()):
                if g is not None:
                    edges.append(GradientEdge(join, i))
                    grads.append(g)
        if not edges:
            continue
        handles = []
        try:
            if len(group.joins) > 1:
                # A join below another receives, during this pass, what flows from the
                # upper one again; pin it to what I captured so nothing counts twice.
                for join, captured in zip(group.joins, group.grads):
                    handles.append(join.register_prehook(lambda _, c=captured: c))
            dweights = torch.autograd.grad(
                edges, [GradientEdge(acc, 0) for acc in group.accumulators], grads,
                retain_graph=n + 1 < len(groups), allow_unused=True)
        finally:
            for handle in handles:
                handle.remove()
        for acc, dw in zip(group.accumulators, dweights):
            if dw is None:
                continue
            p = by_acc[acc]
            if p.grad is None:
                p.grad = dw
            else:
                p.grad += dw
        group.joins = group.grads = group.accumulators = None
