"""`tsr audit NAME`: the paper's audits as commands (thin, as the rest of the CLI; the work is in
tsr.experiments.budget, tsr.experiments.budget.report and tsr.analysis.arms)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from rich.console import Console

from ..cli import _add_executor_flags, _csv, _executor, _split_args
from ..errors import TsrError
from .grid_output import grid_callbacks, print_unfinished, started_summaries

EXAMPLES = {
    "": """examples:
  tsr audit budget --seeds 0,1,2,3,4 --workers 2          # S_t(N) for N = 10..500, headroom vs N_max = 500
  tsr audit arms runs/probe-synth-trace-1a2b3c4d5e        # the arm table of a probe folder
  tsr audit kd --teachers era,random,oracle,recent,base,none --seeds 0,1,2,3,4   # teacher-identity ablation
  tsr audit orders --methods er,tsr --shuffles 2 --greedy runs/probe-synth-trace-1a2b3c4d5e --seeds 0,1,2
  tsr audit intervention --targets stance,irony,arith-ds  # the paper's local intervention
  tsr audit carriers --from runs/probe-synth-trace-1a2b3c4d5e --top 5 --seeds 0,1,2  # init / anchor / mixing
  tsr audit scale --models models/qwen-0.5b,models/qwen-7b --arms target,full,mixed --signatures gradb
  tsr audit regime --seeds 0,1,2                          # how much the world forgets at each point of a map
Each audit writes JSON, markdown and a figure into its folder; `tsr audit NAME --help` for more.""",
    "budget": """examples:
  tsr audit budget --seeds 0,1,2,3,4 --workers 2                     # every task, N = 10,20,50,100,200 and 500
  tsr audit budget --targets arith-cm --sources arith-ds --arms target,mixed,random --seeds 0,1,2
  tsr audit budget --budgets 10,30,100 --n-max 300 --seeds 0,1 train.steps=200 stream.test_cap=100
Each budget's arms live in the probe folder of that budget (tsr probe stream.budget=N), so saved
arms are reused and a rerun resumes; the report (budget.json, budget.md, budget.png) goes to
<out_dir>/audit-budget-<stream>-<fingerprint> (or --out). With mixed or random arms it also
converts their gains into equivalent target examples through S_t(N) (label efficiency).""",
    "intervention": """examples:
  tsr audit intervention --targets stance,irony,arith-ds --seeds 0,1,2,3,4   # 30 repetitions, scales 0.25, 0.5, 1
  tsr audit intervention --targets arith-cm --reps 10 --signature jointot
  tsr audit intervention --targets irony --state runs/synth-trace-tsr-s0-eea6230d6e:stance   # at a stream's adapter
