"""Reliability: SIGKILL `tsr run`, `tsr compare`, `tsr probe` and `tsr learn` at random moments,
resume them, and check that the result equals an uninterrupted run's; then the fault trials of
fault_trials.py (two `tsr learn` calls on one learner at once, two `tsr run` of one run with
different TMPDIRs, symbolic links planted in a run folder, a full and a read-only disk), each
checked the same way after the fault is mended.

Every trial starts a real ``python -m tsr`` command in a fresh folder, in its own process group,
and SIGKILLs the whole group (workers included) at a moment chosen by phase, then runs the same
command again to the end (it must exit 0) and compares the outcome with an uninterrupted
reference of the same command (run once per config and shared by all trials):

- ``run`` trials (a tiny config over three tasks of synth-trace that saves each task's progress
  after every one of its 12 steps but the last, ``train.checkpoint_minutes`` near 0, most of
  them inside a log window of 3 steps; the method rotates over tsr, er,
  seqft, lwf, ewc, derpp and agem, so every method's state goes through a checkpoint and a
  mid-task checkpoint) aim at: start-up (a random delay before the first progress event), the
  folder's creation (as soon as the run folder appears), training (a random delay after a task's
  ``task_start`` event: the resume goes on from the task's last saved progress), a mid-task
  checkpoint being written (as soon as its temporary folder appears), the task-memory
  record (as soon as its temporary folder appears after the task's last ``steps`` event),
  evaluation (a random delay after the record is in place) and checkpoint writing (as soon as the
  temporary checkpoint folder appears); ``twice`` trials kill in training, resume, and kill the
  resumed process again at one of the other moments.
- ``compare`` trials (``tsr compare``, 2 methods x 1 seed, ``--workers 2``) aim at start-up,
  training, checkpoint writing and the final table.
- ``probe`` trials (``tsr probe``, 6 arms, ``--workers 2``) aim at start-up, the arms in progress,
  an arm's JSON being written and the report.
- ``learn`` trials teach a persistent learner (``tsr learn``, the run settings above, TSR) the
  three tasks one call each, and kill one call, drawn at random, in training, in a progress
  write, in its checkpoint or its task-memory record; that call is run again, then the ones
  after it, and the learner's run is compared with an uninterrupted learner's.

The code has no hook to stop at a given line, so the moments come from watching the run folder
(``progress.jsonl``, and the temporary names of ``tsr.atomic`` and the checkpoint and record
writers) with millisecond polling. The phase in the table is where the kill *landed*, read from
the folder after the kill (new events, new temporary entries, the checkpoint's ``completed``),
not where it was aimed. A trial is identical when the resume exits 0, ``results.json`` (matrices,
metrics, routing facts) equals the reference's exactly (the JSON numbers compared as text), probe
arms equal the reference's minus their timing fields, and no temporary entry (a name starting
with ``.``: ``.<file>.*.tmp``, ``.checkpoint.*``, ``.NN-<task>.*``, ``.*.old``) is left in the
folder. Two more columns split that verdict: ``results`` counts trials whose resume exited 0
with results equal to the reference's (temporary entries aside), and ``state`` those whose
checkpoint and task-memory files (probe: arm and report files) are also byte-identical to the
reference's. A kill that came too late (the
command had already ended) is filed as ``missed``; its second run still has to reuse the
finished work and match. Failed trials' folders are kept, with each command's output in
``log.txt``. The exit code is 1 if any trial is not identical.

Usage::

    python stress/reliability.py           # 24 kill trials (12 run, 4 compare, 4 probe, 4 learn), 5 races, 8 faults
    python stress/reliability.py --trials 3 --races 1 --faults 4 --keep --out /tmp/rel --report rel.md
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

from kill_tools import FAST, Proc, canon, dot_entries, read_json, sleep_alive, tsr, wait_for
from fault_trials import Faults, can_mount
from kill_views import ORDER, RunView, compare_runs, leftovers, rank, report, strip_timing
from reliability_parts import (LEARN_CONFIG, PROBE_ARGS, PROBE_ARM_COUNT, RUN_CONFIG, TINY, Reference, Timing, Trial,
                               fault_schedule, missed_kill, resume, run_reference, schedule)

# where several runs were stopped at once (compare), the trial is filed under the most delicate phase
# ---------------------------------------------------------------------------------------------
# references


# ---------------------------------------------------------------------------------------------
# trials


class Harness:
    def __init__(self, out: Path, rng: random.Random):
        self.out, self.rng = out, rng
        self.refs: dict[tuple[str, str], Reference] = {}

    # -- commands ----------------------------------------------------------------------------
    @staticmethod
    def run_argv(method: str, out_dir: Path) -> list[str]:
        return tsr("run", "--quiet", *RUN_CONFIG, f"method.name={method}", f"out_dir={out_dir}")

    @staticmethod
    def compare_argv(pair: tuple[str, str], out_dir: Path) -> list[str]:
        return tsr("compare", "--methods", ",".join(pair), "--seeds", "0", "--workers", "2", *RUN_CONFIG,
                   f"out_dir={out_dir}")

    @staticmethod
    def learn_argv(folder: Path, t: int) -> list[str]:
        return tsr("learn", "--quiet", str(folder), f"synth-trace:{ORDER[t]}", *LEARN_CONFIG)

    def probe_argv(self, out: Path) -> list[str]:
        # one out_dir for all (the probe writes only under --out, and config.yaml records out_dir)
        return tsr("probe", "--workers", "2", *PROBE_ARGS, "--out", str(out), *TINY, f"out_dir={self.out / 'unused'}")

    def reference(self, kind: str, config: str) -> Reference:
        key = (kind, config)
        if key not in self.refs:
            folder = self.out / "refs" / f"{kind}-{config}"
            if kind == "run":
                argv = self.run_argv(config, folder / "runs")
            elif kind == "compare":
                argv = self.compare_argv(tuple(config.split(",")), folder / "runs")
            elif kind == "learn":
                argv = self.learn_argv(folder / "learner", 0)
            else:
                argv = self.probe_argv(folder / "probe")
            more = [self.learn_argv(folder / "learner", t) for t in range(1, len(ORDER))] if kind == "learn" else []
            ref = run_reference(folder, argv, kind, more)
            print(f"  reference {kind} {config}: {ref.seconds:.1f} s", file=sys.stderr, flush=True)
            self.refs[key] = ref
        return self.refs[key]

    # -- tsr run -----------------------------------------------------------------------------
    def aim_run(self, proc: Proc, view: RunView, aim: str, t: int, timing: Timing) -> bool:
        """Kill ``proc`` at the moment ``aim`` of task ``t``; False if it exited first."""
        rng = self.rng
        if aim == "startup":
            sleep_alive(proc, rng.uniform(0.2, 0.95 * timing.first))
        elif aim == "create":
            # the run folder is being built under its temporary name (tsr.engine.rundir.RunDir.create)
            if not wait_for(proc, lambda: view.creating() or (view.path.is_dir() and any(view.path.iterdir())), FAST):
                return False
        elif aim == "training":
            if not wait_for(proc, lambda: view.events.has("task_start", t)):
                return False
            sleep_alive(proc, rng.uniform(0, timing.train[t]))
        elif aim == "progress":
            if not (wait_for(proc, lambda: view.events.has("task_start", t))
                    and wait_for(proc, view.progress_open, FAST)):
                return False
            sleep_alive(proc, rng.uniform(0, 0.002))
        elif aim == "record":
            if not (wait_for(proc, lambda: view.last_step(t), 0.003)
                    and wait_for(proc, lambda: view.record_open() or view.record_written(t), FAST)):
                return False
        elif aim == "eval":
            if not (wait_for(proc, lambda: view.last_step(t), 0.003)
                    and wait_for(proc, lambda: view.record_written(t), FAST)):
                return False
            sleep_alive(proc, rng.uniform(0, 0.6 * timing.post[t]))
        elif aim == "checkpoint":
            if not (wait_for(proc, lambda: view.last_step(t), 0.003)
                    and wait_for(proc, view.checkpoint_open, FAST)):
                return False
            sleep_alive(proc, rng.uniform(0, 0.002))
        else:
            raise ValueError(aim)
        if not proc.alive():
            return False
        proc.kill()
        return True

    def run_trial(self, trial: Trial) -> None:
        ref = self.reference("run", trial.config)
        (name, ref_run), = ref.runs.items()
        out_dir = trial.folder / "runs"
        run_path = out_dir / name
        argv = self.run_argv(trial.config, out_dir)
        log = trial.folder / "log.txt"
        k = len(ORDER)
        aims = [("training", self.rng.randrange(k - 1))] if trial.aim == "twice" else []
        second = (self.rng.choice(("startup", "progress", "record", "eval", "checkpoint")) if trial.aim == "twice"
                  else trial.aim)
        aims.append((second, None))
        for aim, t in aims:
            view = RunView(run_path)
            done = view.completed() if run_path.exists() else 0
            if done >= k:
                break
            if t is None:
                t = self.rng.randrange(done, k)
            proc = Proc(argv, log, trial.folder)
            if self.aim_run(proc, view, aim, t, ref.timing):
                trial.kills.append(view.classify())
            elif missed_kill(trial, proc, log, aim):
                return
        if not resume(trial, argv, log):
            return
        problems, trial.state_same = compare_runs(ref_run, run_path)
        trial.problems += problems
        trial.leftover += [f"{name}/{d}" for d in leftovers(run_path)]
        trial.problems += [f"stray entry in out_dir: {p.name}" for p in out_dir.iterdir() if p.name not in (name, "index.sqlite")]

    # -- tsr compare -------------------------------------------------------------------------
    def compare_trial(self, trial: Trial) -> None:
        ref = self.reference("compare", trial.config)
        out_dir = trial.folder / "runs"
        argv = self.compare_argv(tuple(trial.config.split(",")), out_dir)
        log = trial.folder / "log.txt"
        views = [RunView(out_dir / name) for name in ref.runs]
        proc = Proc(argv, log, trial.folder)
        rng, timing, k = self.rng, ref.timing, len(ORDER)
        t = rng.randrange(k)
        reached = True
        if trial.aim == "startup":
            sleep_alive(proc, rng.uniform(0.3, 0.95 * timing.first))
        elif trial.aim == "training":
            reached = wait_for(proc, lambda: any(v.events.has("task_start", t) for v in views))
            sleep_alive(proc, rng.uniform(0, timing.train[t]))
        elif trial.aim == "checkpoint":
            reached = (wait_for(proc, lambda: any(v.last_step(t) for v in views), 0.003)
                       and wait_for(proc, lambda: any(v.checkpoint_open() for v in views), FAST))
        elif trial.aim == "table":
            reached = wait_for(proc, lambda: all(v.events.has("run_end") for v in views), 0.003)
            sleep_alive(proc, rng.uniform(0, 0.5 * timing.tail))  # the tail includes the interpreter's exit
        if reached and proc.alive():
            proc.kill()
            phases = [v.classify() for v in views]
            if all(p == "finish" for p in phases):
                phases = ["table"]
            trial.kills.append(rank(phases))
        elif missed_kill(trial, proc, log):
            return
        if not resume(trial, argv, log):
            return
        same = []
        for name, ref_run in ref.runs.items():
            problems, state = compare_runs(ref_run, out_dir / name)
            trial.problems += problems
            same.append(state)
        trial.state_same = all(same)
        trial.leftover += leftovers(out_dir)
        trial.problems += [f"stray entry in out_dir: {p.name}" for p in out_dir.iterdir() if p.name not in ref.runs and p.name != "index.sqlite"]

    # -- tsr learn ---------------------------------------------------------------------------
    def learn_trial(self, trial: Trial) -> None:
        """Teach a learner the three tasks one call each; one call, drawn at random, is killed at
        the aimed moment and run again (unless it had finished), then the calls after it run."""
        ref = self.reference("learn", trial.config)
        folder, log = trial.folder / "learner", trial.folder / "log.txt"
        victim = self.rng.randrange(len(ORDER))
        for t in range(len(ORDER)):
            argv = self.learn_argv(folder, t)
            if t == victim:
                view = RunView(folder / "run")
                proc = Proc(argv, log, trial.folder)
                if self.aim_run(proc, view, trial.aim, t, ref.timing):
                    trial.kills.append(view.classify())
                elif missed_kill(trial, proc, log, trial.aim):
                    return
                else:
                    continue  # the call had finished: running it again would teach the task twice
            if not resume(trial, argv, log):
                return
        problems, trial.state_same = compare_runs(ref.runs["run"], folder / "run")
        trial.problems += problems
        trial.leftover += [f"learner/{d}" for d in leftovers(folder)]

    # -- tsr probe ---------------------------------------------------------------------------
    def probe_trial(self, trial: Trial) -> None:
        ref = self.reference("probe", trial.config)
        out = trial.folder / "probe"
        argv = self.probe_argv(out)
        log = trial.folder / "log.txt"
        arms_dir = out / "arms"
        saved = lambda: len(list(arms_dir.glob("*.json"))) if arms_dir.is_dir() else 0  # noqa: E731
        arm_open = lambda: arms_dir.is_dir() and any(p.name.startswith(".") for p in arms_dir.iterdir())  # noqa: E731
        proc = Proc(argv, log, trial.folder)
        rng, timing = self.rng, ref.timing
        reached = True
        if trial.aim == "startup":
            sleep_alive(proc, rng.uniform(0.2, 0.3 * timing.first))  # workers spawn early
        elif trial.aim == "arms":
            n = rng.randrange(PROBE_ARM_COUNT - 1)
            reached = wait_for(proc, lambda: saved() >= n)
            sleep_alive(proc, rng.uniform(0, timing.arm if n else timing.first * 0.5))
        elif trial.aim == "arm-write":
            n = rng.randrange(PROBE_ARM_COUNT)
            reached = wait_for(proc, lambda: saved() >= n) and wait_for(proc, arm_open, FAST)
        elif trial.aim == "report":
            reached = wait_for(proc, lambda: saved() >= PROBE_ARM_COUNT, 0.003)
            sleep_alive(proc, rng.uniform(0, 0.6 * timing.tail))  # the tail includes the interpreter's exit
        if reached and proc.alive():
            proc.kill(count_members=True)
            report_tmp = [d for d in dot_entries(out) if not d.startswith("arms/")]
            if any(d.startswith("arms/.") for d in dot_entries(out)):
                phase = "arm-write"
            elif report_tmp or saved() >= PROBE_ARM_COUNT:
                phase = "report"
            elif proc.members_at_kill > 1:
                phase = "arms"
            else:
                phase = "startup"
            trial.kills.append(phase)
        elif missed_kill(trial, proc, log):
            return
        if not resume(trial, argv, log):
            return
        ref_out = ref.folder / "probe"
        ref_files = sorted(str(p.relative_to(ref_out)) for p in ref_out.rglob("*") if p.is_file())
        got_files = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
        if [f for f in got_files if not f.split("/")[-1].startswith(".")] != ref_files:
            trial.problems.append(f"files differ from the reference's: {sorted(set(ref_files) ^ set(got_files))}")
        for f in ref_files:
            a, b = ref_out / f, out / f
            if not b.is_file() or f.endswith(".png"):
                continue
            if f.endswith(".json"):
                if canon(strip_timing(read_json(a))) != canon(strip_timing(read_json(b))):
                    trial.problems.append(f"{f} differs from the reference's (timing fields aside)")
            elif a.read_bytes() != b.read_bytes():
                trial.problems.append(f"{f} differs from the reference's")
        trial.state_same = not trial.problems   # the arms and report files (compared above)
        trial.leftover += leftovers(out)


# ---------------------------------------------------------------------------------------------
# schedule and report


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trials", type=int, default=24,
                    help="trials in all (default 24: 12 run, 4 compare, 4 probe, 4 learn)")
    ap.add_argument("--races", type=int, default=5, help="concurrent-learner trials (default 5)")
    ap.add_argument("--faults", type=int, default=8, help="TMPDIR-lock, symlink, full- and read-only-disk trials, "
                    "in turn (default 8)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the random moments and the schedule")
    ap.add_argument("--out", help="scratch folder (default: a temporary folder)")
    ap.add_argument("--keep", action="store_true", help="keep the scratch folder (failed trials are always kept)")
    ap.add_argument("--report", help="also write the table as markdown to this file")
    args = ap.parse_args(argv)
    if min(args.trials, args.races, args.faults) < 0 or args.trials + args.races + args.faults < 1:
        ap.error("--trials, --races and --faults must be >= 0, and one of them >= 1")
    rng = random.Random(args.seed)
    if args.out:
        out = Path(args.out).resolve()
        if out.exists() and any(out.iterdir()):
            ap.error(f"--out {out}: exists and is not empty")
        out.mkdir(parents=True, exist_ok=True)
    else:
        out = Path(tempfile.mkdtemp(prefix="tsr-reliability-"))
    started = time.time()
    harness = Harness(out, rng)
    faults = Faults(harness, can_mount(out))
    print(f"  full and read-only disks: {'tmpfs mounts' if faults.mounting else 'injected faults (no mount here)'}",
          file=sys.stderr, flush=True)
    plan = schedule(args.trials, rng) + fault_schedule(args.races, args.faults)
    trials: list[Trial] = []
    for i, (kind, config, aim) in enumerate(plan):
        trial = Trial(i, kind, config, aim, out / "trials" / f"{i:03d}-{kind}-{config.replace(',', '+')}-{aim}")
        trial.folder.mkdir(parents=True)
        began = time.time()
        (getattr(harness, f"{kind}_trial", None) or getattr(faults, f"{kind}_trial"))(trial)
        trial.seconds = time.time() - began
        trials.append(trial)
        verdict = "identical" if trial.identical else "NOT IDENTICAL"
        print(f"[{i + 1}/{len(plan)}] {kind} {config}: aimed {aim}, landed {trial.phase}; resume exit {trial.rc}; "
              f"{verdict}{' (state files differ)' if trial.rc == 0 and not trial.state_same else ''}; "
              f"{trial.seconds:.0f} s",
              file=sys.stderr, flush=True)
        for p in trial.messages():
            print(f"    {p}", file=sys.stderr, flush=True)
    failed = report(trials, args.seed, time.time() - started, args.report)
    if not args.keep:
        shutil.rmtree(out / "refs", ignore_errors=True)
        for t in trials:
            if t.identical:
                shutil.rmtree(t.folder, ignore_errors=True)
        if not failed:
            shutil.rmtree(out / "trials", ignore_errors=True)
            if not args.out:
                shutil.rmtree(out, ignore_errors=True)
    return 0 if not failed else 1


if __name__ == "__main__":
    sys.exit(main())
