"""The public Python API: ``import tsr`` is cheap and side-effect free, its names resolve, and
methods and benchmarks registered from a program run through ``tsr.run``."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from dataclasses import dataclass

import pytest

import tsr
import tsr.api  # the module: `resolve` is not a public name
from tsr.errors import ConfigError
from tsr.methods import registry
from tsr.schema import require


def test_import_loads_nothing_heavy_and_registers_nothing():
    code = ("import sys, tsr; print(sorted(m for m in sys.modules if m.startswith('tsr')), "
            "sorted(m for m in ('torch', 'transformers', 'peft', 'numpy', 'yaml') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['tsr', 'tsr.version'] []"


def test_every_public_name_resolves():
    assert tsr.__all__[0] == "__version__" and len(set(tsr.__all__)) == len(tsr.__all__)
    for name in tsr.__all__:
        assert getattr(tsr, name) is not None, name
    assert set(tsr.__all__) <= set(dir(tsr))
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        tsr.nope  # noqa: B018
    assert tsr.Method is tsr.methods.base.Method and tsr.load_config is tsr.config.load_config


@dataclass
class DampedParams:
    weight: float = 0.1

    def check(self, path: str) -> None:
        require(self.weight >= 0, f"{path}.weight", "must be >= 0")


class Damped(tsr.Method):
    """SeqFT with an L2 penalty on the LoRA B factors (a test's own method)."""

    name = "damped"
    Params = DampedParams
    presets = {"damped_off": ({"weight": 0.0}, "no penalty: SeqFT")}

    def loss(self, ctx, batch, draw):
        terms = super().loss(ctx, batch, draw)
        terms["penalty"] = self.params.weight * sum(p.pow(2).sum() for _, p in ctx.learner.adapter.lora_b())
        return terms


def test_a_registered_method_runs_through_tsr_run(make_config, clean_registries):
    assert tsr.register_method(Damped) is Damped
    cfg = make_config("train.steps=3")
    damped = tsr.run(cfg, ["method.name=damped", "method.weight=0.5"])
    log = [json.loads(line) for line in (damped.run.path / "progress.jsonl").read_text().splitlines()]
    penalties = [e["penalty"] for e in log if e["event"] == "steps"]
    assert penalties and all(math.isfinite(v) for v in penalties) and max(penalties) > 0
    assert damped.results.finished and damped.results.method == "damped"
    assert tsr.metrics(damped) == tsr.metrics(damped.run.path) == tsr.load_results(damped.run.path).metrics()
    # the preset without a penalty trains exactly as SeqFT does
    off = tsr.run(cfg, ["method.name=damped_off"])
    seqft = tsr.run(cfg, ["method.name=seqft"])
    assert off.results.acc == seqft.results.acc and off.results.loss == seqft.results.loss
    assert off.results.acc != damped.results.acc or off.results.loss != damped.results.loss
    # the method's parameters are checked like a built-in method's
    with pytest.raises(ConfigError, match="'method.weight': must be >= 0"):
        tsr.run(cfg, ["method.name=damped", "method.weight=-1"])
    assert dict(registry.listing())["damped"].endswith(f"[{__name__}.Damped]")


def test_name_clashes_are_one_clear_error(clean_registries):
    class Shadow(tsr.Method):
        name = "er"

    class Other(tsr.Method):
        name = "damped"

    class TakesPreset(tsr.Method):
        name = "fresh"
        presets = {"er10": {}}

    with pytest.raises(ConfigError, match="method name 'er' is taken by tsr itself"):
        tsr.register_method(Shadow)
    tsr.register_method(Damped)
    tsr.register_method(Damped)  # the same class again: nothing changes
    with pytest.raises(ConfigError, match=r"method name 'damped' is already registered by .*\.Damped"):
        tsr.register_method(Other)
    with pytest.raises(ConfigError, match="method name 'er10' is taken by tsr itself"):
        tsr.register_method(TakesPreset)
    assert registry.ENTRIES.get("fresh") is None  # all or nothing: the method is not half-registered
    with pytest.raises(ConfigError, match="is not a method class"):
        tsr.register_method(int)
    with pytest.raises(ConfigError, match="preset 'bad': config key 'method.weight': expected a number"):
        tsr.register_method(type("Bad", (Damped,), {"name": "bad_presets"}), presets={"bad": {"weight": "x"}})
    with pytest.raises(ConfigError, match="benchmark name 'synth-trace' is taken by tsr itself"):
        tsr.register_benchmark("synth-trace", lambda root, options: None)
    with pytest.raises(ConfigError, match="ends like a stream file"):
        tsr.register_benchmark("mine.yaml", lambda root, options: None)


def _stream() -> tsr.Stream:
    def task(name, rule):
        rows = [tsr.Example(f"Is {n} {name}? Answer:", " yes" if rule(n) else " no") for n in range(40)]
        return tsr.Task(name, tsr.TaskKind.CLASSIFICATION, tuple(rows[:30]), tuple(rows[30:]))

    return tsr.Stream("numbers", (task("even", lambda n: n % 2 == 0), task("small", lambda n: n < 20)))


def test_a_registered_stream_runs_and_is_checked(make_config, clean_registries):
    stream = _stream()
    tsr.register_benchmark("numbers", stream)
    tsr.register_benchmark("numbers", stream)  # the same stream again: nothing changes
    with pytest.raises(ConfigError, match="already registered"):
        tsr.register_benchmark("numbers", lambda root, options: stream)
    assert tsr.load_stream("numbers").digest() == stream.digest()
    outcome = tsr.run(make_config("train.steps=2", "stream.source=numbers", "method.name=er"))
    assert outcome.results.tasks == ["even", "small"] and outcome.results.finished
    assert outcome.run.path.name.startswith("numbers-er-s0-")
    with pytest.raises(ConfigError, match="'stream.options': benchmark 'numbers' is a fixed stream"):
        tsr.load_stream("numbers", options={"x": 1})
    tsr.register_benchmark("numbers_fn", lambda root, options: "not a stream")
    with pytest.raises(ConfigError, match="returned a str, not a Stream"):
        tsr.load_stream("numbers_fn")


def test_the_api_gives_none_where_results_json_has_null(make_config, clean_registries, tmp_path, capsys):
    """A metric over no task (the loss metrics of a stream without generation tasks) is null in
    results.json and None through the API, never NaN (which is neither None nor equal to itself);
    the tables, the figure and `tsr show` read it as no value."""
    from tsr.interface.cli import main

    tsr.register_benchmark("numbers", _stream())
    outcome = tsr.run(make_config("train.steps=2", "stream.source=numbers", "method.name=seqft"))
    saved = json.loads((outcome.run.path / "results.json").read_text())["metrics"]
    assert saved["overall_loss"] is None and saved["plas_loss"] is None and saved["bwt_loss"] is None
    for got in (tsr.metrics(outcome), tsr.metrics(outcome.run.path), tsr.metrics(outcome.results),
                tsr.load_results(outcome.run.path).metrics()):
        assert got == saved
        assert all(v is None or math.isfinite(v) for v in got.values())
    assert tsr.Results.from_dict(json.loads(json.dumps(outcome.results.to_dict()))).metrics() == saved
    plot = tmp_path / "table.png"
    assert main(["table", str(outcome.run.path), "--format", "csv", "--plot", str(plot)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(",")[2] for line in lines[1:4]] == ["overall", "plas", "bwt"] and plot.stat().st_size > 0
    assert main(["show", str(outcome.run.path)]) == 0 and "loss (generation" not in capsys.readouterr().out


def test_worker_processes_cannot_see_local_registrations(make_config, clean_registries):
    tsr.register_method(Damped)
    with pytest.raises(ConfigError, match="method 'damped' is registered in this process only"):
        tsr.compare(make_config(), methods=["seqft", "damped"], workers=2)
    tsr.register_benchmark("numbers", _stream())
    with pytest.raises(ConfigError, match="benchmark 'numbers' is registered in this process only"):
        tsr.probe(make_config("stream.source=numbers"), workers=2)


def test_overrides_apply_to_a_config_object(make_config):
    cfg = make_config("method.name=er", "method.alpha=0.2")
    assert tsr.api.resolve(cfg, ["train.steps=5"]).train.steps == 5
    assert tsr.api.resolve(cfg, ["train.steps=5"]).method.params.alpha == 0.2
    assert tsr.api.resolve(cfg, ["method.name=tsr"]).method.name == "tsr"  # drops ER's parameters
    assert tsr.api.resolve(cfg, []) is cfg
    with pytest.raises(ConfigError, match=r"overrides: expected 'key.sub=value' strings, got \[3\]"):
        tsr.api.resolve(cfg, [3])
    # a scalar method section is refused as on the command line, not an AttributeError
    with pytest.raises(ConfigError, match=r"config key 'method': expected a mapping with a name, found str"):
        tsr.api.resolve(cfg, ["method=tsr_need"])
    with pytest.raises(ConfigError, match=r"found str 'tsr_need', under which 'method.alpha' is set"):
        tsr.api.resolve(cfg, ["method=tsr_need", "method.alpha=0.3"])


def test_tasks_from_python_objects_are_checked():
    pool, test = [tsr.Example("Is 2 even?", " yes")], [tsr.Example("Is 3 even?", " no")]
    assert tsr.Task("even", "classification", pool, test).kind is tsr.TaskKind.CLASSIFICATION
    with pytest.raises(tsr.TsrError, match="task 'even': unknown task kind 'regression'"):
        tsr.Task("even", "regression", pool, test)
    with pytest.raises(tsr.TsrError, match="task 'even' holds a tuple where an Example"):
        tsr.Task("even", "classification", [("Is 2 even?", " yes")], test)


@pytest.mark.parametrize("call, message", [
    (lambda cfg: tsr.compare(cfg, methods=[]), "methods: an empty list (None means every one)"),
    (lambda cfg: tsr.compare(cfg, methods=["er", 3]), "methods: expected names, got ['er', 3]"),
    (lambda cfg: tsr.compare(cfg, methods="er", seeds=[0, -1]), "seeds: expected one or more whole numbers >= 0"),
    (lambda cfg: tsr.compare(cfg, methods="er", seeds="0"), "seeds: expected one or more whole numbers >= 0, got '0'"),
    (lambda cfg: tsr.compare(cfg, methods="er", workers=0), "workers: expected a whole number of at least 1, got 0"),
    (lambda cfg: tsr.probe(cfg, arms=[]), "arms: an empty list"),
    (lambda cfg: tsr.probe(cfg, workers=True), "workers: expected a whole number of at least 1, got True"),
])
def test_grid_arguments_are_checked_before_any_run(make_config, tmp_path, call, message):
    cfg = make_config(f"out_dir={tmp_path / 'grid'}")
    with pytest.raises(ConfigError) as err:
        call(cfg)
    assert message in str(err.value)
    assert not (tmp_path / "grid").exists()  # refused before anything was written


def test_one_method_name_and_one_seed_are_a_grid_of_one(make_config, tmp_path, monkeypatch):
    import tsr.engine.grid as engine_compare

    seen = []
    monkeypatch.setattr(engine_compare, "run_sweep", lambda config, overrides, points, workers, finished:
                        seen.append((points, workers)))
    assert tsr.compare(make_config(f"out_dir={tmp_path / 'grid'}"), methods="er", seeds=3) == {}
    (points, workers), = seen
    assert [(p.method, p.seed) for p in points] == [("er", 3)] and workers == 1
