"""The service layer: the ``Memory`` facade that every adapter calls, and nothing else."""

from troth.service.memory import Memory, WriteResult

__all__ = ["Memory", "WriteResult"]
