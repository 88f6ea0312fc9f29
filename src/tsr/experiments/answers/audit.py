"""``tsr audit answers`` as data: its params and the object that reads a run's predictions and
writes whose answers it gives after each task, its own task's or the newest's
(:mod:`tsr.analysis.answers`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..audit import Audit, Report, Session, param
from ...schema import require

EXAMPLES = """examples:
  tsr run method.name=seqft eval.predictions=true eval.schedule=full out_dir=runs/diag
  tsr audit answers runs/diag/synth-trace-seqft-s0-1a2b3c4d5e
  tsr audit answers runs/real/synth-trace-seqft-s3-529c478e09 decode=true threads=1
Reads the run's predictions/ (nothing is trained) and writes answers.md/.png/.json into it (or
out=DIR): per round and earlier task, the share of its test predictions opening with one of its
own answer words / with one of the newest task's. With decode=true a run made without
predictions has them decoded first from its task snapshots into RUN_DIR/decoded/ (every earlier
task after every task; each round checked against the accuracies the run recorded)."""


@dataclass(frozen=True)
class Params:
    run: str = param("the run folder (RUN_DIR)", "")
    out: str | None = param("where answers.* go (default: RUN_DIR)")
    decode: bool = param("decode the predictions from the run's task snapshots into RUN_DIR/decoded/ first", False)
    all_tasks: bool = param("with decode: score every task after every task, the later ones too", False)
    threads: int = param("with decode: the model's CPU threads (0: the run's own model.threads)", 0)

    def check(self, path: str) -> None:
        require(bool(self.run), f"{path}run", "name the run folder (tsr audit answers RUN_DIR)")
        require(self.threads >= 0, f"{path}threads", "must be >= 0 (0: the run's own)")
        require(self.decode or not self.all_tasks, f"{path}all_tasks", "only with decode=true")


class AnswersAudit(Audit):
    name = "answers"
    summary = "Whose answers a run gives after each task: its own task's or the newest's."
    examples = EXAMPLES
    Params = Params
    config = False
    positional = ("run", "RUN_DIR")

    def plan(self, params: Params, session: Session) -> Params:
        return params

    def run(self, plan: Params, session: Session) -> dict:
        from ...analysis.answers import takeover

        if not plan.decode:
            return takeover(Path(plan.run))
        from .decode import DECODED, decode_rounds

        decode_rounds(Path(plan.run), plan.all_tasks, plan.threads, session.reporter.note)
        return takeover(Path(plan.run), DECODED)

    def report(self, plan: Params, found: dict, session: Session) -> Report:
        from ...analysis.answers import takeover_figure, takeover_markdown
        from ...analysis.report_files import write_report_files

        run = Path(plan.run)
        out = Path(plan.out) if plan.out else run
        text = takeover_markdown(found)
        write_report_files(out, "answers", f"Whose answers · {run.name}", found, text,
                           takeover_figure(found, f"answers in the newest task's words · {run.name}"),
                           "tsr audit answers " + str(run))
        return Report(out, text)


AUDIT = AnswersAudit()