Writes intervention.json (every repetition of every target and seed), intervention-summary.json and
intervention.md (the paper's statistics, mean ± se over seeds: the within-target rank correlation
of the gradient cosine with the loss reduction at each scale, the stored signature against the
current-gradient cosines, the sources grouped by the signature and the share of an extra target
batch's descent; per source and scale: the changes and helpful-step rate); docs/audits.md.""",
    "carriers": """examples:
  tsr audit carriers --pairs arith-ds:arith-cm,stance:irony --seeds 0,1,2 --workers 2
  tsr audit carriers --from runs/probe-synth-trace-1a2b3c4d5e --top 5 --seeds 0,1,2,3,4   # the oracle pairs
  tsr audit carriers --pairs arith-ds:arith-cm --mu 0.1,1 --checkpoints 50,100,200,300,400 train.steps=500
Per pair SOURCE:TARGET: target only, data mixing (mixed), one-shot init from the source adapter
(init) and the L2 anchor toward it (anchor, one arm per --mu); all are probe arms saved in the
config's probe folder (shared with tsr probe, resumable; the source adapter is trained once per
source and seed and cached there). Writes carriers.json, carriers.md and carriers.png to
<out_dir>/audit-carriers-<stream>-<fingerprint> (or --out): score, gain over target (paired by
seed) and share of the mixing gain, at the end, after each checkpoint and at step 0 (the starting
points: the shared initialisation and the source adapter, scored once, cached in the probe
folder's starts/): the one-shot carrier's head start and its wash-out.""",
    "scale": """examples:
  tsr audit scale --models models/qwen2.5-0.5b,models/qwen2.5-7b --seeds 0,1,2,3,4 --workers 2
  tsr audit scale --models A,B,C --labels 0.5B,1.5B,3B --arms target,full,mixed --signatures gradb --seeds 0,1,2
  tsr audit scale --models A,B --labels small,big --report-only          # the arms saved so far
Each model is an ordinary probe (tsr probe model.path=PATH): its arms live in that config's probe
folder, so saved arms are reused and a rerun resumes. Writes scale.json, scale.md and scale.png to
<out_dir>/audit-scale-<stream>-<hash> (or --out): headroom and S(N) per target and model, the
matrix's best source (with mixed arms), each signature's top-1 source, and which choices are
the same at every model ("k of n targets stable").""",
    "arms": """examples:
  tsr audit arms runs/probe-synth-trace-1a2b3c4d5e        # target-only, full, random, oracle per target
Reads the folder's saved arms (nothing is trained) and writes arm-table.md/.csv/.json into it
(or --out): mean ± std over seeds; oracle = each seed's best mixed arm in hindsight.""",
    "kd": """examples:
  tsr audit kd --teachers era,random,oracle,recent,base,none --seeds 0,1,2,3,4 --workers 2
  tsr audit kd --methods tsr,er --teachers era,none --seeds 0,1 train.steps=300
  tsr audit kd --teachers era,none --reshape amplify,residual,repel,selective --seeds 0,1,2   # loss reshaping
  tsr audit kd --report-only --seeds 0,1,2,3,4          # the runs finished so far
Each (teacher, seed) is the ordinary run of `tsr run method.name=tsr method.reference=TEACHER seed=S`
(shared with tsr compare / tsr table, resumable). Teachers: era (default), random, oracle
(per-batch min-CE snapshot; one forward per snapshot per batch), recent, base, hybrid, top, none.
Writes kd.json, kd.md, kd.png to <out_dir>/audit-kd-<stream>-<fingerprint> (or --out): Overall, Plas,
BWT per teacher, the difference to era paired by seed, and C9's spread vs anchor drop.""",
    "regime": """examples:
  tsr audit regime --seeds 0,1,2 --workers 2                  # the map of docs/synthetic.md: SeqFT, ER, TSR
  tsr audit regime --points my-points.yaml --relations --seeds 0,1,2   # your points, with C4's relation checks
A points file maps each point's name to its overrides (points: {fast: [train.steps=300, train.lr=3e-4]}).
Writes regime.json, regime.md and regime.png (SeqFT's retention against its BWT, ER's BWT against
TSR's, the calibration targets shaded) to <out_dir>/audit-regime-<stream>-<fingerprint> (or --out).""",
    "orders": """examples:
  tsr audit orders --methods er,tsr --orders canonical,reversed --shuffles 2 --seeds 0,1,2
  tsr audit orders --greedy runs/probe-synth-trace-1a2b3c4d5e --shuffles 3 --seeds 0,1,2,3,4 --workers 2
  tsr audit orders --methods seqft,er,tsr --report-only --shuffles 2 --seeds 0,1,2
  tsr audit orders --orders "canonical,mine=code>stance>policy>summary>irony>arith-cm>arith-ds>simplify" --seeds 0,1
Each (method, order, seed) is the ordinary run of `tsr run method.name=M stream.order=ORDER seed=S`.
--shuffles K adds K distinct shuffle:k orders (fixed across seeds); --greedy PROBE_DIR the best-source
curriculum of that probe folder's transfer matrix (greedy) and its reversal (greedy-reversed). Writes
orders.json, orders.md, orders.png to <out_dir>/audit-orders-<stream>-<fingerprint> (or --out): Overall,
Plas, BWT per order, the range of the order means per method (C8: the replay family moves <= 0.03) and
a per-task view.""",
}


def _one_line_errors(parser: argparse.ArgumentParser) -> None:
    """Usage errors of this parser as one ``tsr: error:`` line (exit 2), not usage + message."""
    def error(message: str):
        raise TsrError(f"{parser.prog}: {message}")

    parser.error = error  # type: ignore[method-assign]


def _arm_progress(describe):
    """The progress callback of an arm grid: one stderr line every 10 arms and at the end."""
    err = Console(stderr=True)

    def progress(result: dict, done: int, total: int) -> None:
        if done % 10 == 0 or done == total:
            err.print(f"  {done}/{total} arms ({describe(result)})")

    return progress


