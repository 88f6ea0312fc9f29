"""The probe protocol of the reference paper (§4.1): three kinds of training run per target.

For a target task at budget N, every arm trains a fresh adapter from the shared
initialisation for the same number of steps with the same seeds:

``target``     the N target examples alone;
``full``       10N target examples (a superset of the N, drawn from the same permutation), or
               any other size given (``full_size``: the paper's fixed N_max); since the
               examples are a prefix of one permutation, a full arm of M examples trains
               exactly as the target arm at budget M;
``mixed:J``    a 50/50 mixture of source J's whole pool with the N target examples (each step
               draws its batch from the source with probability 1/2, i.e. ER with alpha = 1/2
               and the source pool as the only replay data);
``random``     the mixed arm of a source drawn uniformly from the other tasks of the probed
               stream (the probe has no order, so every other task counts as a past one;
               ``sources`` limits the mixed arms, not this draw) by a
               generator derived from (seed, purpose, target): :func:`random_source`. It is
               the same training as that source's mixed arm, so a saved twin is copied, not
               rerun. The hindsight oracle is no arm: it is a view of the saved mixed arms
               (:mod:`tsr.analysis.arms`);
``pooled``     pooled mixing (uniform ER): the N target examples mixed 50/50 with the pools of
               every other task of the probed stream, a past task drawn uniformly for each
               replayed batch (ER with alpha = 1/2 over all of them). The paper's NumGLUE
               appendix compares pooling with single-source selection; its budget figure has it
               as the uniform-ER arm.
``init:J``     one-shot parameter carrier: the adapter starts as source J's trained adapter,
               then trains on the N target examples alone (:mod:`tsr.experiments.carriers.arms`);
``anchor:J``   persistent parameter carrier: from the shared initialisation, CE + mu *
               ||theta - theta_J||^2 over every adapter parameter (``mu`` 0.1 unless given;
               the label and file name carry any other mu: ``anchor-mu1:J``).

The source adapter theta_J of both carrier arms is source J's ``full`` arm with M = its whole
pool (:func:`source_job`), trained once per (source, seed) and cached in the probe folder.

Each arm's score on the target's test set is saved as one JSON file, so an interrupted probe
resumes where it stopped; arms fan out over worker processes. :mod:`tsr.analysis.transfer` turns the
saved arms into headroom and the pairwise transfer matrix.

``checkpoints`` also score each arm after those steps, on the way to its last one. The
learning rate is constant and each step's batch draw does not depend on the step count, so
the score after step s of a longer arm is the score of an arm trained for s steps (a test pins
this): one probe measures every budget up to its own.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from ...config import RunConfig, with_method
from ...data.example import Example, Stream, Task
from ...data.sampling import draw_indices
from ...data.streams import load_stream
from ...errors import ConfigError
from ...rng import numpy_rng
from ..carriers import arms as ca

ARMS = ("target", "full", "mixed", "random", "pooled", *ca.CARRIERS)


PAIRED = ("mixed", *ca.CARRIERS)  # arms with one source each, paired with every source asked for


DEFAULT_ARMS = ("target", "full", "mixed")


FULL_FACTOR = 10


@dataclass(frozen=True)
class Job:
    target: str
    arm: str
    seed: int
    source: str | None = None
    size: int | None = None  # a full arm's examples when not 10N
    candidates: tuple[str, ...] = ()  # a random arm's sources to draw from
    mu: float | None = None  # an anchor arm's strength (None: the default, 0.1)

    @property
    def label(self) -> str:
        if self.arm == "full" and self.size is not None:
            return f"full-n{self.size}"
        arm = self.arm
        if arm == "anchor" and self.mu is not None and self.mu != ca.DEFAULT_MU:
            arm = f"anchor-mu{self.mu:g}"
        return arm if self.source is None or arm == "random" else f"{arm}:{self.source}"

    @property
    def key(self) -> str:
        return f"{ca.safe_name(self.target)}__{ca.safe_name(self.label)}__s{self.seed}"


def random_source(seed: int, target: str, candidates: Iterable[str]) -> str:
    """The source of the ``random`` arm of ``target`` at ``seed``: uniform over ``candidates``
    (in the order given), from the generator of (seed, "probe-random-source", target)."""
    candidates = list(candidates)
    if not candidates:
        raise ConfigError(f"the random arm of {target!r} has no source to draw from")
    return candidates[int(numpy_rng(seed, "probe-random-source", target).integers(len(candidates)))]


def plan_jobs(stream: Stream, seeds: Iterable[int], targets: list[str] | None = None,
              sources: list[str] | None = None, arms: Iterable[str] = DEFAULT_ARMS,
              full_size: int | None = None, budget: int | None = None,
              mus: Iterable[float] = (ca.DEFAULT_MU,)) -> list[Job]:
    """Every (target, arm, seed) the probe needs; ``mixed``, ``init`` and ``anchor`` pair each
    target with each source (``anchor`` once per strength in ``mus``), ``random`` draws one
    source per (target, seed). ``full_size`` (with the ``budget``) sets the full arm's
    examples; 10 x budget (or None) is today's full arm."""
    names = stream.names
    for group, label in ((targets, "targets"), (sources, "sources")):
        unknown = [n for n in group or [] if n not in names]
        if unknown:
            raise ConfigError(f"--{label}: unknown task {unknown[0]!r} (tasks: {', '.join(names)})")
    bad = [a for a in arms if a not in ARMS]
    if bad:
        raise ConfigError(f"--arms: unknown arm {bad[0]!r} (valid: {', '.join(ARMS)})")
    arms = list(arms)
    if full_size is not None and budget is not None and full_size == budget * FULL_FACTOR:
        full_size = None  # the same arm as the default full arm: one file
    mus = [float(m) for m in mus]
    if any(m < 0 for m in mus) or not mus:
        raise ConfigError(f"--mu: the anchor strength must be >= 0 (got {', '.join(map(str, mus)) or 'none'})")
    if any(a in arms for a in (*PAIRED, "random", "pooled")) and "target" not in arms:
        arms.insert(0, "target")  # every mixed or carrier arm is measured against its target arm
    jobs = []
    # seed-major: a long probe completes one seed's whole matrix before it starts the next, so a
    # probe cut off part-way leaves complete seeds to read (each arm's result does not depend on
    # the order: its generators are keyed by target, source and seed)
    for seed in seeds:
        for target in targets or names:
            for arm in arms:
                if arm == "anchor":
                    jobs += [Job(target, arm, seed, s, mu=None if m == ca.DEFAULT_MU else m)
                             for s in sources or names if s != target for m in mus]
                elif arm in PAIRED:
                    jobs += [Job(target, arm, seed, s) for s in sources or names if s != target]
                elif arm == "pooled":
                    jobs.append(Job(target, arm, seed, candidates=tuple(s for s in names if s != target)))
                elif arm == "random":
                    # over every other probed task, whatever subset of mixed arms --sources asks for
                    pool = tuple(s for s in names if s != target)
                    jobs.append(Job(target, arm, seed, random_source(seed, target, pool), candidates=pool))
                elif arm == "full":
                    jobs.append(Job(target, arm, seed, size=full_size))
                else:
                    jobs.append(Job(target, arm, seed))
    return jobs


