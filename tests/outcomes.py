"""Reading what a finished run left, for tests that compare two runs exactly."""

from __future__ import annotations


def matrices(outcome):
    r = outcome.results
    return r.acc, r.loss


def final_adapter(outcome):
    from safetensors.torch import load_file

    return load_file(str(outcome.run.path / "checkpoint" / "adapter.safetensors"))


def same_adapter(a, b):
    return a.keys() == b.keys() and all(bool((a[k] == b[k]).all()) for k in a)


def teacher_forwards(outcome) -> int:
    """The teacher forwards a run counted (its last task's end: the count runs over the run)."""
    import json

    events = [json.loads(line) for line in (outcome.run.path / "progress.jsonl").read_text().splitlines()]
    return max(e.get("teacher_forwards", 0) for e in events if e["event"] == "task_end")


def made_elsewhere(run) -> None:
    """Rewrite a finished run's ``run.json`` as if another kind of processor had made it (any
    instruction set but this machine's), for the reports that name runs of mixed machines."""
    import json

    path = run / "run.json"
    meta = json.loads(path.read_text())
    other = "SVE" if meta["machine"]["cpu_capability"] != "SVE" else "AVX2"
    path.write_text(json.dumps({**meta, "machine": {**meta["machine"], "cpu_capability": other}}))
