"""A small GPT (nanoGPT-like) and its MoE variant, written as pipeline stages.

  stage 0:      token ids (B, T) -> token + position embeddings -> its blocks
                -> hidden (B, T, n_embd)
  middle:       hidden -> its blocks -> hidden
  last stage:   hidden -> its blocks -> final LayerNorm -> LM head -> logits
                (B, T, vocab)
A pipelined program passes (tokens x width) matrices between ranks, rows whole
sequences of T = config.seq tokens; the exporter (runtime/torch/
pipec_torch_export.py) reshapes them to these shapes and back. A model of
n_layer blocks is split into any number of stages that divides it; the whole
model is the stages applied in order, so one set of weights serves a 4-stage
DualPipe program, an 8-stage DualPipeV program and the single-process
reference.

The MoE variant replaces each block's MLP by `n_expert` expert MLPs and a
router that sends each token to its top-k experts (softmax gate renormalised
over the chosen k). Experts are evaluated densely and weighted by the gate, zero
for unchosen experts: the same result as dispatching tokens, with shapes that do
not depend on the routing, which keeps the stage exportable.
"""
import math
from dataclasses import dataclass, asdict

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class GPTConfig:
    vocab: int = 256      # byte-level tokenizer
    seq: int = 32         # tokens per sequence (the program's --seq)
    n_layer: int = 8
    n_head: int = 4
    n_embd: int = 64
    moe: bool = False
    n_expert: int = 4
    top_k: int = 2
    seed: int = 1234      # initial weights

    def to_dict(self):
        return asdict(self)


class CausalSelfAttention(nn.Module):
    def __init__(self, c: GPTConfig):
        super().__init__()
        assert c.n_embd % c.n_head == 0
        self.n_head = c.n_head
        self.qkv = nn.Linear(c.n_embd, 3 * c.n_embd)
        self.proj = nn.Linear(c.n_embd, c.n_embd)
        self.register_buffer("mask", torch.ones(c.seq, c.seq).tril() == 0, persistent=False)

    def forward(self, x):  # (B, T, C)
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.mask[:T, :T], float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.proj(y)


class Mlp(nn.Module):
    def __init__(self, c: GPTConfig):
        super().__init__()
        self.fc = nn.Linear(c.n_embd, 4 * c.n_embd)
        self.proj = nn.Linear(4 * c.n_embd, c.n_embd)

    def forward(self, x):
        return self.proj(F.gelu(self.fc(x)))


class MoeMlp(nn.Module):
    """Top-k routed experts, evaluated densely (see the module's docstring)."""

    def __init__(self, c: GPTConfig):
        super().__init__()
        self.top_k = c.top_k
        self.router = nn.Linear(c.n_embd, c.n_expert, bias=False)
        self.experts = nn.ModuleList([Mlp(c) for _ in range(c.n_expert)])

    def forward(self, x):
        probs = self.router(x).softmax(dim=-1)
        weights, chosen = probs.topk(self.top_k, dim=-1)
        weights = weights / weights.sum(dim=-1, keepdim=True)
        gate = torch.zeros_like(probs).scatter(-1, chosen, weights)
        out = torch.zeros_like(x)
        for e, expert in enumerate(self.experts):
            out = out + gate[..., e:e + 1] * expert(x)
        return out


class Block(nn.Module):
    def __init__(self, c: GPTConfig):
        super().__init__()
        self.ln_1 = nn.LayerNorm(c.n_embd)
        self.attn = CausalSelfAttention(c)
        self.ln_2 = nn.LayerNorm(c.n_embd)
        self.mlp = MoeMlp(c) if c.moe else Mlp(c)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class Embed(nn.Module):
    """Stage 0's entry: token ids (B, T) -> token + position embeddings (B, T, C)."""

    def __init__(self, c: GPTConfig):
        super().__init__()
        self.wte = nn.Embedding(c.vocab, c.n_embd)
        self.wpe = nn.Embedding(c.seq, c.n_embd)

    def forward(self, ids):
        return self.wte(ids) + self.wpe(torch.arange(ids.size(1), device=ids.device))


