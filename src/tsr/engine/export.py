"""Exporting a run's adapter for use outside tsr: a PEFT LoRA adapter folder, or the base model
with the adapter merged into its weights.

The adapter exported is the run's final one (``checkpoint/adapter.safetensors``: after the
last finished task) or the snapshot a task left in the task memory
(``memory/NN-<task>/snapshot.safetensors``). The run folder is only read. Everything is
checked, and a merged model computed, before anything is written; the output folder is built
under a temporary name beside it and renamed into place, so a failure or a kill leaves no
output folder (a temporary one a kill left is removed by the next export to that name).
"""

from __future__ import annotations

import json
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from safetensors import SafetensorError

from ..atomic import settle, temp_dir, write_text
from ..cl.memory import load_snapshot, record_dir
from ..config import RunConfig, from_plain
from ..data.records import read_yaml
from ..errors import RunError, TsrError, reason
from ..model import export as peft_export
from ..model.backbone import pretrained_args, resolve_source
from ..model.settings import ModelConfig
from ..runs.folders import refuse_own_file
from .hub import check_repo, push_folder
from .model_card import model_card
from ..runs.results import Results, load_results
from .run import portable_fingerprint
from .rundir import RunDir


@dataclass
class Exported:
    """What :func:`export_run` wrote."""

    out: Path
    what: str              # "the final adapter (after task 3 of 3)", "the snapshot of task 1 'parity'"
    merged: bool
    r: int
    alpha: float
    pairs: int             # LoRA pairs summed into the one written (O-LoRA: one per task)
    modules: int
    base: str              # base_model_name_or_path: a local folder (absolute) or a hub id
    pushed: str | None = None  # the hub commit's URL, with push_to_hub

    def summary(self) -> str:
        if self.merged:
            text = f"{self.out}: {self.what} merged into {self.base} (a full model)"
        else:
            stacked = f", {self.pairs} task pairs stacked" if self.pairs > 1 else ""
            text = (f"{self.out}: {self.what} as a PEFT LoRA adapter (r {self.r}, alpha {self.alpha:g}{stacked}, "
                    f"{self.modules} modules) for {self.base}")
        return text + (f"; pushed to the hub: {self.pushed}" if self.pushed else "")


def task_index(spec: str, tasks: list[str], where: Path) -> int:
    """The 0-based position of task ``spec``: a task's name, else its position counted from 1."""
    if spec in tasks:
        return tasks.index(spec)
    text = spec.strip()
    if text.isascii() and text.isdigit() and 1 <= int(text) <= len(tasks):  # not '²', which int() refuses
        return int(text) - 1
    listing = ", ".join(f"{i} {name}" for i, name in enumerate(tasks, 1))
    raise RunError(f"{where}: no task {spec!r} (give a position from 1 or a name: {listing})")


def completed_tasks(run: RunDir) -> int:
    """How many tasks the run has finished (its checkpoint's count; 0 without a checkpoint)."""
    for folder in (run.path / "checkpoint", run.path / ".checkpoint.old"):  # .old: a kill during the swap
        state = folder / "state.json"
        if state.is_file():
            try:
                return int(json.loads(state.read_text(encoding="utf-8"))["completed"])
            except (OSError, ValueError, KeyError, TypeError) as err:
                raise RunError(f"{state}: corrupt checkpoint ({reason(err)})") from None
    return 0


def run_settings(run: RunDir, trust_remote_code: bool = False) -> RunConfig:
    """The run's config, from its ``config.yaml``, which must be
    the config its fingerprint (``run.json``) names. A config that runs the model's own code
    (``model.trust_remote_code``) needs the caller's ``trust_remote_code``."""
    path = run.path / "config.yaml"
    data = read_yaml(path, RunError) if path.is_file() else None
    if not isinstance(data, dict):
        raise RunError(f"{path}: {'missing' if data is None else 'not a run config'} (the run's config is needed "
                       "to know its base model and LoRA settings)")
    try:
        cfg = from_plain(data)
    except TsrError as err:
        raise RunError(f"{path}: {err}") from None
    recorded = run.meta().get("fingerprint")
    if recorded not in (cfg.fingerprint(), portable_fingerprint(cfg)):
        raise RunError(f"{path}: is not the config this run was made with (its fingerprint is {cfg.fingerprint()}, "
                       f"run.json records {recorded}); restore it, or export from the run's own folder")
    if cfg.model.trust_remote_code and not trust_remote_code:
        raise RunError(f"{path}: the run's model runs its own code (model.trust_remote_code: true); pass "
                       f"--trust-remote-code if you trust the code of {cfg.model.path}")
    return cfg


def check_out(out: Path) -> None:
    refuse_own_file(out)
    if out.exists() and not out.is_dir():
        raise TsrError(f"{out}: exists and is not a folder; choose another --out")
    if out.is_dir() and any(out.iterdir()):
        raise TsrError(f"{out}: exists and is not empty; choose another --out")


