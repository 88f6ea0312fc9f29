"""Data layer: examples, tasks, streams, on-disk formats, collation and sampling."""

from .collate import Batch, Encoded, Encoder
from .example import Example, Stream, Task, TaskKind

__all__ = ["Batch", "Encoded", "Encoder", "Example", "Stream", "Task", "TaskKind"]