class Head(nn.Module):
    """The last stage's exit: final LayerNorm and LM head -> logits (B, T, vocab)."""

    def __init__(self, c: GPTConfig):
        super().__init__()
        self.ln_f = nn.LayerNorm(c.n_embd)
        self.head = nn.Linear(c.n_embd, c.vocab, bias=False)

    def forward(self, h):
        return self.head(self.ln_f(h))


class GPTStage(nn.Module):
    """Blocks [first, first + count) of the model, with the embeddings when
    first == 0 and the final norm and head when the last block is the model's."""

    def __init__(self, c: GPTConfig, first: int, count: int):
        super().__init__()
        self.enter = Embed(c) if first == 0 else nn.Identity()
        self.blocks = nn.Sequential(*[Block(c) for _ in range(count)])
        self.leave = Head(c) if first + count == c.n_layer else nn.Identity()

    def forward(self, x):
        return self.leave(self.blocks(self.enter(x)))


def _init_weights(model: nn.Module, c: GPTConfig):
    """nanoGPT's initialisation: N(0, 0.02), residual projections scaled by
    1/sqrt(2 n_layer), zero biases, LayerNorm at (1, 0)."""
    for name, p in model.named_parameters():
        if name.endswith("bias"):
            nn.init.zeros_(p)
        elif ".ln_" in name:
            nn.init.ones_(p)
        elif name.endswith("proj.weight"):
            nn.init.normal_(p, 0.0, 0.02 / math.sqrt(2 * c.n_layer))
        else:
            nn.init.normal_(p, 0.0, 0.02)


def make_stages(c: GPTConfig, num_stages: int, dtype=torch.float64):
    """The model split into `num_stages` stages of n_layer / num_stages blocks.
    Weights are drawn once, in fp64, from c.seed for the whole (one-stage) model
    and copied into the stages, then rounded to `dtype`: a 4-stage and an
    8-stage split are the same model, and fp32 weights are the fp64 weights
    rounded. The global random state is left as it was."""
    if num_stages < 1 or c.n_layer % num_stages != 0:
        raise ValueError(f"{c.n_layer} blocks do not split into {num_stages} equal stages")
    per = c.n_layer // num_stages
    saved = torch.random.get_rng_state()
    torch.manual_seed(c.seed)
    whole = GPTStage(c, 0, c.n_layer).to(torch.float64)
    _init_weights(whole, c)
    torch.random.set_rng_state(saved)
    drawn = dict(whole.named_parameters())
    stages = [GPTStage(c, s * per, per).to(torch.float64) for s in range(num_stages)]
    with torch.no_grad():
        for s, stage in enumerate(stages):
            for name, p in stage.named_parameters():
                p.copy_(drawn[_global_name(name, s * per)])
    return [stage.to(dtype) for stage in stages]


def _global_name(name: str, first: int) -> str:
    """A stage's parameter name in the one-stage layout (block indices shifted)."""
    if name.startswith("blocks."):
        _, index, rest = name.split(".", 2)
        return f"blocks.{int(index) + first}.{rest}"
    return name


def add_config_arguments(parser):
    """Command-line flags for every GPTConfig field (export.py)."""
    for name, value in GPTConfig().to_dict().items():
        if isinstance(value, bool):
            parser.add_argument(f"--{name.replace('_', '-')}", dest=name, action="store_true",
                                default=value)
        else:
            parser.add_argument(f"--{name.replace('_', '-')}", dest=name, type=type(value), default=value)


def config_from_arguments(args):
    return GPTConfig(**{name: getattr(args, name) for name in GPTConfig().to_dict()})


def lm_loss(logits, targets):
    """The runtime's --loss cross-entropy for one micro-batch: the mean over its
    tokens, computed in fp64 from the stage's logits (so fp32 runs round the
    gradient once, as the runtime does)."""
    return F.cross_entropy(logits.reshape(-1, logits.size(-1)).to(torch.float64), targets.reshape(-1).long())
