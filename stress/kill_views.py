"""What a killed run folder shows (stress/reliability.py): where in the run a kill landed, read from
the folder afterwards, and whether the resumed run equals the uninterrupted reference."""

from __future__ import annotations

from pathlib import Path

from kill_tools import Events, canon, dot_entries, read_json, stat_key

STEPS = 12                                      # steps per task of the trial configs
ORDER = ("stance", "summary", "arith-cm")      # classification, generation, classification
TIMING_KEYS = {"seconds", "checkpoint_seconds"}
PRIORITY = ("checkpoint", "progress", "record", "create", "results", "eval", "arm-write", "report", "end_task", "training",
            "begin_task", "table", "arms", "startup", "finish", "missed")


# ---------------------------------------------------------------------------------------------
# watching folders (the process and polling helpers are in kill_tools.py)


def record_name(t: int) -> str:
    return f"{t:02d}-{ORDER[t]}"


class RunView:
    """One process's view of one run folder: what it appended and created after it started."""

    def __init__(self, path: Path):
        self.path = path
        self.events = Events(path / "progress.jsonl")
        self.dots_before = dot_entries(path)
        self.records_before = {t: stat_key(path / "memory" / record_name(t)) for t in range(len(ORDER))}

    def creating(self) -> bool:
        """The run folder's temporary build folder exists (``.<name>.<random>.tmp``)."""
        return any(self.path.parent.glob(f".{self.path.name}.*.tmp")) if self.path.parent.is_dir() else False

    def new_dots(self) -> set[str]:
        return dot_entries(self.path) - self.dots_before

    def last_step(self, t: int) -> bool:
        return self.events.has("steps", t, step=STEPS)

    def record_written(self, t: int) -> bool:
        now = stat_key(self.path / "memory" / record_name(t))
        return now is not None and now != self.records_before[t]

    def checkpoint_open(self) -> bool:
        return any(Path(d).name.startswith(".checkpoint.") and not d.endswith(".old") for d in self.new_dots())

    def progress_open(self) -> bool:
        """A mid-task checkpoint is being written (``.progress.<random>.tmp``, or the swap's
        ``.progress.old``)."""
        return any(Path(d).name.startswith(".progress.") for d in self.new_dots())

    def record_open(self) -> bool:
        return any(d.startswith("memory/.") for d in self.new_dots())

    def completed(self) -> int:
        for folder in ("checkpoint", ".checkpoint.old"):
            state = read_json(self.path / folder / "state.json")
            if state is not None:
                return int(state["completed"])
        return 0

    def classify(self) -> str:
        """Where in the run a kill landed, read from the folder afterwards."""
        if not (self.path / "run.json").is_file():
            return "create" if self.path.exists() or self.creating() else "startup"
        events = self.events.update()
        if not any(e.get("event") in ("run_start", "resume") for e in events):
            return "startup" if not self.new_dots() and (self.path / "progress.jsonl").is_file() else "create"
        dots = self.new_dots()
        if any(Path(d).name.startswith(".checkpoint.") for d in dots):
            return "checkpoint"
        if any(d.startswith("memory/.") for d in dots):
            return "record"
        if any(Path(d).name.startswith(".progress.") for d in dots):
            return "progress"
        if any(Path(d).name.startswith(".results.json.") for d in dots):
            return "results"
        last = events[-1]
        kind, t = last.get("event"), last.get("task")
        if kind in ("run_start", "resume"):
            return "begin_task"
        if kind == "task_start" or (kind == "steps" and last.get("step") != STEPS):
            return "training"
        if kind == "steps":
            if not self.record_written(t):
                return "end_task"
            if self.completed() < t + 1:
                return "eval"
            return "results"
        if kind == "task_end":
            return "finish" if t == len(ORDER) - 1 else "begin_task"
        return "finish"


def rank(phases: list[str]) -> str:
    return min(phases, key=lambda p: PRIORITY.index(p) if p in PRIORITY else len(PRIORITY))


# ---------------------------------------------------------------------------------------------
# comparing with references


