"""Signature files: every task's signature taken once, saved, and used later to route a run.

A signature file holds one signature kind (``gradb``, ``jointot``, ...) of every task of a
stream at the shared initialisation of one or more seeds, with what they were taken under:
the model, the budget N and the number of probe batches m. TSR can route on it
(``method.signatures=FILE``) instead of taking signatures itself. Taken on the run's own
model, at the run's seed, budget and m, the file's signatures are the ones TSR would take, so
the run is the same run (a test pins this). Taken on *another* model, they let a small proxy
model route a large one (the reference paper reports 7 of 8 routing choices stable across
scale); that must be asked for (``method.signatures_proxy=true``), because a file of another
model used by mistake would route silently on the wrong signatures.

On disk: one safetensors file; tensors are named ``s<seed>/<task>/<part>`` (the parts of
:func:`tsr.cl.sig_pack.pack`), and the metadata key ``tsr`` holds the header as JSON.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from safetensors import SafetensorError
from safetensors.torch import load_file, safe_open

from ..atomic import write_tensors
from ..errors import ConfigError
from .sig_pack import pack, unpack

FORMAT = "tsr-signatures/1"


def model_identity(path: str) -> str:
    """How a file names its model: a local folder by its absolute path, anything else (a hub id,
    ``bundled``) as written."""
    local = Path(path).expanduser()
    return str(local.resolve()) if local.exists() else path


@dataclass(frozen=True)
class SignatureFile:
    path: Path
    kind: str
    model: str
    stream: str
    budget: int
    probe_batches: int
    seeds: tuple[int, ...]
    tasks: tuple[str, ...]

    def get(self, seed: int, task: str) -> Any:
        prefix = f"s{seed}/{task}/"
        tensors = {k[len(prefix):]: v for k, v in load_file(str(self.path)).items() if k.startswith(prefix)}
        return unpack(tensors)

    def check(self, *, kind: str, model: str, proxy: bool, seed: int, budget: int, probe_batches: int,
              tasks: list[str], key: str = "method.signatures") -> None:
        """One :class:`ConfigError` line for the first way this file does not fit a run."""
        where = f"config key '{key}': {self.path}"
        if self.kind != kind:
            raise ConfigError(f"{where} holds {self.kind} signatures; the run routes on {kind} (method.probe)")
        if self.model != model_identity(model) and not proxy:
            raise ConfigError(f"{where} holds signatures of another model ({self.model}, not {model_identity(model)}); "
                              "set method.signatures_proxy=true to route with a proxy model's signatures")
        if seed not in self.seeds:
            raise ConfigError(f"{where} has no signatures at seed {seed} (seeds: {', '.join(map(str, self.seeds))})")
        if (self.budget, self.probe_batches) != (budget, probe_batches):
            raise ConfigError(f"{where} was taken at stream.budget={self.budget} with {self.probe_batches} probe "
                              f"batches; the run has {budget} and {probe_batches}")
        missing = [t for t in tasks if t not in self.tasks]
        if missing:
            raise ConfigError(f"{where} has no signature of task {missing[0]!r} (tasks: {', '.join(self.tasks)})")


def write_signature_file(path: Path, *, kind: str, model: str, stream: str, budget: int, probe_batches: int,
                         signatures: dict[int, dict[str, Any]]) -> SignatureFile:
    """Save ``signatures[seed][task]`` (atomically) and return the file's header."""
    tasks = tuple(next(iter(signatures.values())))
    tensors = {f"s{seed}/{task}/{part}": value for seed, by_task in signatures.items()
               for task, sig in by_task.items() for part, value in pack(sig).items()}
    header = {"format": FORMAT, "kind": kind, "model": model_identity(model), "stream": stream, "budget": budget,
              "probe_batches": probe_batches, "seeds": sorted(signatures), "tasks": list(tasks)}
    write_tensors(Path(path), tensors, metadata={"tsr": json.dumps(header)})
    return read_signature_file(path)


def read_signature_file(path: str | Path) -> SignatureFile:
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: no such signature file")
    try:
        with safe_open(str(path), framework="pt") as f:
            meta = (f.metadata() or {}).get("tsr")
        header = json.loads(meta) if meta else None
    except (OSError, SafetensorError, ValueError) as err:
        raise ConfigError(f"{path}: not a readable signature file ({err})") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise ConfigError(f"{path}: not a tsr signature file (write one with `tsr signatures`)")
    return SignatureFile(path, header["kind"], header["model"], header["stream"], int(header["budget"]),
                         int(header["probe_batches"]), tuple(header["seeds"]), tuple(header["tasks"]))
