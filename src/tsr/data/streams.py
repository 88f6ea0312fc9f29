"""Where a stream comes from: a stream YAML file or a named benchmark.

``stream.source`` in the run config is either a path to a stream file (see
:mod:`tsr.data.stream_spec`) or the name of a benchmark below. Benchmarks read from disk
take ``stream.root``; every benchmark checks its own ``stream.options``.
"""

from __future__ import annotations

from pathlib import Path
from types import MappingProxyType
from typing import Any, Callable, Mapping

from ..errors import ConfigError
from .benchmarks.numglue import build_numglue8
from .benchmarks.pp15 import build_pp15
from .benchmarks.superni import build_superni
from .benchmarks.trace import build_trace8
from .benchmarks.trace_hub import build_trace8_hub
from .example import Stream
from .orders import apply_order
from .stream_spec import load_stream_file
from .synth.streams import synth_custom, synth_numglue, synth_trace

# name -> build(root: Path | None, options: dict) -> Stream
BENCHMARKS: Mapping[str, Callable[[Path | None, dict[str, Any]], Stream]] = MappingProxyType({
    "synth-trace": synth_trace,
    "synth-numglue": synth_numglue,
    "synth": synth_custom,
    "trace8": build_trace8,
    "trace8_hub": build_trace8_hub,
    "numglue8": build_numglue8,
    "pp15": build_pp15,
    "superni": build_superni,
})


def benchmark_names() -> list[str]:
    return sorted(BENCHMARKS)


def is_stream_file(source: str) -> bool:
    return source.endswith((".yaml", ".yml")) or Path(source).is_file()


def load_stream(source: str, root: str | None = None, options: dict[str, Any] | None = None,
                order: str | list[str] = "canonical", seed: int = 0) -> Stream:
    """The stream named by ``source``, in the requested order."""
    options = dict(options or {})
    if is_stream_file(source):
        if options:
            raise ConfigError("config key 'stream.options': a stream file takes no options "
                              f"(got {', '.join(options)})")
        stream, file_order = load_stream_file(Path(source).expanduser())
        if order == "canonical" and file_order is not None:
            order = file_order
    elif source in BENCHMARKS:
        stream = BENCHMARKS[source](Path(root).expanduser() if root else None, options)
    else:
        valid = ", ".join(benchmark_names()) or "none registered"
        raise ConfigError(f"config key 'stream.source': {source!r} is neither a stream file nor a "
                          f"known benchmark (benchmarks: {valid})")
    return apply_order(stream, order, seed)
