"""The errors the pipec package raises.

Every error a pipeline raises while it runs names the rank, and where it is
known the stage, the op and the micro-batch, so a failure in one process of a
distributed job can be found from that process's log alone.
"""


class PipecError(RuntimeError):
    """Base class of every error this package raises."""


class CompilerNotFound(PipecError):
    """No pipec compiler on $PIPEC or PATH."""


class ScheduleNotFound(PipecError):
    """A library name or .pipe path that does not exist."""


class ScheduleError(PipecError):
    """The compiler rejected the schedule for these sizes (its own diagnostics attached)."""


class PipelineError(PipecError):
    """A pipeline could not be set up or a step failed (rank, stage, op named)."""


class PipelineTimeout(PipelineError):
    """A receive, send or collective did not complete within the pipeline's timeout."""
