"""Methods and benchmarks of installed packages (entry points), through the command line.

A package is installed the way pip leaves one: a module and a ``*.dist-info`` folder with
``METADATA`` and ``entry_points.txt``, in a folder on ``sys.path``, where
``importlib.metadata`` finds it. ``tsr`` itself is not edited.
"""

from __future__ import annotations

import sys
import textwrap

import pytest

from tsr.interface.cli import main
from tsr.data import streams
from tsr.methods import registry

PACKAGE = '''
"""A package of its own, with a tsr method (and its preset) and a benchmark."""

from dataclasses import dataclass

import tsr


@dataclass
class GentleParams:
    weight: float = 0.1


class Gentle(tsr.Method):
    """SeqFT with an L2 penalty on LoRA's B factors, from another package."""

    name = "gentle"
    Params = GentleParams
    presets = {"gentle_strong": ({"weight": 2.0}, "a strong penalty")}

    def loss(self, ctx, batch, draw):
        terms = super().loss(ctx, batch, draw)
        terms["penalty"] = self.params.weight * sum(p.pow(2).sum() for _, p in ctx.learner.adapter.lora_b())
        return terms


def numbers(root, options):
    size = int(options.pop("size", 40))
    if options:
        raise tsr.TsrError(f"config key 'stream.options': unknown option {next(iter(options))!r}")
    def task(name, rule):
        rows = [tsr.Example(f"Is {n} {name}? Answer:", " yes" if rule(n) else " no") for n in range(size)]
        return tsr.Task(name, tsr.TaskKind.CLASSIFICATION, tuple(rows[: size - 8]), tuple(rows[size - 8:]))
    return tsr.Stream("numbers", (task("even", lambda n: n % 2 == 0), task("small", lambda n: n < size // 2)))
'''


def install(folder, module: str, dist: str, entry_points: str, source: str = PACKAGE) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{module}.py").write_text(textwrap.dedent(source))
    info = folder / f"{dist.replace('-', '_')}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(textwrap.dedent(entry_points))


@pytest.fixture
def site(tmp_path, monkeypatch):
    """A folder on sys.path to install packages into; they are forgotten afterwards."""
    before = {t: set(t.registered()) for t in (registry.ENTRIES, streams.ENTRIES)}
    modules = set(sys.modules)
    folder = tmp_path / "site"
    folder.mkdir()
    monkeypatch.syspath_prepend(str(folder))
    yield folder
    for table, names in before.items():
        for name in set(table.registered()) - names:
            table.unregister(name)
    for name in set(sys.modules) - modules:
        if name.startswith("tsr_demo"):
            del sys.modules[name]


def run_args(tiny_model, out, *extra):
    return ["run", "paper", f"model.path={tiny_model}", f"out_dir={out}", "train.steps=2", "stream.budget=8",
            "stream.test_cap=4", "stream.max_length=48", "stream.replay_per_task=4", "model.threads=1", *extra,
            "--quiet"]


def test_an_installed_method_and_benchmark_run_from_the_command_line(site, tiny_model, tmp_path, capsys):
    install(site, "tsr_demo_ext", "tsr-demo-ext", """
        [tsr.methods]
        gentle = tsr_demo_ext:Gentle

        [tsr.benchmarks]
        demo-numbers = tsr_demo_ext:numbers
    """)
    out = tmp_path / "runs"
    assert main(run_args(tiny_model, out, "method.name=gentle", "stream.source=demo-numbers",
                         "stream.options={size: 32}")) == 0
    capsys.readouterr()
    (run,) = out.glob("numbers-gentle-s0-*")
    assert '"penalty"' in (run / "progress.jsonl").read_text()
    # a preset of the installed method is found too, and a bad option is the builder's own error
    assert main(run_args(tiny_model, out, "method.name=gentle_strong", "stream.source=demo-numbers")) == 0
    assert main(run_args(tiny_model, out, "stream.source=demo-numbers", "stream.options={sise: 3}")) == 2
    assert "unknown option 'sise'" in capsys.readouterr().err
    assert main(["methods"]) == 0
    listed = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()}
    assert "SeqFT with an L2 penalty" in listed["gentle"] and "tsr-demo-ext 0.1" in listed["gentle"]
    assert "preset of gentle: a strong penalty" in listed["gentle_strong"]
    assert {"seqft", "tsr", "er10"} <= set(listed)


@pytest.mark.parametrize("entry_points,fragment", [
    # the same name from two packages (the second is installed below)
    ("[tsr.methods]\ngentle = tsr_demo_ext:Gentle\n",
     "method name 'gentle' is declared by more than one installed package: entry point 'gentle' of "
     "tsr-demo-ext 0.1 (tsr_demo_ext:Gentle); entry point 'gentle' of tsr-demo-two 0.1"),
    ("[tsr.methods]\ner = tsr_demo_ext:Gentle\n", "method name 'er' is taken by tsr itself"),
    ("[tsr.methods]\nsoft = tsr_demo_ext:Gentle\n", "is named 'gentle', not 'soft'"),
    ("[tsr.methods]\ngentle = tsr_demo_missing:Gentle\n",
     "entry point 'gentle' of tsr-demo-ext 0.1 (tsr_demo_missing:Gentle): cannot be loaded (ModuleNotFoundError"),
])
def test_a_bad_installed_method_is_one_line(site, tmp_path, capsys, entry_points, fragment):
    install(site, "tsr_demo_ext", "tsr-demo-ext", entry_points)
    if "more than one" in fragment:
        install(tmp_path / "site2", "tsr_demo_two", "tsr-demo-two", "[tsr.methods]\ngentle = tsr_demo_two:Gentle\n")
        sys.path.insert(1, str(tmp_path / "site2"))
    try:
        assert main(["methods"]) == 2
    finally:
        if str(tmp_path / "site2") in sys.path:
            sys.path.remove(str(tmp_path / "site2"))
    err = capsys.readouterr().err.strip()
    assert fragment in err and len(err.splitlines()) == 1, err
