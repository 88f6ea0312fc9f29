import math

import pytest

from tsr.config import load_config, parse_override
from tsr.errors import ConfigError
from tsr.methods.registry import resolve_method


def test_defaults_are_the_papers():
    cfg = load_config("paper")
    assert (cfg.lora.r, cfg.lora.alpha, cfg.lora.dropout) == (16, 32.0, 0.0)
    assert (cfg.train.steps, cfg.train.lr, cfg.train.batch_size) == (500, 1e-4, 4)
    assert (cfg.stream.budget, cfg.stream.test_cap, cfg.stream.max_length) == (50, 500, 384)
    assert cfg.stream.replay_per_task == 100 and cfg.stream.replay_source == "pool"
    p = cfg.method.params
    assert (p.probe_batches, p.tau, p.alpha, p.kd_weight, p.kd_temperature) == (10, 0.1, 0.5, 0.5, 2.0)
    assert p.reference == "era" and p.kd_mask == "attended"


def test_overrides_are_typed_and_nested():
    cfg = load_config("paper", ["train.lr=1e-3", "stream.order=[b, a]", "eval.all_tasks=true", "seed=7"])
    assert cfg.train.lr == 1e-3 and isinstance(cfg.train.lr, float)
    assert cfg.stream.order == ["b", "a"]
    assert cfg.eval.all_tasks is True and cfg.seed == 7


def test_tau_accepts_inf():
    cfg = load_config("paper", ["method.tau=inf"])
    assert math.isinf(cfg.method.params.tau)


def test_choosing_a_method_drops_the_previous_methods_parameters():
    cfg = load_config("paper", ["method.tau=0.3", "method.name=er", "method.alpha=0.2"])
    assert cfg.method.to_config() == {"name": "er", "alpha": 0.2}


@pytest.mark.parametrize("override,fragment", [
    (["train.lrr=1"], "unknown config key 'train.lrr'"),
    (["train.lr=abc"], "config key 'train.lr': expected a number"),
    (["train.steps=0"], "config key 'train.steps': must be >= 1"),
    (["bogus=1"], "unknown config key 'bogus'"),
    (["stream.replay_source=elsewhere"], "config key 'stream.replay_source'"),
])
def test_bad_config_names_the_key(override, fragment):
    with pytest.raises(ConfigError) as err:
        load_config("paper", override)
    assert fragment in str(err.value)
    assert "\n" not in str(err.value)


def test_bad_method_parameter_names_the_key_and_lists_methods():
    with pytest.raises(ConfigError) as err:
        resolve_method({"name": "tsr", "tauu": 1})
    assert "method.tauu" in str(err.value)
    with pytest.raises(ConfigError) as err:
        resolve_method({"name": "magic"})
    assert "unknown method 'magic'" in str(err.value) and "seqft" in str(err.value)
    with pytest.raises(ConfigError, match="method.alpha"):
        resolve_method({"name": "er", "alpha": 1.5})


def test_unknown_preset_and_malformed_yaml(tmp_path):
    with pytest.raises(ConfigError, match="unknown preset 'nope'"):
        load_config("nope")
    bad = tmp_path / "bad.yaml"
    bad.write_text("train:\n  lr: [1,\n")
    with pytest.raises(ConfigError, match=r"bad.yaml:\d+: malformed YAML"):
        load_config(str(bad))


