"""``log.every`` and ``log.tensorboard``: what a run writes about its steps."""

import json

import pytest

from tsr.engine.run import execute

event_accumulator = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator",
                                        reason="the tensorboard package is not installed")


def events(outcome, kind):
    lines = (outcome.run.path / "progress.jsonl").read_text().splitlines()
    return [e for e in map(json.loads, lines) if e["event"] == kind]


def board(outcome):
    acc = event_accumulator.EventAccumulator(str(outcome.run.path / "tensorboard"))
    acc.Reload()
    return {tag: [(e.step, e.value) for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}


def test_log_every_sets_the_step_window_and_keeps_the_fingerprint(make_config):
    a = make_config("log.every=3", "name=a")
    assert a.fingerprint() == make_config("name=b").fingerprint()
    outcome = execute(a)
    steps = events(outcome, "steps")
    assert [e["step"] for e in steps if e["task"] == 0] == [3, 6, 8]  # 8 steps per task: windows 3, 3, 2


def test_tensorboard_events_match_the_run_log(make_config):
    outcome = execute(make_config("method.name=tsr", "log.tensorboard=true", "log.every=4"))
    scalars = board(outcome)
    results = json.loads((outcome.run.path / "results.json").read_text())
    logged = events(outcome, "steps")
    assert [v for _, v in scalars["train/loss"]] == pytest.approx([e["loss"] for e in logged], abs=1e-6)
    assert [s for s, _ in scalars["train/loss"]] == [e["task"] * 8 + e["step"] for e in logged]
    first, kind = results["tasks"][0], results["kinds"][0]
    tag = f"{'acc' if kind == 'classification' else 'loss'}/{first}"
    assert scalars[tag][0] == (1, pytest.approx(results["acc" if kind == "classification" else "loss"][0][0]))
    assert scalars["metrics/overall"] == [(len(results["tasks"]), pytest.approx(results["metrics"]["overall"]))]
    weights = results["task_info"][1]["weights"]
    for source, w in weights.items():
        assert scalars[f"routing/{results['tasks'][1]}/{source}"] == [(2, pytest.approx(w))]


@pytest.mark.parametrize("minutes", ["10", "1e-9"])
def test_a_resumed_run_shows_each_step_once(make_config, monkeypatch, minutes):
    """Killed in the middle of the second task, then resumed: the second task's steps are
    trained again (or, with a mid-task checkpoint at step 4, those after it), and the board
    shows each of them once, with the values of the rerun."""
    from tsr.engine import loop

    cfg = make_config("log.tensorboard=true", "log.every=2", f"train.checkpoint_minutes={minutes}", "name=cut")
    original = loop.train_on

    def crash_at_step_5(index, step, steps, terms):
        if index == 1 and step == 5:
            raise KeyboardInterrupt

    def train_on(*args, **kwargs):
        kwargs["on_step"] = [*kwargs["on_step"], crash_at_step_5]
        return original(*args, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(loop, "train_on", train_on)
        with pytest.raises(KeyboardInterrupt):
            execute(cfg)
    outcome = execute(cfg)
    scalars = board(outcome)["train/loss"]
    logged = events(outcome, "steps")
    rerun = {e["task"] * 8 + e["step"]: e["loss"] for e in logged}  # the rerun's windows come last
    assert [s for s, _ in scalars] == sorted(rerun)
    assert [v for _, v in scalars] == pytest.approx([rerun[s] for s in sorted(rerun)], abs=1e-6)
    if minutes == "10":
        assert len(logged) > len(rerun)  # the crashed task's first windows were logged twice
    else:
        assert len(logged) == len(rerun)  # resumed after step 4: nothing was trained twice


def test_tensorboard_without_the_package_is_a_config_error_before_any_work(make_config, monkeypatch):
    import sys

    from tsr.errors import ConfigError

    monkeypatch.setitem(sys.modules, "torch.utils.tensorboard", None)  # as if not installed
    cfg = make_config("log.tensorboard=true", "name=nopkg")
    with pytest.raises(ConfigError, match="log.tensorboard: needs the 'tensorboard' package"):
        execute(cfg)


def test_log_every_must_be_positive(make_config):
    from tsr.errors import ConfigError

    with pytest.raises(ConfigError, match="log.every"):
        make_config("log.every=0")


def test_wandb_and_mlflow_hold_the_scalars_tensorboard_gets(make_config, monkeypatch, tmp_path):
    pytest.importorskip("wandb", reason="the wandb package is not installed")
    pytest.importorskip("mlflow", reason="the mlflow package is not installed")
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    outcome = execute(make_config("method.name=tsr", "log.tensorboard=true", "log.wandb=true", "log.mlflow=true",
                                  "log.every=4"))
    scalars = board(outcome)
    # MLflow's store beside the runs: every tag, every step, the same values ("/" reads ".")
    import mlflow

    from tsr.engine.scalar_logs import tracking_uri

    client = mlflow.MlflowClient(tracking_uri(outcome.run.path.parent))
    run = client.search_runs([client.get_experiment_by_name("toy").experiment_id])[0]
    assert run.data.tags["tsr.run"] == str(outcome.run.path) and run.data.params["method"] == "tsr"
    assert set(run.data.metrics) == {tag.replace("/", ".") for tag in scalars}
    for tag, points in scalars.items():
        history = sorted((m.step, m.value) for m in client.get_metric_history(run.info.run_id, tag.replace("/", ".")))
        assert [s for s, _ in history] == [s for s, _ in sorted(points)]
        assert [v for _, v in history] == pytest.approx([v for _, v in sorted(points)], abs=1e-6)
    # W&B's offline run in the run folder: every tag at every point, on its own x-axis
    logged: dict[str, list[tuple[int, float]]] = {}
    for row in wandb_history(next((outcome.run.path / "wandb").glob("offline-run-*/*.wandb"))):
        if "train_step" not in row and "tasks_learnt" not in row:
            continue  # W&B's own rows (run time, system)
        axis = int(row.get("train_step", row.get("tasks_learnt")))
        for key, value in row.items():
            if key in scalars:
                logged.setdefault(key, []).append((axis, value))
    assert set(logged) == set(scalars)
    for tag, points in scalars.items():
        assert [s for s, _ in logged[tag]] == [s for s, _ in points]
        assert [v for _, v in logged[tag]] == pytest.approx([v for _, v in points], abs=1e-6)


def wandb_history(path) -> list[dict]:
    """The history rows of a W&B offline run file: a LevelDB-style log of records (32 KiB blocks,
    each record a 7-byte header of checksum, length and type; full, first, middle and last
    fragments) after a 7-byte file header, each record a protobuf ``Record``."""
    import struct

    from wandb.proto import wandb_internal_pb2 as pb

    data, pos, block, rows, partial = path.read_bytes(), 7, 32768, [], b""
    while pos + 7 <= len(data):
        if block - pos % block < 7:
            pos += block - pos % block
            continue
        _, length, kind = struct.unpack("<IHB", data[pos:pos + 7])
        chunk, pos = data[pos + 7:pos + 7 + length], pos + 7 + length
        if kind == 0:
            break
        partial = chunk if kind in (1, 2) else partial + chunk
        if kind in (1, 4):
            record = pb.Record()
            record.ParseFromString(partial)
            if record.WhichOneof("record_type") == "history":
                rows.append({item.key or "/".join(item.nested_key): json.loads(item.value_json)
                             for item in record.history.item})
    return rows


def test_every_step_logs_its_learning_rate_and_gradient_norm(make_config):
    """`train/lr` follows the schedule step by step (a warm-up then a linear decay can be checked
    in any logger) and `train/grad_norm` is the adapter's gradient norm before clipping."""
    from tsr.engine.lr_schedule import lr_at

    cfg = make_config("log.every=1", "log.tensorboard=true", "train.schedule=linear", "train.warmup=3",
                      "train.grad_clip=1e-6")
    outcome = execute(cfg)
    logged = [e for e in events(outcome, "steps") if e["task"] == 0]
    assert [e["lr"] for e in logged] == pytest.approx([lr_at(cfg.train.lr, "linear", 3, 8, s) for s in range(8)])
    assert all(e["grad_norm"] > 1e-6 for e in logged)  # before clipping: far above the clip value
    scalars = board(outcome)
    assert [v for _, v in scalars["train/lr"]][:8] == pytest.approx([e["lr"] for e in logged])
    assert [v for _, v in scalars["train/grad_norm"]][:8] == pytest.approx([e["grad_norm"] for e in logged], rel=1e-5)
