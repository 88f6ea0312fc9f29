"""Where a stream comes from: a stream YAML file or a named benchmark.

``stream.source`` in the run config is either a path to a stream file (see
:mod:`tsr.data.stream_spec`) or the name of a benchmark below. Benchmarks read from disk
take ``stream.root``; every benchmark checks its own ``stream.options``.

Benchmarks from outside the package join through :func:`register_benchmark` (from Python) or
the ``tsr.benchmarks`` entry points of installed packages (:mod:`tsr.extensions`): either a
:class:`Stream` or a builder ``build(root, options) -> Stream`` like the ones below.
"""

from __future__ import annotations

from pathlib import Path
from types import MappingProxyType
from typing import Any, Callable, Mapping

from ..errors import ConfigError
from ..extensions import Extensions
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


def _check_benchmark(name: str, value: Any, where: str) -> Any:
    if name.endswith((".yaml", ".yml")):
        raise ConfigError(f"{where}: benchmark name {name!r} ends like a stream file; choose another name")
    if isinstance(value, Stream) or (callable(value) and not isinstance(value, type)):
        return value
    raise ConfigError(f"{where}: a benchmark is a Stream or a function build(root, options) -> Stream, "
                      f"found {type(value).__name__}")


ENTRIES = Extensions("benchmark", "tsr.benchmarks", BENCHMARKS, _check_benchmark)


def register_benchmark(name: str, source: Stream | Callable[[Path | None, dict[str, Any]], Stream]) -> None:
    """Make ``source`` usable as ``stream.source=<name>``: a :class:`Stream`, or a function
    ``build(root, options) -> Stream`` called with ``stream.root`` (a Path or None) and
    ``stream.options`` (a dict it should check). A name already taken is a ConfigError;
    registering the same source again changes nothing."""
    origin = (f"stream {source.name!r}" if isinstance(source, Stream)
              else f"{getattr(source, '__module__', '?')}.{getattr(source, '__qualname__', repr(source))}")
    ENTRIES.register(name, source, f"register_benchmark({name!r}) of {origin}")


def unregister_benchmark(name: str) -> None:
    """Forget a registered benchmark (built-in ones stay)."""
    ENTRIES.unregister(name)


def benchmark_names() -> list[str]:
    """The built-in benchmarks and those registered so far."""
    return sorted(BENCHMARKS) + sorted(ENTRIES.registered())


def build_benchmark(name: str, source: Any, root: str | None, options: dict[str, Any]) -> Stream:
    if isinstance(source, Stream):
        if options:
            raise ConfigError(f"config key 'stream.options': benchmark {name!r} is a fixed stream and takes no "
                              f"options (got {', '.join(options)})")
        return source
    stream = source(Path(root).expanduser() if root else None, options)
    if not isinstance(stream, Stream):
        raise ConfigError(f"config key 'stream.source': benchmark {name!r} "
                          f"({ENTRIES.registered().get(name, 'built in')}) returned a "
                          f"{type(stream).__name__}, not a Stream")
    return stream


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
    elif (builder := ENTRIES.get(source)) is not None:
        stream = build_benchmark(source, builder, root, options)
    else:
        valid = ", ".join(benchmark_names()) or "none registered"
        raise ConfigError(f"config key 'stream.source': {source!r} is neither a stream file nor a "
                          f"known benchmark (benchmarks: {valid})")
    return apply_order(stream, order, seed)