def cmd_audit_budget(args: argparse.Namespace, console: Console) -> int:
    from ..experiments.budget.plan import audit_dir, budget_dirs, jobs_at, plan_budget
    from ..experiments.budget.run import run_budget, saved_arms
    from ..experiments.budget.report import budget_markdown, write_budget_report
    from ..experiments.probe.plan import load_probe_stream
    from ..config import load_config

    config, overrides = _split_args(args.items)
    cfg = load_config(config, overrides)
    stream = load_probe_stream(cfg)
    plan = plan_budget(stream, _csv(args.seeds, int, "--seeds") or [], _csv(args.targets), _csv(args.sources),
                          _csv(args.budgets, int, "--budgets"), args.n_max, _csv(args.arms))
    out = Path(args.out) if args.out else audit_dir(cfg, stream, plan)
    if args.report_only:
        arms = saved_arms(cfg, stream, plan)
        if not any(a["arm"] == "target" for rows in arms.values() for a in rows):
            where = budget_dirs(cfg, stream, plan)[plan.budgets[0]].parent
            raise TsrError(f"--report-only: no target arm of this sweep is saved yet (in {where})")
        console.print(f"budget audit of {stream.name} (saved arms only) -> {out}")
    else:
        jobs = len(jobs_at(stream, plan)) * len(plan.budgets)
        console.print(f"budget audit of {stream.name}: N in {', '.join(map(str, plan.budgets))} "
                      f"(N_max {plan.n_max}), {jobs} arms, {args.workers} worker(s) -> {out}")
        progress = _arm_progress(lambda result: f"N={result['budget']} {result['target']} {result['arm']}")

        arms = run_budget(cfg, stream, plan, args.workers, progress, _executor(args))
    command = "tsr audit budget " + " ".join(args.argv_tail) if args.argv_tail else None
    summary = write_budget_report(out, arms, plan.n_max, stream.names, stream.name, command)
    console.print(budget_markdown(summary, stream.names), markup=False)
    console.print(f"saved to {out}")
    return 0


def cmd_audit_carriers(args: argparse.Namespace, console: Console) -> int:
    from ..experiments.carriers.plan import carrier_jobs, pairs_from_probe, parse_pairs, plan_carriers
    from ..experiments.carriers.report import carrier_summary
    from ..experiments.carriers.run import run_carriers, run_starts, saved_carriers, saved_starts
    from ..experiments.carriers.report import carriers_markdown, write_carriers_report
    from ..experiments.probe.plan import load_probe_stream, probe_dir
    from ..config import load_config

    config, overrides = _split_args(args.items)
    cfg = load_config(config, overrides)
    stream = load_probe_stream(cfg)
    if (args.pairs is None) == (args.source_dir is None):
        raise TsrError("tsr audit carriers: give exactly one of --pairs SRC:TGT,... and --from PROBE_DIR")
    if args.top is not None and args.source_dir is None:
        raise TsrError("--top: only with --from PROBE_DIR")
    pairs = parse_pairs(args.pairs) if args.pairs is not None else pairs_from_probe(Path(args.source_dir), args.top)
    plan = plan_carriers(stream, pairs, _csv(args.seeds, int, "--seeds") or [], _csv(args.mu, float, "--mu") or [0.1],
                            [] if args.checkpoints == "none" else _csv(args.checkpoints, int, "--checkpoints"),
                            cfg.train.steps)
    folder = probe_dir(cfg, stream)
    out = Path(args.out) if args.out else folder.with_name(folder.name.replace("probe-", "audit-carriers-", 1))
    pairs_text = ", ".join(f"{s}->{t}" for s, t in plan.pairs)
    if args.report_only:
        arms = saved_carriers(cfg, stream, plan)
        if not any(a["arm"] == "target" for a in arms):
            raise TsrError(f"--report-only: no target arm of these pairs is saved yet (in {folder})")
        starts = saved_starts(cfg, stream, plan)
        console.print(f"carrier study of {stream.name} (saved arms only): {pairs_text} -> {out}")
    else:
        jobs = carrier_jobs(stream, plan)
        console.print(f"carrier study of {stream.name}: {pairs_text}; {len(jobs)} arms, {args.workers} worker(s), "
                      f"checkpoints {', '.join(map(str, plan.checkpoints)) or 'none'} -> {out}")
        progress = _arm_progress(lambda result: f"{result['target']} {result['arm']}")

        arms = run_carriers(cfg, stream, plan, args.workers, progress, _executor(args))
        err = Console(stderr=True)

        def scored(done: int, total: int) -> None:
            if done == total or done % 10 == 0:
                err.print(f"  step 0: {done}/{total} starting points scored")

        starts = run_starts(cfg, stream, plan, scored)
    command = "tsr audit carriers " + " ".join(args.argv_tail) if args.argv_tail else None
    summary = write_carriers_report(out, carrier_summary(arms, plan, cfg.train.steps, starts), stream.name, command)
    console.print(carriers_markdown(summary), markup=False)
    console.print(f"saved to {out}")
    return 0


