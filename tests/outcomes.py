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