def arm_examples(task: Task, budget: int, arm: str, seed: int, size: int | None = None) -> list[Example]:
    """The target examples an arm trains on: N, or the full arm's 10N (or ``size``), the
    first of one permutation."""
    n = (size or budget * FULL_FACTOR) if arm == "full" else budget
    if n > len(task.pool):
        raise ConfigError(f"task {task.name!r} has {len(task.pool)} training examples; the "
                          f"{arm!r} arm needs {n} (stream.budget={budget})")
    return [task.pool[i] for i in draw_indices(len(task.pool), n, numpy_rng(seed, "budget", task.name))]


def source_job(stream: Stream, source: str, seed: int) -> Job:
    """The training that makes source J's adapter theta_J for the carrier arms: J's ``full``
    arm with M = its whole pool (SeqFT from the seed's shared initialisation, ``train.steps``)."""
    return Job(source, "full", seed, size=len(stream.task(source).pool))


def read_arms(folder: Path, flag: str = "") -> list[dict]:
    """A probe folder's saved arms (``arms/*.json``); a folder without any, or an unreadable arm
    file, is one :class:`ConfigError` line (``flag``, e.g. ``--from``, names where it was given)."""
    folder, where = Path(folder), f"{flag} " if flag else ""
    files = sorted((folder / "arms").glob("*.json")) if (folder / "arms").is_dir() else []
    if not files:
        raise ConfigError(f"{where}{folder}: not a probe folder (no arms/*.json)")
    try:
        return [json.loads(p.read_text(encoding="utf-8")) for p in files]
    except (OSError, ValueError) as e:
        raise ConfigError(f"{where}{folder}/arms: an arm file is not readable JSON ({e})") from None


def load_probe_stream(cfg: RunConfig) -> Stream:
    """The probed tasks, in ``stream.order`` (which tasks the matrix covers, and its row order)."""
    return load_stream(cfg.stream.source, cfg.stream.root, cfg.stream.options, cfg.stream.order, cfg.seed)


def arms_config(cfg: RunConfig) -> RunConfig:
    """What an arm's result depends on. Not the order: an arm trains one target (and one
    source) by name from the shared initialisation, so every order shares one folder of arms."""
    base = dataclasses.replace(with_method(cfg, {"name": "seqft"}), seed=0)
    return dataclasses.replace(base, stream=dataclasses.replace(base.stream, order="canonical"))


def probe_dir(cfg: RunConfig, stream: Stream) -> Path:
    return Path(cfg.out_dir) / f"probe-{stream.name}-{arms_config(cfg).fingerprint()}"
