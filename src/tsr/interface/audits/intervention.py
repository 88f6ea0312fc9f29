"""`tsr audit intervention`: the paper's local intervention, equal-norm gradient steps and how the
signature ranks the sources by them (:mod:`tsr.experiments.intervention`)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rich.console import Console

from ...errors import TsrError
from ..args import Default, add, add_items, csv_list, option, split_items
from .common import SEEDS, print_saved

EXAMPLES = """examples:
  tsr audit intervention --targets stance,irony,arith-ds --seeds 0,1,2,3,4   # 30 repetitions, scales 0.25, 0.5, 1
  tsr audit intervention --targets arith-cm --reps 10 --signature jointot
  tsr audit intervention --targets irony --state runs/synth-trace-tsr-s0-eea6230d6e:stance   # at a stream's adapter
Writes intervention.json (every repetition of every target and seed), intervention-summary.json and
intervention.md (the paper's statistics, mean ± se over seeds: the within-target rank correlation
of the gradient cosine with the loss reduction at each scale, the stored signature against the
current-gradient cosines, the sources grouped by the signature and the share of an extra target
batch's descent; per source and scale: the changes and helpful-step rate); docs/audits.md."""

REPS = Default("tsr.experiments.intervention.plan:REPS")
SCALES = Default("tsr.experiments.intervention.plan:SCALES")
SIGNATURE = Default("tsr.experiments.intervention.plan:SIGNATURE")


def cmd_audit_intervention(args: argparse.Namespace, console: Console) -> int:
    from ...atomic import write_json, write_text
    from ...config import load_config
    from ...experiments.intervention.report import aggregate, markdown
    from ...experiments.intervention.run import intervene
    from ...experiments.probe.plan import load_probe_stream
    from ...model.learner import build_learner

    config, overrides = split_items(args.items)
    cfg = load_config(config, overrides)
    stream = load_probe_stream(cfg)
    targets = csv_list(args.targets) or stream.names
    scales = csv_list(args.scales, float, "--scales") or list(SCALES.value())
    seeds = csv_list(args.seeds, int, "--seeds") or list(SEEDS.value())
    reps, signature = REPS.fill(args.reps), SIGNATURE.fill(args.signature) or None
    tag = "-".join(map(str, seeds))
    out = Path(args.out) if args.out else Path(cfg.out_dir) / f"audit-intervention-{stream.name}-s{tag}"
    for name in [*targets, *(csv_list(args.sources) or [])]:
        if name not in stream.names:
            raise TsrError(f"--targets/--sources: no task {name!r} in {stream.name} (tasks: {', '.join(stream.names)})")
    learner = build_learner(cfg)
    state, at = _intervention_state(args, learner)
    results = []
    for target in targets:
        sources = [s for s in (csv_list(args.sources) or stream.names) if s != target]
        for seed in seeds:
            # one file per (target, seed), so an interrupted audit resumes where it stopped
            saved = out / "seeds" / f"{target}-s{seed}.json"
            if saved.is_file():
                results.append(json.loads(saved.read_text(encoding="utf-8")))
                continue
            console.print(f"intervention on {target} at {at}, seed {seed}: {len(sources)} sources, "
                          f"{reps} repetitions, scales {scales}")
            result = {**intervene(learner, cfg, stream, target, sources, reps, scales, seed, state=state,
                                  signature=signature), "state": at}
            write_json(saved, result)
            results.append(json.loads(saved.read_text(encoding="utf-8")))
    text = markdown(results)
    write_json(out / "intervention.json", results)
    write_json(out / "intervention-summary.json", aggregate(results))
    write_text(out / "intervention.md", text)
    print_saved(console, text, out)
    return 0


def _intervention_state(args: argparse.Namespace, learner) -> tuple[dict | None, str]:
    """--state RUN_DIR[:TASK]: the adapter a run had after that task, or the shared initialisation."""
    if not args.state:
        return None, "the shared initialisation"
    from ...engine.rundir import task_snapshot

    folder, _, task = args.state.partition(":") if not Path(args.state).is_dir() else (args.state, "", "")
    task, state = task_snapshot(Path(folder), task or None)
    try:
        learner.adapter.load(state)
    except ValueError as err:
        raise TsrError(f"--state {args.state}: its adapter does not fit this config's model ({err})") from None
    return state, f"the adapter of {folder} after {task}"


def add_parser(audits) -> None:
    q = add(audits, "intervention", "Local intervention: equal-norm gradient steps from the shared "
            "initialisation, the target's loss change, and how the signature ranks the sources by it.",
            cmd_audit_intervention, EXAMPLES)
    add_items(q)
    q.add_argument("--targets", help="comma-separated target tasks (default: all)")
    q.add_argument("--sources", help="comma-separated sources (default: every other task)")
    option(q, "--reps", type=int, fallback=REPS,
           help="repetitions (independent batches) per target (default %(fallback)s)")
    option(q, "--scales", fallback=SCALES,
           help="comma-separated multiples of the one-step displacement (default %(fallback)s)")
    option(q, "--seeds", fallback=SEEDS, help="comma-separated seeds: each a shared initialisation and its batch "
           "draws (default %(fallback)s)")
    option(q, "--signature", fallback=SIGNATURE, help="the signature ranked against the measured changes "
           "(default %(fallback)s; '' for none)")
    q.add_argument("--state", metavar="RUN_DIR[:TASK]", help="perturb from the adapter a run had after TASK "
                   "(default: its last finished task) instead of the shared initialisation")
    q.add_argument("--out", help="report folder (default: <out_dir>/audit-intervention-<stream>-s<seeds>)")
