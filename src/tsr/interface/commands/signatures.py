"""`tsr signatures`: take every task's signature once and save it, for TSR to route on later
(``method.signatures=FILE``), on this model or, as a proxy, on another one (docs/signatures.md)."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from rich.console import Console

from ...errors import ConfigError
from ..args import Default, add, add_items, csv_list, option, split_items

EXAMPLES = """examples:
  tsr signatures --out sig-gradb.safetensors --seeds 0,1,2                    # TSR's gradb, default stream
  tsr signatures model.path=Qwen/Qwen2.5-0.5B stream.source=trace8 --out small.safetensors
  tsr run model.path=Qwen/Qwen2.5-7B stream.source=trace8 method.signatures=small.safetensors method.signatures_proxy=true
  tsr signatures --signature jointot --out sig-jointot.safetensors            # then method.probe=jointot
Each task's signature is taken as TSR takes it in a run of the same config: at the shared
initialisation of the seed, on method.probe_batches batches of its budget, in stream order."""

# for a method without them (the config's method is not TSR): TSR's signature and probe batches
PROBE = Default("tsr.methods.tsr:TSRParams.probe")
PROBE_BATCHES = Default("tsr.methods.tsr:TSRParams.probe_batches")


def cmd_signatures(args: argparse.Namespace, console: Console) -> int:
    from ...cl.signature_file import write_signature_file
    from ...cl.signatures import signature_names, take
    from ...config import load_config
    from ...runs.folders import refuse_own_file
    from ...experiments.probe.plan import load_probe_stream
    from ...experiments.signatures.run import probe_batches
    from ...model.learner import build_learner

    refuse_own_file(Path(args.out))  # --out RUN/checkpoint/adapter.safetensors would replace the run's adapter
    config, overrides = split_items(args.items)
    cfg = load_config(config, overrides)
    kinds = signature_names(args.signature or getattr(cfg.method.params, "probe", PROBE.value()), "--signature")
    if len(kinds) != 1:
        raise ConfigError(f"--signature: one signature per file, not {len(kinds)} ({', '.join(kinds)}); "
                          "run tsr signatures once per signature")
    kind = kinds[0]
    count = getattr(cfg.method.params, "probe_batches", PROBE_BATCHES.value())
    seeds = csv_list(args.seeds, int, "--seeds") or [cfg.seed]
    stream = load_probe_stream(cfg)
    learner = build_learner(cfg)
    console.print(f"{kind} signatures of {len(stream.names)} tasks of {stream.name}, seeds {seeds}, "
                  f"{count} probe batches at N={cfg.stream.budget} -> {args.out}")
    started = time.perf_counter()
    signatures = {}
    for seed in seeds:
        learner.reset(seed)
        learner.adapter.load(learner.init_state)
        batches = probe_batches(learner, cfg, stream, seed, count)
        signatures[seed] = {name: take(kind, learner, b) for name, b in batches.items()}
    saved = write_signature_file(Path(args.out), kind=kind, model=cfg.model.path, stream=stream.name,
                                 budget=cfg.stream.budget, probe_batches=count, signatures=signatures)
    console.print(f"saved {len(saved.tasks)} tasks x {len(saved.seeds)} seeds ({saved.model}) to {saved.path} "
                  f"in {time.perf_counter() - started:.1f} s")
    return 0


def add_parser(sub) -> None:
    p = add(sub, "signatures", "Take every task's signature once and save it, for TSR to route on "
            "(method.signatures=FILE), also from a proxy model.", cmd_signatures, EXAMPLES)
    add_items(p)
    p.add_argument("--out", required=True, help="the signature file to write (.safetensors)")
    option(p, "--signature", fallback=PROBE, help="which signature (default: the config's method.probe, else "
           "%(fallback)s)")
    p.add_argument("--seeds", help="comma-separated seeds (default: the config's seed)")
