"""Tasks from Hugging Face ``datasets``: a ``Dataset`` or ``DatasetDict`` whose rows have one of
the record shapes of :mod:`tsr.data.formats`.

:func:`from_hf` takes objects already in memory (no import of ``datasets`` is needed for it);
:func:`load_hf_task` loads a folder written by ``save_to_disk`` or a hub dataset, for the
stream file's ``format: hf``. Arrow fills a key that some rows lack with None, so a None value
counts as an absent key.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from ..errors import DataError
from .example import Example, Task, TaskKind, labelled
from .formats import examples_from_rows


def _rows(rows: Iterable[Any], source: str, split: str) -> tuple[list[Example], str | None]:
    if isinstance(rows, (str, bytes)) or not hasattr(rows, "__iter__"):
        raise DataError(f"{source}: split {split!r} must be a dataset of records, found {type(rows).__name__}")

    def present(row: Any) -> Any:
        return {k: v for k, v in row.items() if v is not None} if isinstance(row, Mapping) else row

    examples, shape = examples_from_rows((f"{source} [{split}] row {i}", f"row {i}", present(row))
                                         for i, row in enumerate(rows))
    if not examples:
        raise DataError(f"{source}: split {split!r} holds no examples")
    return examples, shape


def from_hf(data: Any, name: str, kind: str | TaskKind, *, test: Any = None, train_split: str = "train",
            test_split: str = "test", labels: Sequence[str] | None = None, source: str = "dataset") -> Task:
    """A task from Hugging Face ``datasets`` objects (or any iterables of record mappings).

    ``data`` is a ``DatasetDict`` (its ``train_split`` is the pool, its ``test_split`` the test
    set) or a ``Dataset`` (the pool) with ``test`` the test ``Dataset``. Each split's rows share
    one record shape. ``labels`` lists the valid answers of a classification task. ``source``
    names the data in errors (a row is ``<source> [<split>] row <i>``).
    """
    kind = TaskKind.parse(kind.value if isinstance(kind, TaskKind) else kind, f"{source} ({name})")
    if isinstance(data, Mapping):
        if test is not None:
            raise DataError(f"{source}: pass either a DatasetDict or a Dataset with test=..., not both")
        for split in (train_split, test_split):
            if split not in data:
                raise DataError(f"{source}: no split {split!r} (splits: {', '.join(map(str, data)) or 'none'})")
        pool_rows, test_rows = data[train_split], data[test_split]
    elif test is None:
        raise DataError(f"{source}: a single Dataset is the training pool; pass its test set as test=... "
                        "or a DatasetDict with both splits")
    else:
        pool_rows, test_rows, train_split, test_split = data, test, "train", "test"
    pool, pool_shape = _rows(pool_rows, source, train_split)
    tests, test_shape = _rows(test_rows, source, test_split)
    meta = {"format": "hf", "source": source, "shape": pool_shape, "test_shape": test_shape}
    task = Task(name, kind, tuple(pool), tuple(tests), meta=meta)
    return task if labels is None else labelled(task, labels, f"{source} ({name})")


def _datasets():
    try:
        import datasets
    except ImportError:
        raise DataError("format 'hf' needs the optional 'datasets' package (pip install datasets)") from None
    return datasets


def load_hf_task(name: str, kind: TaskKind, *, path: Path | None = None, hub: str | None = None,
                 config: str | None = None, train_split: str = "train", test_split: str = "test",
                 labels: Sequence[str] | None = None) -> Task:
    """A task from a dataset folder written by ``save_to_disk`` (``path``) or from the hub
    (``hub``, an id for ``datasets.load_dataset``, with its ``config``; needs network)."""
    datasets = _datasets()
    if (path is None) == (hub is None):
        raise DataError(f"task {name!r}: give either a dataset folder or a hub id")
    if path is not None:
        if not Path(path).is_dir():
            raise DataError(f"{path}: dataset folder not found")
        try:
            data = datasets.load_from_disk(str(path))
        except (FileNotFoundError, ValueError) as err:
            raise DataError(f"{path}: not a dataset folder written by save_to_disk ({err})") from None
        source = str(path)
    else:
        try:
            data = datasets.load_dataset(hub, config)
        except Exception as err:  # network, missing dataset or config: the library's own reasons
            why = str(err).splitlines()[0] if str(err) else type(err).__name__
            raise DataError(f"hub dataset {hub!r}: cannot load ({why})") from None
        source = f"hub:{hub}" + (f"/{config}" if config else "")
    if not isinstance(data, Mapping):
        raise DataError(f"{source}: a single dataset without splits; save a DatasetDict with "
                        f"{train_split!r} and {test_split!r} splits")
    return from_hf(data, name, kind, train_split=train_split, test_split=test_split, labels=labels, source=source)
