"""The predictions of a run made without them, decoded afterwards from its task snapshots
(``tsr audit answers RUN_DIR decode=true``).

Every finished task leaves the adapter it ended on in the task memory
(``memory/NN-<task>/snapshot.safetensors``). Loaded into the run's base in turn, each gives the
model that was scored after that task, so each scoring round can be decoded again: after task
``t`` every task up to ``t`` (the ``eval.schedule=full`` rows; with ``all_tasks`` every task),
written as ``<run>/decoded/after-NN-<task>/NN-<scored>.jsonl`` in the layout of
``predictions/`` (:mod:`tsr.engine.predict`). The run's own files are only read.

A round is trusted only where it reproduces the run: every teacher-forced accuracy the run
recorded for that round must come out equal, or the round is refused (a method whose scoring
model is more than its snapshot, or a base that changed). A round folder already decoded is
kept, so an interrupted decoding goes on where it stopped.
"""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path
from typing import Callable

from ...cl.memory import load_snapshot, record_dir
from ...errors import RunError, reason
from ...runs.results import load_results
from ...engine.export import completed_tasks, run_settings
from ...engine.predict import predict_tasks, round_folder
from ...engine.rundir import RunDir

DECODED = "decoded"


def decode_rounds(run_dir: Path, all_tasks: bool = False, threads: int = 0,
                  say: Callable[[str], None] = lambda _: None) -> Path:
    """Decode every finished round of ``run_dir`` into ``run_dir/decoded`` and return that folder.
    ``threads``: CPU threads of the model (0: the run's own); ``say`` hears one line per round."""
    from ...engine.run import prepare  # loads torch and the model stack: only when decoding

    run = RunDir(Path(run_dir))
    if not run.exists():
        raise RunError(f"{run_dir}: not a tsr run directory (no run.json)")
    cfg = run_settings(run)
    done = completed_tasks(run)
    if done == 0:
        raise RunError(f"{run.path}: no task has finished with a checkpoint (a run restored by `tsr archive "
                       "--restore` keeps no snapshots); there is nothing to decode")
    results = load_results(run.results_path)
    if threads:
        cfg = dataclasses.replace(cfg, model=dataclasses.replace(cfg.model, threads=threads))
    plan, _ = prepare(cfg)
    names, ev, root = plan.stream.names, cfg.eval, run.path / DECODED
    for t in range(min(done, results.completed)):
        folder = round_folder(root, t, names[t])
        if folder.is_dir():
            say(f"after {names[t]}: decoded before, kept")
            continue
        snapshot = record_dir(run.memory_root, t, names[t])
        try:
            plan.learner.adapter.load(load_snapshot(snapshot, run.sealed_format()))
        except (OSError, ValueError, TypeError, KeyError) as err:
            raise RunError(f"{snapshot}: the snapshot cannot be read ({reason(err)})") from None
        indices = list(range(len(names))) if all_tasks else list(range(t + 1))
        scores = predict_tasks(plan.learner, plan.stream, plan.tests, indices, folder, ev.batch_size,
                               ev.extra_tokens, ev.logits_mb)
        differ = [(i, results.acc[t][i], scores[i].acc) for i in indices
                  if results.acc[t][i] is not None and results.acc[t][i] != scores[i].acc]
        if differ:
            shutil.rmtree(folder)
            if not any(root.iterdir()):
                root.rmdir()
            i, recorded, found = differ[0]
            raise RunError(f"{snapshot}: scores {names[i]!r} {found:.4f} where the run recorded {recorded:.4f} "
                           f"after task {t + 1}; this run's scoring model is not its snapshot alone "
                           f"(method {cfg.method.name}), so its answers cannot be decoded from it")
        say(f"after {names[t]}: {len(indices)} test sets decoded, the run's accuracies reproduced")
    return root