def export_run(run_dir: Path, out: Path, task: str | None = None, merge: bool = False,
               trust_remote_code: bool = False, push_to_hub: str | None = None, private: bool = False) -> Exported:
    """Write the run's final adapter, or the snapshot of ``task`` (a name or a position from
    1), to ``out`` as a PEFT LoRA adapter folder, or with ``merge`` as a full model folder
    (the base with the adapter merged in, and its tokenizer). ``out`` must not exist or be empty.
    The run's config must match its fingerprint and the adapter the checksum its checkpoint or
    task record lists; ``trust_remote_code``: the run's model may run its own code. The folder
    holds a model card (``README.md``, :mod:`tsr.engine.model_card`); ``push_to_hub``, a
    repository id, uploads it there once written (:mod:`tsr.engine.hub`; ``private`` creates
    a missing repository as private)."""
    run_dir, out = Path(run_dir), Path(out)
    if push_to_hub is not None:
        check_repo(push_to_hub)
    check_out(out)
    run = RunDir(run_dir)
    if not run.exists():
        missing = "no such folder" if not run_dir.exists() else "no run.json"
        raise RunError(f"{run_dir}: not a tsr run directory ({missing})")
    meta = run.meta()
    tasks, method = meta.get("tasks"), meta.get("method", "?")
    if not isinstance(tasks, list) or not tasks or not all(isinstance(t, str) for t in tasks):
        raise RunError(f"{run_dir / 'run.json'}: corrupt run metadata (no list of task names)")
    cfg = run_settings(run, trust_remote_code)
    model_cfg, lora_cfg = cfg.model, cfg.lora
    source, what, label = which_adapter(run, tasks, f"{run_dir} ({method}", task)
    if source.name == "adapter.safetensors":
        source, state = run.final_adapter()
    else:
        try:
            state = load_snapshot(source.parent, run.sealed_format())
        except (OSError, ValueError, TypeError, AttributeError, SafetensorError) as err:
            raise RunError(f"{source}: corrupt, damaged or missing adapter file ({reason(err)})") from None
    lora = peft_export.as_lora(state, lora_cfg.r, lora_cfg.alpha, label)
    base, local = resolve_base(model_cfg, run.path / "config.yaml")
    args = pretrained_args(model_cfg, local)
    if merge:
        model, tokenizer = peft_export.load_base(base, args)
    else:
        model = peft_export.meta_model(base, args)
    targets = peft_export.target_modules(lora, model, label)
    config = peft_export.peft_config(lora, targets, base, lora_cfg.dropout, peft_export.transposed(lora, model),
                                     None if local else model_cfg.revision)
    if merge:
        model = peft_export.merge(model, lora, config, label)

    card = model_card(base=base, merged=merge, what=what, method=method, seed=cfg.seed, source=str(cfg.stream.source),
                      results=run_results(run), r=lora.r, alpha=lora.alpha, modules=len(lora.modules))

    def write(folder: Path) -> None:
        if merge:
            peft_export.write_merged(folder, model, tokenizer)
        else:
            peft_export.write_adapter(folder, lora, config)
        write_text(folder / "README.md", card)

    write_folder(out, write)
    pushed = push_folder(out, push_to_hub, private) if push_to_hub is not None else None
    return Exported(out, what, merge, lora.r, lora.alpha, lora.pairs, len(lora.modules), base, pushed)


def run_results(run: RunDir) -> Results | None:
    """The run's results for the model card; None where it has none that can be read."""
    try:
        return load_results(run.results_path) if run.results_path.is_file() else None
    except TsrError:
        return None


def which_adapter(run: RunDir, tasks: list[str], label: str, task: str | None) -> tuple[Path, str, str]:
    """(file, what it is, a label for errors that starts with ``label``) of the final adapter or of
    ``task``'s snapshot."""
    done = min(completed_tasks(run), len(tasks))
    if done == 0 and run.results_path.is_file():
        raise RunError(f"{run.path}: holds results but no checkpoint/ (a run restored by `tsr archive --restore` "
                       "keeps no tensors); there is no adapter to export")
    if task is None:
        if done == 0:
            raise RunError(f"{run.path}: no task has finished yet; there is no adapter to export")
        source = run.path / "checkpoint" / "adapter.safetensors"
        if not source.is_file():
            source = run.path / ".checkpoint.old" / "adapter.safetensors"  # a kill during the swap
        unfinished = "" if done == len(tasks) else f"; the run is unfinished, {done} of {len(tasks)} tasks"
        return source, f"the final adapter (after task {done} {tasks[done - 1]!r}{unfinished})", \
            f"{label}, final adapter)"
    index = task_index(task, tasks, run.path)
    if index >= done:
        raise RunError(f"{run.path}: task {index + 1} {tasks[index]!r} has not finished (the run has finished "
                       f"{done} of {len(tasks)} tasks)")
    source = record_dir(run.memory_root, index, tasks[index]) / "snapshot.safetensors"
    return source, f"the snapshot of task {index + 1} {tasks[index]!r}", f"{label}, task {index + 1} {tasks[index]!r})"


def resolve_base(model_cfg: ModelConfig, config_path: Path) -> tuple[str, bool]:
    """The run's base model: (an absolute local folder or a hub id, whether local)."""
    try:
        source, local = resolve_source(model_cfg)
    except TsrError as err:
        raise RunError(f"{config_path}: the run's base model is not available here ({err})") from None
    return (str(Path(source).resolve()), True) if local else (source, False)


def write_folder(out: Path, write) -> None:
    """Build ``out`` under a temporary name beside it with ``write(folder)``, then rename it into place."""
    if out.parent.is_dir():  # a killed export to this name left its temporary folder (temp_dir's names only)
        left = re.compile(rf"\.{re.escape(out.name)}\.[A-Za-z0-9_]{{8}}\.tmp")
        for path in out.parent.iterdir():
            if left.fullmatch(path.name) and path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
    tmp = temp_dir(out)
    try:
        write(tmp)
        settle(tmp)  # transformers' writers neither sync nor keep the usual mode
        if out.exists():
            out.rmdir()  # empty (checked before anything was computed)
        os.rename(tmp, out)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)
