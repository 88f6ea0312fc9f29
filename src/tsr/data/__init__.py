"""Data layer: examples, tasks, streams, on-disk formats, collation and sampling."""

from .collate import Batch, Encoded, Encoder
from .example import Example, Stream, Task, TaskKind
from .hf import from_hf

__all__ = ["Batch", "Encoded", "Encoder", "Example", "Stream", "Task", "TaskKind", "from_hf"]