def test_config_file_can_start_from_a_preset(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text("preset: paper\ntrain: {steps: 7}\n")
    cfg = load_config(str(f))
    assert cfg.train.steps == 7 and cfg.model.path == "Qwen/Qwen2.5-0.5B-Instruct"


def test_fingerprint_ignores_where_results_go():
    a = load_config("paper", ["out_dir=x", "name=y"])
    b = load_config("paper", ["out_dir=z"])
    c = load_config("paper", ["train.steps=9"])
    assert a.fingerprint() == b.fingerprint() != c.fingerprint()


def test_parse_override_requires_equals():
    with pytest.raises(ConfigError, match="key.sub=value"):
        parse_override("train.lr")
    assert parse_override("a.b=1") == {"a": {"b": 1}}


def test_runconfig_round_trips_through_plain_data():
    from tsr.config import from_plain

    cfg = load_config("paper", ["method.tau=inf", "stream.order=reversed"])
    again = from_plain(cfg.to_dict())
    assert again == cfg


def test_model_compile_enters_the_fingerprint_only_when_on():
    """Compiled runs round differently, so they get their own fingerprint; eager runs keep the
    fingerprint they had before ``model.compile`` existed (pinned: the fingerprint a run of the
    paper preset on synth-trace is named by, its method section resolved to every parameter), so
    saved runs still resume. ``model.adapter_dtype`` and ``eval.schedule`` enter it the same way:
    only when they differ from what every run did before the key existed (float32, full)."""
    synth = ["stream.source=synth-trace", "eval.schedule=full"]
    off = load_config("paper", [*synth, "model.compile=false"])
    assert off.fingerprint() == load_config("paper", synth).fingerprint() == "9ec5afd10b"
    assert load_config("paper", [*synth, "model.compile=true"]).fingerprint() != off.fingerprint()
    assert load_config("paper", [*synth, "model.adapter_dtype=float32"]).fingerprint() == "9ec5afd10b"
    assert load_config("paper", [*synth, "model.adapter_dtype=bfloat16"]).fingerprint() != "9ec5afd10b"
    assert load_config("paper", synth[:1]).fingerprint() != "9ec5afd10b"  # the default schedule: metrics


def test_repeated_option_overrides_merge_key_by_key():
    """`stream.options.a=1 stream.options.b=2` keeps both (the second once replaced the whole mapping)."""
    cfg = load_config("paper", ["stream.source=trace8", "stream.options.tasks=[FOMC]",
                                "stream.options.missing_train=eval"])
    assert cfg.stream.options == {"tasks": ["FOMC"], "missing_train": "eval"}
    cfg = load_config("paper", ["stream.options={a: 1}", "stream.options.b=2", "stream.options.a=3"])
    assert cfg.stream.options == {"a": 3, "b": 2}


@pytest.mark.parametrize("override,key", [
    ("train.lr=inf", "train.lr"), ("lora.alpha=inf", "lora.alpha"), ("lora.alpha=.inf", "lora.alpha"),
    ("train.lr=.nan", "train.lr"), ("train.lr=nan", "train.lr"), ("train.teacher_cache_mb=1e400", "train.teacher_cache_mb"),
    ("train.grad_clip=inf", "train.grad_clip"), ("method.kd_weight=.inf", "method.kd_weight"),
    ("method.tau=.nan", "method.tau"), ("stream.options.x=.inf", "stream.options.x"),
    ("stream.options.x=[1, .nan]", "stream.options.x[1]"),
])
def test_numbers_that_are_not_finite_are_refused_at_load(override, key):
    with pytest.raises(ConfigError) as err:
        load_config("paper", [override])
    assert f"config key '{key}'" in str(err.value) and "is not a finite number" in str(err.value)


def test_tau_alone_takes_infinity():
    assert math.isinf(load_config("paper", ["method.tau=.inf"]).method.params.tau)
    assert math.isinf(load_config("paper", ["method.tau=inf"]).method.params.tau)


# every bundled preset's fingerprint as it was before `model.revision` existed: a run folder made
# then keeps its name and resumes
PRESET_FINGERPRINTS = {"default": "eea6230d6e", "gemma3-1b": "47ced7f5bc", "llama3.2-1b": "bddcea47cd",
                       "paper": "5c29026157", "qwen2.5-0.5b": "4d8c848bcd", "qwen2.5-7b": "9f099d85f2"}


@pytest.mark.parametrize("preset", sorted(PRESET_FINGERPRINTS))
def test_a_revision_left_at_its_default_keeps_every_fingerprint(preset):
    assert load_config(preset).fingerprint() == PRESET_FINGERPRINTS[preset]
    assert load_config(preset, ["model.revision=null"]).fingerprint() == PRESET_FINGERPRINTS[preset]


def test_a_pinned_revision_is_recorded_and_names_another_run():
    hub = ["model.path=Qwen/Qwen2.5-0.5B"]
    pinned = load_config("default", [*hub, "model.revision=7ae557604adf67be50417f59c2c2f167def9a775"])
    assert pinned.to_dict()["model"]["revision"] == "7ae557604adf67be50417f59c2c2f167def9a775"  # config.yaml holds it
    assert pinned.fingerprint() != load_config("default", hub).fingerprint()
    with pytest.raises(ConfigError, match="config key 'model.revision': must not be empty"):
        load_config("default", [*hub, "model.revision=' '"])


def test_a_revision_is_passed_to_from_pretrained_for_a_hub_id_only(tmp_path):
    from tsr.errors import ModelError
    from tsr.model.backbone import pretrained_args, resolve_source

    hub = load_config("default", ["model.path=Qwen/Qwen2.5-0.5B", "model.revision=v1"]).model
    assert pretrained_args(hub, local=False) == {"trust_remote_code": False, "local_files_only": False,
                                                 "revision": "v1"}
    for path in ("bundled", str(tmp_path)):
        local = load_config("default", [f"model.path={path}", "model.revision=v1"]).model
        with pytest.raises(ModelError, match="config key 'model.revision': 'v1' pins a hub revision"):
            resolve_source(local)