def cmd_audit_scale(args: argparse.Namespace, console: Console) -> int:
    from ..experiments.scale.plan import audit_dir, jobs_of, plan_scale
    from ..experiments.scale.run import run_scale, run_signatures, saved_arms
    from ..experiments.probe.plan import load_probe_stream
    from ..experiments.probe.report import designed_relations
    from ..experiments.scale.report import scale_markdown, scale_summary, write_scale_report
    from ..config import load_config

    config, overrides = _split_args(args.items)
    cfg = load_config(config, overrides)
    stream = load_probe_stream(cfg)
    signatures = None
    if args.signatures:
        from ..cl.signatures import signature_names

        signatures = signature_names(args.signatures)
    plan = plan_scale(cfg, stream, _csv(args.models) or [], _csv(args.labels), _csv(args.seeds, int, "--seeds") or [],
                         _csv(args.targets), _csv(args.sources), _csv(args.arms), signatures, args.probe_batches)
    out = Path(args.out) if args.out else audit_dir(cfg, stream, plan)
    if args.report_only:
        arms = saved_arms(cfg, stream, plan)
        if not any(a["arm"] == "target" for rows in arms.values() for a in rows):
            raise TsrError(f"--report-only: no target arm of this audit is saved yet (in the probe folders "
                           f"of {', '.join(plan.labels)} under {cfg.out_dir})")
        console.print(f"scale audit of {stream.name} (saved arms only): {', '.join(plan.labels)} -> {out}")
    else:
        jobs = len(jobs_of(stream, plan)) * len(plan.models)
        console.print(f"scale audit of {stream.name}: {', '.join(plan.labels)}; {jobs} arms, "
                      f"{args.workers} worker(s) -> {out}")
        progress = _arm_progress(lambda result: f"{result['model']} {result['target']} {result['arm']}")

        arms = run_scale(cfg, stream, plan, args.workers, progress, _executor(args))
    tables = None
    if plan.signatures:
        console.print(f"signatures {', '.join(plan.signatures)} at each model's shared initialisation")
        tables = run_signatures(cfg, stream, plan, arms, out, designed_relations(cfg.stream.source, cfg.stream.options))
    kinds = {t.name: t.kind.value for t in stream}
    summary = scale_summary(arms, list(plan.labels), list(plan.models), [t for t in stream.names if t in plan.targets],
                            kinds, tables, list(plan.sources) if plan.sources else None)
    command = "tsr audit scale " + " ".join(args.argv_tail) if args.argv_tail else None
    summary = write_scale_report(out, summary, stream.name, command)
    console.print(scale_markdown(summary), markup=False)
    console.print(f"saved to {out}")
    return 0


def cmd_audit_arms(args: argparse.Namespace, console: Console) -> int:
    import json

    from ..analysis.arms import arm_table, signature_routes, table_markdown, write_arm_table
    from ..experiments.probe.plan import read_arms

    folder = Path(args.dir)
    arms = read_arms(folder)
    routes = {}
    try:  # the signature audit of the folder's last `tsr probe --signatures`, if any
        routes = signature_routes(json.loads((folder / "report.json").read_text(encoding="utf-8")).get("signatures"))
    except (OSError, ValueError, AttributeError):
        pass
    arm_table(arms, routes)  # the arms the table needs, checked before anything is written
    table = write_arm_table(Path(args.out) if args.out else folder, arms, routes=routes)
    console.print(table_markdown(table), markup=False)
    console.print(f"saved to {Path(args.out) if args.out else folder}")
    return 0