def strip_timing(obj):
    if isinstance(obj, dict):
        return {k: strip_timing(v) for k, v in obj.items() if k not in TIMING_KEYS}
    if isinstance(obj, list):
        return [strip_timing(v) for v in obj]
    return obj


def compare_runs(ref: Path, got: Path) -> tuple[list[str], bool]:
    """Differences of results.json (failures), and whether the saved state is byte-identical."""
    problems = []
    a, b = read_json(ref / "results.json"), read_json(got / "results.json")
    if b is None:
        return [f"{got.name}: no readable results.json"], False
    for key in sorted(set(a) | set(b)):
        if canon(a.get(key)) != canon(b.get(key)):
            problems.append(f"{got.name}: results.json[{key!r}] differs: {canon(b.get(key))[:200]} "
                            f"vs reference {canon(a.get(key))[:200]}")
    files = state_files(ref)
    same = files == state_files(got) and all((ref / f).read_bytes() == (got / f).read_bytes() for f in files)
    return problems, same


def state_files(root: Path) -> list[str]:
    """The checkpoint's and the task memory's files (temporary entries aside: reported apart)."""
    found = []
    for sub in ("checkpoint", "memory"):
        for p in (root / sub).rglob("*"):
            rel = p.relative_to(root)
            if p.is_file() and not any(part.startswith(".") for part in rel.parts):
                found.append(str(rel))
    return sorted(found)


def leftovers(root: Path) -> list[str]:
    return sorted(dot_entries(root))


# ---------------------------------------------------------------------------------------------
# the report

KINDS = ("run", "compare", "probe", "learn", "race", "tmpdir", "links", "full", "readonly")


def table(trials: list) -> list[tuple[str, str, int, int, int, int]]:
    """Rows (kind, phase, trials, identical, results, state) of the trials, in a fixed order."""
    rows: dict[tuple[str, str], list] = {}
    for tr in trials:
        rows.setdefault((tr.kind, tr.phase), []).append(tr)
    order = {k: i for i, k in enumerate(KINDS)}
    keyed = sorted(rows.items(), key=lambda kv: (order[kv[0][0]], [PRIORITY.index(p) if p in PRIORITY else 99
                                                                   for p in kv[0][1].split("+")]))
    return [(kind, phase, len(ts), sum(t.identical for t in ts), sum(t.results_same for t in ts),
             sum(t.state_same for t in ts))
            for (kind, phase), ts in keyed]


def report(trials: list, seed: int, wall: float, markdown: str | None) -> list:
    """Print the table (and write it as markdown to ``markdown``); returns the failed trials."""
    rows, ok = table(trials), sum(t.identical for t in trials)
    print(f"# reliability: {len(trials)} trials, seed {seed}, {wall:.0f} s wall")
    print(f"{'kind':8} {'phase':24} {'trials':>6} {'identical':>9} {'results':>7} {'state':>6}")
    for kind, phase, n, same, res, state in rows:
        print(f"{kind:8} {phase:24} {n:6d} {same:9d} {res:7d} {state:6d}")
    print(f"identical {ok} / run {len(trials)}")
    failed = [t for t in trials if not t.identical]
    for t in failed:
        print(f"  trial {t.index} ({t.kind} {t.config}, {t.phase}): {t.folder}")
        for p in t.messages():
            print(f"    {p}")
    if markdown:
        lines = [f"Reliability: {len(trials)} trials, seed {seed}, {wall:.0f} s wall.", "",
                 "| kind | phase | trials | identical | results | state |", "|---|---|---:|---:|---:|---:|"]
        lines += [f"| {kind} | {phase} | {n} | {same} | {res} | {state} |" for kind, phase, n, same, res, state in rows]
        lines += ["", f"identical {ok} / run {len(trials)}"]
        for t in failed:
            lines += ["", f"- trial {t.index} ({t.kind} {t.config}, {t.phase}):"] + [f"  - {p}" for p in t.messages()]
        Path(markdown).write_text("\n".join(lines) + "\n")
    return failed
