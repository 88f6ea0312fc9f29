"""The reliability harness's parts (stress/reliability.py): what is run, the uninterrupted
references the killed runs are compared with, one trial's record, and the trial schedules."""

from __future__ import annotations

import random
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path

from kill_tools import Events, Proc
from kill_views import ORDER, STEPS

TINY = ["model.compile=false", "model.threads=1", "stream.budget=4", f"train.steps={STEPS}", "stream.test_cap=8"]


# progress saved after steps 1-11 of every task (the interval has always passed): two in three
# inside an open log window, which the resume must log whole
RUN_CONFIG = TINY + [f"stream.order=[{','.join(ORDER)}]", "log.every=3", "train.checkpoint_minutes=1e-9"]


RUN_METHODS = ("tsr", "er", "seqft", "lwf", "ewc", "derpp", "agem")


RUN_PHASES = ("startup", "create", "training", "progress", "record", "eval", "checkpoint", "twice")


COMPARE_PAIRS = (("tsr", "ewc"), ("er", "derpp"))


COMPARE_PHASES = ("training", "checkpoint", "startup", "table")


PROBE_ARGS = ["--targets", "stance,summary", "--sources", "arith-cm", "--arms", "target,full,mixed"]


PROBE_ARM_COUNT = 6


PROBE_PHASES = ("arms", "report", "startup", "arm-write")


# tsr learn: the learner is made by its first call with these settings (progress saved as for runs)
LEARN_CONFIG = TINY + ["log.every=3", "train.checkpoint_minutes=1e-9"]


LEARN_PHASES = ("training", "progress", "checkpoint", "record")


@dataclass
class Timing:
    first: float                  # launch to the first sign of work (event, run folder, arm)
    train: list[float]            # per task: task_start to its last steps event
    post: list[float]             # per task: last steps event to task_end (record, eval, checkpoint)
    tail: float                   # the last work to the process's exit (table, report)
    arm: float = 0.0              # probe: median gap between arms


@dataclass
class Reference:
    folder: Path
    seconds: float
    timing: Timing
    runs: dict[str, Path] = field(default_factory=dict)   # run folder name -> path


def task_times(events: list[dict]) -> tuple[list[float], list[float], float, float]:
    times = {(e["event"], e.get("task")): e["time"] for e in events if "time" in e}
    train = [times[("steps", t)] - times[("task_start", t)] for t in range(len(ORDER))]
    post = [times[("task_end", t)] - times[("steps", t)] for t in range(len(ORDER))]
    return train, post, min(e["time"] for e in events), times[("run_end", None)]


def run_reference(root: Path, argv: list[str], kind: str, more: list[list[str]] = ()) -> Reference:
    """The uninterrupted command (and, for a learner, the calls after it) and its timing."""
    root.mkdir(parents=True)
    proc = Proc(argv, root / "log.txt", root)
    rc = proc.wait()
    for then in more:
        rc = rc or Proc(then, root / "log.txt", root).wait()
    ended = time.time()
    if rc != 0:
        raise SystemExit(f"reference {' '.join(argv)} failed (exit {rc}); see {root / 'log.txt'}")
    if kind == "probe":
        arms = sorted(p.stat().st_mtime for p in (root / "probe" / "arms").glob("*.json"))
        gaps = [b - a for a, b in zip(arms, arms[1:])] or [1.0]
        timing = Timing(arms[0] - proc.started, [], [], ended - arms[-1], statistics.median(gaps))
        return Reference(root, ended - proc.started, timing)
    runs = {p.parent.name: p.parent for p in (root / ("learner" if kind == "learn" else "runs")).glob("*/results.json")}
    trains, posts, firsts, lasts = [], [], [], []
    for path in runs.values():
        train, post, first, last = task_times(_all_events(path))
        trains.append(train)
        posts.append(post)
        firsts.append(first)
        lasts.append(last)
    k = len(ORDER)
    timing = Timing(min(firsts) - proc.started, [max(tr[t] for tr in trains) for t in range(k)],
                    [max(po[t] for po in posts) for t in range(k)], ended - max(lasts))
    return Reference(root, ended - proc.started, timing, runs)


def _all_events(run: Path) -> list[dict]:
    events = Events(run / "progress.jsonl")
    events.offset = 0
    return events.update()


def missed_kill(trial: "Trial", proc: Proc, log: Path, aim: str | None = None) -> bool:
    """After a kill that came too late: True (and the trial marked failed) when the command
    had exited with an error by itself."""
    rc = proc.wait()
    if rc == 0:
        return False
    trial.rc = rc
    trial.problems.append(f"the command exited {rc} before the kill{f' ({aim})' if aim else ''}; see {log}")
    return True


def resume(trial: "Trial", argv: list[str], log: Path) -> bool:
    """Run the command again to its end; True when it exited 0."""
    trial.rc = Proc(argv, log, trial.folder).wait()
    if trial.rc != 0:
        trial.problems.append(f"resume exited {trial.rc}; see {log}")
    return trial.rc == 0


@dataclass
class Trial:
    index: int
    kind: str
    config: str       # method, method pair or probe
    aim: str
    folder: Path
    kills: list[str] = field(default_factory=list)
    rc: int | None = None
    problems: list[str] = field(default_factory=list)     # exit codes, results that differ
    leftover: list[str] = field(default_factory=list)     # temporary entries left in the folder
    state_same: bool = False
    seconds: float = 0.0

    @property
    def phase(self) -> str:
        return "+".join(self.kills) if self.kills else "missed"

    def messages(self) -> list[str]:
        return self.problems + [f"temporary entry left: {d}" for d in self.leftover]

    @property
    def results_same(self) -> bool:
        return self.rc == 0 and not self.problems

    @property
    def identical(self) -> bool:
        return self.results_same and not self.leftover


def schedule(trials: int, rng: random.Random) -> list[tuple[str, str, str]]:
    """(kind, config, aimed phase) per trial: of every six, three runs, one compare, one probe and
    one learner."""
    pattern = ("run", "compare", "probe", "run", "learn", "run")
    methods = list(RUN_METHODS)
    rng.shuffle(methods)
    counts = {"run": 0, "compare": 0, "probe": 0, "learn": 0}
    plan = []
    for i in range(trials):
        kind = pattern[i % len(pattern)]
        n = counts[kind]
        counts[kind] += 1
        if kind == "run":
            # 7 methods and 8 phases rotate together: no (method, phase) pair repeats within 56 trials
            plan.append((kind, methods[n % len(methods)], RUN_PHASES[n % len(RUN_PHASES)]))
        elif kind == "compare":
            pair = COMPARE_PAIRS[n % len(COMPARE_PAIRS)]
            plan.append((kind, ",".join(pair), COMPARE_PHASES[n % len(COMPARE_PHASES)]))
        elif kind == "learn":
            plan.append((kind, "learner", LEARN_PHASES[n % len(LEARN_PHASES)]))
        else:
            plan.append((kind, "probe", PROBE_PHASES[n % len(PROBE_PHASES)]))
    return plan


def fault_schedule(races: int, faults: int) -> list[tuple[str, str, str]]:
    """(kind, config, aim) of the fault trials (fault_trials.py): ``races`` concurrent learners,
    then ``faults`` trials rotating over TMPDIR locks, symbolic links, full and read-only disks."""
    kinds, methods = ("tmpdir", "links", "full", "readonly"), ("tsr", "er", "seqft", "lwf", "ewc", "derpp", "agem")
    plan = [("race", "learner", "race") for _ in range(races)]
    return plan + [(kinds[i % 4], methods[i % len(methods)], kinds[i % 4]) for i in range(faults)]