def cmd_audit_intervention(args: argparse.Namespace, console: Console) -> int:
    import json

    from ..atomic import write_json, write_text
    from ..config import load_config
    from ..experiments.intervention.report import aggregate, markdown
    from ..experiments.intervention.run import intervene
    from ..experiments.probe.plan import load_probe_stream
    from ..model.learner import build_learner

    config, overrides = _split_args(args.items)
    cfg = load_config(config, overrides)
    stream = load_probe_stream(cfg)
    targets = _csv(args.targets) or stream.names
    scales = _csv(args.scales, float, "--scales") or [0.25, 0.5, 1.0]
    seeds = _csv(args.seeds, int, "--seeds") or [0]
    tag = "-".join(map(str, seeds))
    out = Path(args.out) if args.out else Path(cfg.out_dir) / f"audit-intervention-{stream.name}-s{tag}"
    for name in [*targets, *(_csv(args.sources) or [])]:
        if name not in stream.names:
            raise TsrError(f"--targets/--sources: no task {name!r} in {stream.name} (tasks: {', '.join(stream.names)})")
    learner = build_learner(cfg)
    state, at = _intervention_state(args, learner)
    results = []
    for target in targets:
        sources = [s for s in (_csv(args.sources) or stream.names) if s != target]
        for seed in seeds:
            # one file per (target, seed), so an interrupted audit resumes where it stopped
            saved = out / "seeds" / f"{target}-s{seed}.json"
            if saved.is_file():
                results.append(json.loads(saved.read_text(encoding="utf-8")))
                continue
            console.print(f"intervention on {target} at {at}, seed {seed}: {len(sources)} sources, "
                          f"{args.reps} repetitions, scales {scales}")
            result = {**intervene(learner, cfg, stream, target, sources, args.reps, scales, seed, state=state,
                                  signature=args.signature or None), "state": at}
            write_json(saved, result)
            results.append(json.loads(saved.read_text(encoding="utf-8")))
    text = markdown(results)
    write_json(out / "intervention.json", results)
    write_json(out / "intervention-summary.json", aggregate(results))
    write_text(out / "intervention.md", text)
    console.print(text, markup=False)
    console.print(f"saved to {out}")
    return 0


def _intervention_state(args: argparse.Namespace, learner) -> tuple[dict | None, str]:
    """--state RUN_DIR[:TASK]: the adapter a run had after that task, or the shared initialisation."""
    if not args.state:
        return None, "the shared initialisation"
    from ..engine.rundir import task_snapshot

    folder, _, task = args.state.partition(":") if not Path(args.state).is_dir() else (args.state, "", "")
    task, state = task_snapshot(Path(folder), task or None)
    try:
        learner.adapter.load(state)
    except ValueError as err:
        raise TsrError(f"--state {args.state}: its adapter does not fit this config's model ({err})") from None
    return state, f"the adapter of {folder} after {task}"


def _variant_runs(args: argparse.Namespace, console: Console, grid, out: Path, what: str) -> dict:
    """Run (or, with --report-only, only read) a grid of run variants; its finished runs."""
    from ..experiments.grid import finished_runs, run_grid

    executor = _executor(args)
    if args.report_only:
        runs = finished_runs(grid)
        if not runs:
            from ..analysis.table import unfinished

            where = next(iter(grid.dirs.values())).parent
            print_unfinished(Console(stderr=True), unfinished(started_summaries(grid)))
            raise TsrError(f"--report-only: no run of this grid has finished yet (runs go to {where})")
        console.print(f"{what} ({len(runs)} of {len(grid.points)} runs finished) -> {out}")
    else:
        console.print(f"{what}: {len(grid.points)} runs, {args.workers} worker(s) -> {out}")
        progress, task_done = grid_callbacks(Console(stderr=True))
        run_grid(grid, args.workers, progress, task_done, executor)
        runs = finished_runs(grid)
    return runs


def cmd_audit_kd(args: argparse.Namespace, console: Console) -> int:
    from ..analysis.cells import cells
    from ..experiments import grid as va
    from ..experiments.kd.plan import DEFAULT_TEACHERS, plan_kd
    from ..experiments.kd.report import kd_markdown, write_kd_report
    config, overrides = _split_args(args.items)
    teachers = _csv(args.teachers) or list(DEFAULT_TEACHERS)
    reshapes = _csv(args.reshape) or []
    points = plan_kd(_csv(args.methods) or [], teachers, _csv(args.seeds, int, "--seeds") or [0], reshapes)
    cfg, stream = va.base_stream(config, overrides)
    grid = va.plan_grid(config, overrides, points)
    out = Path(args.out) if args.out else va.audit_dir(cfg, stream, "kd", overrides)
    runs = _variant_runs(args, console, grid, out, f"distillation audit of {stream.name}")
    command = "tsr audit kd " + " ".join(args.argv_tail) if args.argv_tail else None
    summary = write_kd_report(out, cells(runs), teachers, stream.name, command, reshapes)
    console.print(kd_markdown(summary), markup=False)
    console.print(f"saved to {out}")
    return 0


