# An MoE-style stage in the four parts the runtime overlaps (attention,
# dispatch, mlp, combine), each its own module; a part's tuple result is the
# next part's arguments. Dense soft routing over 2 experts keeps it small and
# exactly differentiable.
import torch


class Attention(torch.nn.Module):
    def __init__(self, hidden: int):
        super().__init__()
        self.mix = torch.nn.Linear(hidden, hidden)

    def forward(self, x):
        return x + torch.tanh(self.mix(x))


class Dispatch(torch.nn.Module):
    def __init__(self, hidden: int, experts: int):
        super().__init__()
        self.router = torch.nn.Linear(hidden, experts)

    def forward(self, h):
        return h, torch.softmax(self.router(h), dim=-1)


class Experts(torch.nn.Module):
    def __init__(self, hidden: int, experts: int):
        super().__init__()
        self.fc1 = torch.nn.ModuleList([torch.nn.Linear(hidden, 2 * hidden) for _ in range(experts)])
        self.fc2 = torch.nn.ModuleList([torch.nn.Linear(2 * hidden, hidden) for _ in range(experts)])

    def forward(self, h, gates):
        outs = []
        for fc1, fc2 in zip(self.fc1, self.fc2):
            outs.append(fc2(torch.nn.functional.gelu(fc1(h))))
        return h, gates, torch.stack(outs, dim=-2)


class Combine(torch.nn.Module):
    def forward(self, h, gates, outs):
        return h + (gates.unsqueeze(-1) * outs).sum(dim=-2)


def stages(n=4, hidden=16, seq=8, experts=2, seed=0):
    torch.manual_seed(seed)
    made = [{"attention": Attention(hidden), "dispatch": Dispatch(hidden, experts),
             "mlp": Experts(hidden, experts), "combine": Combine()} for _ in range(n)]
    return made, torch.randn(2, seq, hidden)
