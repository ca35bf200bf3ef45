"""The PyTorch entry point: ``pipec.torch.Pipeline`` and the errors it raises.

Named after the framework it drives (the package's other modules import torch
with absolute imports, so this name shadows nothing).
"""

from .errors import (CompilerNotFound, PipecError, PipelineError, PipelineTimeout, ScheduleError,
                     ScheduleNotFound)
from .pipeline import Pipeline

__all__ = ["Pipeline", "PipecError", "PipelineError", "PipelineTimeout", "ScheduleError",
           "ScheduleNotFound", "CompilerNotFound"]
