"""pipec for PyTorch: train ordinary nn.Modules with any pipeline schedule the
pipec compiler proves (``pipec.torch.Pipeline``), over torch.distributed.

``import pipec`` is cheap; ``pipec.torch`` imports torch on first use.
"""

import importlib

__version__ = "0.1.0"


def __getattr__(name):
    if name in ("torch", "program", "compiler"):
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'pipec' has no attribute {name!r}")
