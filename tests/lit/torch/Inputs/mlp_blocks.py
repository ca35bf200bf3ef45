# A small hidden-width model for the torch stage tests: per stage, two
# Linear-GELU-Linear blocks with residuals, on [batch, seq, hidden] tensors.
# Deterministic from `seed`; fp64 by default in the export.
import torch


class Block(torch.nn.Module):
    def __init__(self, hidden: int):
        super().__init__()
        self.fc1 = torch.nn.Linear(hidden, 2 * hidden)
        self.fc2 = torch.nn.Linear(2 * hidden, hidden)

    def forward(self, x):
        return x + self.fc2(torch.nn.functional.gelu(self.fc1(x)))


class Stage(torch.nn.Module):
    def __init__(self, hidden: int):
        super().__init__()
        self.blocks = torch.nn.Sequential(Block(hidden), Block(hidden))

    def forward(self, x):
        return self.blocks(x)


def stages(n=4, hidden=16, seq=8, seed=0):
    torch.manual_seed(seed)
    return [Stage(hidden) for _ in range(n)], torch.randn(2, seq, hidden)


# A stage that TorchScript cannot compile (a Python-only construct), for the error test.
class Unscriptable(torch.nn.Module):
    def forward(self, x):
        return x * len({str(v) for v in range(3)})  # set comprehensions are not TorchScript


def unscriptable(n=2):
    return [Stage(16), Unscriptable()][:n], torch.randn(2, 8, 16)