def cmd_audit_regime(args: argparse.Namespace, console: Console) -> int:
    from ..analysis.cells import cells
    from ..experiments import grid as va
    from ..experiments.regime.plan import DEFAULT_METHODS, DEFAULT_POINTS, plan_points, read_points
    from ..experiments.regime.report import point_summary, regime_markdown, write_regime_report
    from ..experiments.regime.run import relation_rows

    config, overrides = _split_args(args.items)
    points = read_points(args.points) if args.points else list(DEFAULT_POINTS)
    methods = _csv(args.methods) or list(DEFAULT_METHODS)
    seeds = _csv(args.seeds, int, "--seeds") or [0]
    cfg, stream = va.base_stream(config, overrides)
    grid = va.plan_grid(config, overrides, plan_points(methods, points, seeds))
    out = Path(args.out) if args.out else va.audit_dir(cfg, stream, "regime", overrides)
    runs = _variant_runs(args, console, grid, out, f"regime map of {stream.name}")
    table = cells(runs)
    summaries = []
    for point in points:
        rows = None
        if args.relations:
            rows = relation_rows(config, overrides, point, seeds, args.workers, not args.report_only, _executor(args))
        summaries.append(point_summary(table, point.name, rows))
    command = "tsr audit regime " + " ".join(args.argv_tail) if args.argv_tail else None
    write_regime_report(out, summaries, stream.name, command)
    console.print(regime_markdown(summaries), markup=False)
    console.print(f"saved to {out}")
    return 0


def cmd_audit_orders(args: argparse.Namespace, console: Console) -> int:
    from ..analysis.cells import cells, results_by_variant
    from ..experiments import grid as va
    from ..experiments.orders.plan import greedy_from_probe, plan_orders, plan_points
    from ..experiments.orders.report import orders_markdown, per_task, write_orders_report
    config, overrides = _split_args(args.items)
    methods = va.check_methods(_csv(args.methods) or [])
    seeds = _csv(args.seeds, int, "--seeds") or [0]
    cfg, stream = va.base_stream(config, overrides)
    greedy = greedy_from_probe(Path(args.greedy), stream)[0] if args.greedy else None
    plan = plan_orders(stream, _csv(args.orders) or [], args.shuffles, greedy)
    grid = va.plan_grid(config, overrides, plan_points(methods, plan, seeds))
    out = Path(args.out) if args.out else va.audit_dir(cfg, stream, "orders", overrides)
    runs = _variant_runs(args, console, grid, out, f"order audit of {stream.name} ({', '.join(plan)})")
    command = "tsr audit orders " + " ".join(args.argv_tail) if args.argv_tail else None
    summary = write_orders_report(out, cells(runs), plan, stream.name, command, args.greedy,
                                     per_task(results_by_variant(runs)))
    console.print(orders_markdown(summary), markup=False)
    console.print(f"saved to {out}")
    return 0


