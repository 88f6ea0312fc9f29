"""``tsr signatures`` as data: its params and the object that takes every task's signature once
and saves it, for TSR to route on later (``method.signatures=FILE``), on this model or, as a
proxy, on another one (docs/signatures.md). Each signature is taken as TSR takes it in a run of
the same config: at the shared initialisation of the seed, on ``method.probe_batches`` batches
of its budget, in stream order (:func:`tsr.experiments.signatures.run.stream_signatures`)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import ConfigError
from ...schema import require
from ..audit import Audit, Report, Session, param

EXAMPLES = """examples:
  tsr signatures out=sig-gradb.safetensors seeds=0,1,2                      # TSR's gradb, default stream
  tsr signatures model.path=Qwen/Qwen2.5-0.5B stream.source=trace8 out=small.safetensors
  tsr run model.path=Qwen/Qwen2.5-7B stream.source=trace8 method.signatures=small.safetensors method.signatures_proxy=true
  tsr signatures signature=jointot out=sig-jointot.safetensors             # then method.probe=jointot
Each task's signature is taken as TSR takes it in a run of the same config: at the shared
initialisation of the seed, on method.probe_batches batches of its budget, in stream order."""


@dataclass(frozen=True)
class Params:
    out: str = param("the signature file to write (.safetensors)", "")
    signature: str | None = param("which signature (default: the config's method.probe, else TSR's "
                                  "%(fallback)s)", shows="tsr.methods.tsr:TSRParams.probe")
    seeds: tuple[int, ...] | None = param("the seeds whose shared initialisations take them (default: the config's seed)")

    def check(self, path: str) -> None:
        require(bool(self.out), f"{path}out", "name the signature file to write (out=FILE, or --out FILE)")


@dataclass(frozen=True)
class Planned:
    out: Path
    cfg: Any
    stream: Any
    kind: str
    seeds: list[int]
    count: int


class SignaturesAudit(Audit):
    name = "signatures"
    summary = ("Take every task's signature once and save it, for TSR to route on (method.signatures=FILE), "
               "also from a proxy model.")
    examples = EXAMPLES
    Params = Params

    def plan(self, params: Params, session: Session) -> Planned:
        from ...cl.signatures import signature_names
        from ...config import load_config
        from ...methods.tsr import TSRParams
        from ...runs.folders import refuse_own_file
        from ..probe.plan import load_probe_stream

        out = Path(params.out)
        refuse_own_file(out)  # out=RUN/checkpoint/adapter.safetensors would replace the run's adapter
        cfg = load_config(session.config, list(session.overrides))
        method = cfg.method.params  # a method without them (not TSR): TSR's signature and probe batches
        kinds = signature_names(params.signature or getattr(method, "probe", TSRParams.probe), "--signature")
        if len(kinds) != 1:
            raise ConfigError(f"--signature: one signature per file, not {len(kinds)} ({', '.join(kinds)}); "
                              "run tsr signatures once per signature")
        count = getattr(method, "probe_batches", TSRParams.probe_batches)
        return Planned(out, cfg, load_probe_stream(cfg), kinds[0], list(params.seeds or [cfg.seed]), count)

    def run(self, plan: Planned, session: Session) -> tuple[Any, float]:
        from ...cl.signature_file import write_signature_file
        from ...model.learner import build_learner
        from .run import stream_signatures

        cfg, stream = plan.cfg, plan.stream
        learner = build_learner(cfg)
        session.reporter.say(f"{plan.kind} signatures of {len(stream.names)} tasks of {stream.name}, seeds "
                             f"{plan.seeds}, {plan.count} probe batches at N={cfg.stream.budget} -> {plan.out}")
        started = time.perf_counter()
        signatures = stream_signatures(learner, cfg, stream, plan.kind, plan.seeds, plan.count)
        saved = write_signature_file(plan.out, kind=plan.kind, model=cfg.model.path, stream=stream.name,
                                     budget=cfg.stream.budget, probe_batches=plan.count, signatures=signatures)
        return saved, time.perf_counter() - started

    def report(self, plan: Planned, found: tuple[Any, float], session: Session) -> Report:
        saved, seconds = found
        return Report(saved.path, f"{len(saved.tasks)} tasks x {len(saved.seeds)} seeds ({saved.model}) "
                      f"in {seconds:.1f} s")


AUDIT = SignaturesAudit()