def add_audit_parser(add) -> None:
    """``tsr audit NAME``: ``add`` is build_parser's helper that adds one command."""
    p = add("audit", "The paper's audits as commands: budget sweep (with label efficiency), arm table, "
            "local intervention, carriers, distillation teachers, task orders, scale.", None)
    p.epilog = EXAMPLES[""]
    _one_line_errors(p)
    audits = p.add_subparsers(dest="audit", required=True, metavar="NAME")

    def audit(name: str, help_text: str, func) -> argparse.ArgumentParser:
        q = audits.add_parser(name, help=help_text, description=help_text, epilog=EXAMPLES[name],
                              formatter_class=argparse.RawDescriptionHelpFormatter)
        q.set_defaults(func=func)
        _one_line_errors(q)
        return q

    q = audit("budget", "Budget sweep: S_t(N) and headroom against a fixed N_max, over seeds.", cmd_audit_budget)
    q.add_argument("items", nargs="*", metavar="CONFIG | key=value")
    q.add_argument("--budgets", help="comma-separated N (default 10,20,50,100,200,500 below N_max)")
    q.add_argument("--n-max", type=int, metavar="N", help="the reference budget (default 500, or the smallest pool)")
    q.add_argument("--seeds", default="0", help="comma-separated seeds (default 0)")
    q.add_argument("--targets", help="comma-separated target tasks (default: all)")
    q.add_argument("--sources", help="comma-separated sources of the mixed arms (default: all; the random arm draws from all)")
    q.add_argument("--arms", help="comma-separated arms: target, mixed, random (default: target)")
    q.add_argument("--workers", type=int, default=max(1, os.cpu_count() or 1), help="parallel processes")
    q.add_argument("--out", help="report folder (default: <out_dir>/audit-budget-<stream>-<fingerprint>)")
    q.add_argument("--report-only", action="store_true", help="train nothing: report the arms saved so far "
                   "(a partial sweep, e.g. while another command runs it)")
    _add_executor_flags(q)

    q = audit("intervention", "Local intervention: equal-norm gradient steps from the shared initialisation, "
              "the target's loss change, and how the signature ranks the sources by it.", cmd_audit_intervention)
    q.add_argument("items", nargs="*", metavar="CONFIG | key=value")
    q.add_argument("--targets", help="comma-separated target tasks (default: all)")
    q.add_argument("--sources", help="comma-separated sources (default: every other task)")
    q.add_argument("--reps", type=int, default=30, help="repetitions (independent batches) per target (default 30)")
    q.add_argument("--scales", help="comma-separated multiples of the one-step displacement (default 0.25,0.5,1)")
    q.add_argument("--seeds", default="0", help="comma-separated seeds: each a shared initialisation and its batch "
                   "draws (default 0)")
    q.add_argument("--signature", default="gradb", help="the signature ranked against the measured changes "
                   "(default gradb; '' for none)")
    q.add_argument("--state", metavar="RUN_DIR[:TASK]", help="perturb from the adapter a run had after TASK "
                   "(default: its last finished task) instead of the shared initialisation")
    q.add_argument("--out", help="report folder (default: <out_dir>/audit-intervention-<stream>-s<seeds>)")

    q = audit("carriers", "Carrier study: one-shot init from the source adapter, L2 anchor toward it, "
              "data mixing; the target's score and gain over the steps, per pair.", cmd_audit_carriers)
    q.add_argument("items", nargs="*", metavar="CONFIG | key=value")
    q.add_argument("--pairs", metavar="SRC:TGT,...", help="comma-separated source:target pairs")
    q.add_argument("--from", dest="source_dir", metavar="PROBE_DIR", help="each target's best source in this probe "
                   "folder's transfer matrix (instead of --pairs)")
    q.add_argument("--top", type=int, metavar="K", help="with --from: the K pairs with the largest mixing gain")
    q.add_argument("--seeds", default="0", help="comma-separated seeds (default 0)")
    q.add_argument("--mu", help="comma-separated anchor strengths, one anchor arm each (default 0.1)")
    q.add_argument("--checkpoints", help="comma-separated steps to score on the way (default: every "
                   "train.steps/8; none: the last step only)")
    q.add_argument("--workers", type=int, default=max(1, os.cpu_count() or 1), help="parallel processes")
    q.add_argument("--out", help="report folder (default: <out_dir>/audit-carriers-<stream>-<fingerprint>)")
    q.add_argument("--report-only", action="store_true", help="train nothing: report the arms saved so far")
    _add_executor_flags(q)

    q = audit("scale", "Scale audit: the same probe on several base models; headroom per model and which "
              "best-source choices are the same at every model.", cmd_audit_scale)
    q.add_argument("items", nargs="*", metavar="CONFIG | key=value")
    q.add_argument("--models", metavar="PATH,PATH,...", help="comma-separated model.path values (folders or hub "
                   "ids), at least two, in the order of the x axis")
    q.add_argument("--labels", help="comma-separated names of the models, one each (default: the folder names)")
    q.add_argument("--arms", help="comma-separated arms: target, full, mixed (default: target,full)")
    q.add_argument("--signatures", metavar="NAMES", help="comma-separated signatures whose top-1 source is "
                   "compared across models (all: every signature)")
    q.add_argument("--probe-batches", type=int, default=10, help="probe batches per task of a signature (default 10)")
    q.add_argument("--seeds", default="0", help="comma-separated seeds (default 0)")
    q.add_argument("--targets", help="comma-separated target tasks (default: all)")
    q.add_argument("--sources", help="comma-separated sources of the mixed arms and signature picks (default: all)")
    q.add_argument("--workers", type=int, default=max(1, os.cpu_count() or 1), help="parallel processes")
    q.add_argument("--out", help="report folder (default: <out_dir>/audit-scale-<stream>-<hash>)")
    q.add_argument("--report-only", action="store_true", help="train nothing: report the arms saved so far")
    _add_executor_flags(q)

    q = audit("arms", "The arm table of a probe folder: target-only, full, random, oracle.", cmd_audit_arms)
    q.add_argument("dir", metavar="PROBE_DIR")
    q.add_argument("--out", help="where arm-table.* go (default: PROBE_DIR)")

    q = audit("kd", "Distillation audit: TSR with each teacher (method.reference) on the same seeds; "
              "teacher identity vs the anchor.", cmd_audit_kd)
    q.add_argument("items", nargs="*", metavar="CONFIG | key=value")
    q.add_argument("--teachers", help="comma-separated teachers (default era,random,oracle,recent,base,none; "
                   "also hybrid, top)")
    q.add_argument("--methods", default="tsr", help="comma-separated methods: those with method.reference run "
                   "every teacher, others (er, seqft) once as baselines (default tsr)")
    q.add_argument("--reshape", help="also the era teacher with each of these loss reshapings "
                   "(method.kd_reshape: amplify, residual, repel, selective), rows era+<reshape>")
    q.add_argument("--seeds", default="0", help="comma-separated seeds (default 0)")
    q.add_argument("--workers", type=int, default=max(1, os.cpu_count() or 1), help="parallel runs")
    q.add_argument("--out", help="report folder (default: <out_dir>/audit-kd-<stream>-<fingerprint>)")
    q.add_argument("--report-only", action="store_true", help="train nothing: report the runs finished so far")
    _add_executor_flags(q)

    q = audit("regime", "Regime map: SeqFT, ER and TSR at points of learning rate, steps, LoRA size, budget and "
              "base; how much the world forgets, against the calibration targets.", cmd_audit_regime)
    q.add_argument("items", nargs="*", metavar="CONFIG | key=value")
    q.add_argument("--points", help="a YAML file: 'points: {name: [key=value, ...]}' (default: the map of "
                   "docs/synthetic.md)")
    q.add_argument("--methods", help="comma-separated methods (default seqft,er,tsr)")
    q.add_argument("--seeds", default="0", help="comma-separated seeds (default 0)")
    q.add_argument("--relations", action="store_true", help="also each point's probe arms for the designed-"
                   "relation checks (C4: target and mixed arms of stance, policy, irony, arith-cm, arith-ds)")
    q.add_argument("--workers", type=int, default=max(1, os.cpu_count() or 1), help="parallel runs")
    q.add_argument("--out", help="report folder (default: <out_dir>/audit-regime-<stream>-<fingerprint>)")
    q.add_argument("--report-only", action="store_true", help="train nothing: report the runs finished so far")
    _add_executor_flags(q)

    q = audit("orders", "Order robustness: each method on canonical, reversed, shuffled and greedy "
              "curriculum orders; the range of Overall across orders.", cmd_audit_orders)
    q.add_argument("items", nargs="*", metavar="CONFIG | key=value")
    q.add_argument("--methods", default="er,tsr", help="comma-separated methods (default er,tsr)")
    q.add_argument("--orders", default="canonical,reversed", help="comma-separated orders: canonical, reversed, "
                   "shuffle:<k>, or an explicit NAME=t1>t2>... naming every task once (default canonical,reversed)")
    q.add_argument("--shuffles", type=int, default=0, metavar="K", help="add K distinct shuffle:k orders, "
                   "k = 0, 1, ... (default 0)")
    q.add_argument("--greedy", metavar="PROBE_DIR", help="add the greedy best-source curriculum of this probe "
                   "folder's transfer matrix and its reversal (needs its target and mixed arms)")
    q.add_argument("--seeds", default="0", help="comma-separated seeds (default 0)")
    q.add_argument("--workers", type=int, default=max(1, os.cpu_count() or 1), help="parallel runs")
    q.add_argument("--out", help="report folder (default: <out_dir>/audit-orders-<stream>-<fingerprint>)")
    q.add_argument("--report-only", action="store_true", help="train nothing: report the runs finished so far")
    _add_executor_flags(q)
