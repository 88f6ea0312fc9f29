"""The probe protocol end to end on the toy stream (tiny model, a few steps)."""

import json

import pytest

from tsr.interface.cli import main
from tsr.config import load_config
from tsr.experiments.probe.plan import Job, arm_examples, load_probe_stream, plan_jobs
from tsr.experiments.probe.run import run_job, run_probe
from tsr.model.learner import build_learner
from tsr.data.streams import load_stream


def test_full_arm_nests_the_budget(toy_stream):
    task = load_stream(str(toy_stream)).task("parity")
    n = arm_examples(task, 3, "target", seed=5)
    full = arm_examples(task, 3, "full", seed=5)
    assert len(full) == 30 and full[:3] == n


def test_plan_jobs_counts():
    stream = load_stream("synth-trace", options={"pool": 10, "test": 5})
    jobs = plan_jobs(stream, [0, 1], targets=["stance"], arms=["target", "full", "mixed"])
    assert len(jobs) == 2 * (2 + 7)
    assert {j.source for j in jobs if j.arm == "mixed"} == set(stream.names) - {"stance"}


@pytest.mark.slow
def test_probe_runs_resumes_and_reports(tiny_model, toy_stream, tmp_path, capsys):
    args = ["probe", "paper", f"model.path={tiny_model}", f"stream.source={toy_stream}", "train.steps=3",
            "stream.budget=3", "stream.test_cap=4", "stream.max_length=48", "train.lr=3e-3", "model.threads=1",
            "--seeds", "0,1", "--workers", "1", "--out", str(tmp_path / "p"), "--signatures"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "transfer matrix" in out and "headroom" in out and "top-1" in out
    report = json.loads((tmp_path / "p" / "report.json").read_text())
    assert set(report["matrix"]["parity"]) == {"vowel", "copy"}
    assert report["matrix"]["copy"]["parity"]["n"] == 2
    assert (tmp_path / "p" / "matrix.png").stat().st_size > 1000
    assert {"gradb", "gradb_norm", "gradb_last4"} <= set(report["signatures"])
    arms = sorted((tmp_path / "p" / "arms").glob("*.json"))
    assert len(arms) == 3 * 2 * (2 + 2)
    # a second invocation runs nothing and reproduces the same report; it removes the temporary
    # files a kill while the report was written left in the folder (found by stress/reliability.py)
    planted = [tmp_path / "p" / ".matrix.png.k1l2m3n4.tmp", tmp_path / "p" / ".report.json.a1b2c3d4.tmp"]
    for path in planted:
        path.write_bytes(b"half")
    stamp = {p: p.stat().st_mtime_ns for p in arms}
    assert main(args) == 0
    assert stamp == {p: p.stat().st_mtime_ns for p in arms}
    assert not any(path.exists() for path in planted)
    # a later command asking for one seed audits the signatures over every seed of the matrix
    assert report["signatures"]["gradb"]["seeds"] == [0, 1]
    one_seed = [a if a != "0,1" else "1" for a in args]
    assert main(one_seed) == 0
    again = json.loads((tmp_path / "p" / "report.json").read_text())
    assert again["signatures"]["gradb"]["seeds"] == [0, 1]
    assert again["signatures"]["gradb"]["cosine"] == report["signatures"]["gradb"]["cosine"]
    # the same folder with another config is refused, and nothing in it changes
    other = [a if a != "train.steps=3" else "train.steps=4" for a in args]
    assert main(other) == 2
    assert "different config" in capsys.readouterr().err
    assert stamp == {p: p.stat().st_mtime_ns for p in arms}


def test_probe_arms_are_deterministic(tiny_model, toy_stream, tmp_path):
    cfg = load_config("paper", [f"model.path={tiny_model}", f"stream.source={toy_stream}", "train.steps=3",
                                "stream.budget=3", "stream.test_cap=4", "stream.max_length=48", "model.threads=1"])
    stream = load_stream(str(toy_stream))
    jobs = plan_jobs(stream, [0], targets=["parity"], sources=["vowel"])
    a = run_probe(cfg, jobs, tmp_path / "a")
    b = run_probe(cfg, jobs, tmp_path / "b")
    strip = lambda rows: [{k: v for k, v in r.items() if k != "seconds"} for r in rows]  # noqa: E731
    assert strip(a) == strip(b)
    # each arm records the machine it ran on, as a run does (a pair of arms is a pair on one kind)
    assert {r["machine"]["threads"] for r in a} == {1} and all(r["machine"]["cpu"] for r in a)


def test_mixed_arms_bring_their_target_arms_and_reports_cover_the_folder(tiny_model, toy_stream, tmp_path, capsys):
    """`--arms mixed` alone still yields a matrix (its target arms run too), and a later
    headroom-only invocation on the same folder keeps the matrix in the report."""
    common = ["probe", "paper", f"model.path={tiny_model}", f"stream.source={toy_stream}", "train.steps=2",
              "stream.budget=3", "stream.test_cap=4", "stream.max_length=48", "model.threads=1",
              "--seeds", "0", "--workers", "1", "--targets", "parity", "--out", str(tmp_path / "p")]
    assert main([*common, "--arms", "mixed"]) == 0
    report = json.loads((tmp_path / "p" / "report.json").read_text())
    assert report["matrix"]["parity"]["vowel"]["n"] == 1
    assert main([*common, "--arms", "full"]) == 0
    report = json.loads((tmp_path / "p" / "report.json").read_text())
    assert report["matrix"]["parity"]["vowel"]["n"] == 1 and report["headroom"]["parity"]["headroom"]["n"] == 1
    capsys.readouterr()


def test_checkpoint_score_equals_a_shorter_arm(tiny_model, toy_stream):
    """The score after step 2 of a 4-step arm is the score of a 2-step arm (constant learning
    rate, step-indexed batch draws), for a target arm and a mixed arm."""
    common = [f"model.path={tiny_model}", f"stream.source={toy_stream}", "stream.budget=3",
              "stream.test_cap=4", "stream.max_length=48", "model.threads=1", "train.lr=3e-3"]
    long_cfg = load_config("paper", [*common, "train.steps=4"])
    short_cfg = load_config("paper", [*common, "train.steps=2"])
    stream = load_probe_stream(long_cfg)
    learner = build_learner(long_cfg)
    for job in (Job("parity", "target", 1), Job("parity", "mixed", 1, "copy")):
        long_run = run_job(learner, long_cfg, stream, job, {}, checkpoints=[2])
        short_run = run_job(learner, short_cfg, stream, job, {})
        assert long_run["checkpoints"]["2"] == {"acc": short_run["acc"], "loss": short_run["loss"]}
        assert long_run["loss"] != short_run["loss"]  # the last two steps did train


def test_report_at_a_checkpoint(tiny_model, toy_stream, tmp_path, capsys):
    common = ["probe", "paper", f"model.path={tiny_model}", f"stream.source={toy_stream}", "train.steps=3",
              "stream.budget=3", "stream.test_cap=4", "stream.max_length=48", "model.threads=1",
              "--seeds", "0", "--workers", "1", "--targets", "parity", "--arms", "target,full",
              "--out", str(tmp_path / "p")]
    assert main([*common, "--report-at", "2"]) == 2  # nothing was scored after step 2
    assert "--report-at" in capsys.readouterr().err
    assert main([*common, "--checkpoints", "3"]) == 2  # not below train.steps
    assert "--checkpoints" in capsys.readouterr().err
    assert main([*common, "--checkpoints", "1,2", "--report-at", "2"]) == 0
    arms = {p.name: json.loads(p.read_text()) for p in (tmp_path / "p" / "arms").glob("*.json")}
    assert all(set(a["checkpoints"]) == {"1", "2"} for a in arms.values())
    early = json.loads((tmp_path / "p" / "at-2" / "report.json").read_text())
    full = arms["parity__full__s0.json"]["checkpoints"]["2"]["acc"] - arms["parity__target__s0.json"]["checkpoints"]["2"]["acc"]
    assert early["headroom"]["parity"]["headroom"]["mean"] == full
    assert not (tmp_path / "p" / "report.json").exists()  # --report-at writes its own folder only
    stamp = {p: p.stat().st_mtime_ns for p in (tmp_path / "p" / "arms").glob("*.json")}
    assert main([*common, "--checkpoints", "2"]) == 0  # every arm already holds step 2: nothing runs
    assert stamp == {p: p.stat().st_mtime_ns for p in (tmp_path / "p" / "arms").glob("*.json")}
    final = json.loads((tmp_path / "p" / "report.json").read_text())
    assert final["headroom"]["parity"]["target"]["mean"] == arms["parity__target__s0.json"]["acc"]


def test_exposure_matched_matrix_is_reported_when_target_arms_have_the_half_step(tiny_model, toy_stream, tmp_path):
    common = ["probe", "paper", f"model.path={tiny_model}", f"stream.source={toy_stream}", "train.steps=4",
              "stream.budget=3", "stream.test_cap=4", "stream.max_length=48", "model.threads=1",
              "--seeds", "0", "--workers", "1", "--targets", "parity", "--sources", "vowel", "--arms", "mixed",
              "--out", str(tmp_path / "p")]
    assert main(common) == 0
    assert "exposure_matched" not in json.loads((tmp_path / "p" / "report.json").read_text())
    assert main([*common, "--checkpoints", "2"]) == 0
    report = json.loads((tmp_path / "p" / "report.json").read_text())
    arms = {p.name: json.loads(p.read_text()) for p in (tmp_path / "p" / "arms").glob("*.json")}
    matched = report["exposure_matched"]["matrix"]["parity"]["vowel"]["mean"]
    half = arms["parity__target__s0.json"]["checkpoints"]["2"]["acc"]
    assert matched == arms["parity__mixed_vowel__s0.json"]["acc"] - half
    assert "Exposure-matched" in (tmp_path / "p" / "exposure-matched.md").read_text()
    assert (tmp_path / "p" / "curves.png").stat().st_size > 1000
    assert [s for s, _, _ in report["curves"]["parity"]["target"]] == [2, 4]


def test_probe_folder_refuses_arms_of_other_data(tiny_model, tmp_path):
    """The config is the same but the stream's examples changed: the old arms must not be mixed in."""
    from toy import write_toy_stream

    from tsr.errors import ConfigError

    spec = write_toy_stream(tmp_path / "data")
    cfg = load_config("paper", [f"model.path={tiny_model}", f"stream.source={spec}", "train.steps=2",
                                "stream.budget=3", "stream.test_cap=4", "stream.max_length=48", "model.threads=1"])
    jobs = plan_jobs(load_probe_stream(cfg), [0], targets=["parity"], arms=["target"])
    assert len(run_probe(cfg, jobs, tmp_path / "p")) == 1
    write_toy_stream(tmp_path / "data", seed=1)  # same files, other examples
    with pytest.raises(ConfigError, match="other data"):
        run_probe(cfg, jobs, tmp_path / "p")
    write_toy_stream(tmp_path / "data")  # the arms' data again: the folder is usable
    assert len(run_probe(cfg, jobs, tmp_path / "p")) == 1
    for damaged in ("{", "[]", '{"stream": "x"}'):  # cut short, not a record, no digest
        (tmp_path / "p" / "data.json").write_text(damaged)
        with pytest.raises(ConfigError, match=r"data\.json: not a readable record of the data"):
            run_probe(cfg, jobs, tmp_path / "p")


def test_probe_follows_stream_order_and_shares_arms_across_orders(tiny_model, toy_stream, tmp_path, capsys):
    from tsr.experiments.probe.plan import probe_dir

    base = ["paper", f"model.path={tiny_model}", f"stream.source={toy_stream}", "train.steps=2", "stream.budget=2",
            "stream.test_cap=3", "stream.max_length=48", "model.threads=1"]
    canonical = load_config(base[0], base[1:])
    reversed_ = load_config(base[0], base[1:] + ["stream.order=reversed"])
    names = load_probe_stream(canonical).names
    assert load_probe_stream(reversed_).names == names[::-1]
    stream = load_probe_stream(canonical)
    assert probe_dir(reversed_, stream) == probe_dir(canonical, stream)  # arms do not depend on the order
    out = tmp_path / "p"
    sub = f"stream.order=[{names[2]},{names[0]}]"
    assert main(["probe", *base, sub, "--arms", "target,full", "--workers", "1", "--out", str(out)]) == 0
    rows = lambda text: [line.split("|")[1].strip() for line in text.splitlines() if line.startswith("| ") and "task" not in line]  # noqa: E731
    assert rows(capsys.readouterr().out) == [names[2], names[0]]  # the probed tasks, in the asked order
    arms = {p: p.stat().st_mtime_ns for p in (out / "arms").glob("*.json")}
    assert len(arms) == 2 * 2
    assert main(["probe", *base, "--arms", "target,full", "--workers", "1", "--out", str(out)]) == 0  # the whole stream
    after = {p: p.stat().st_mtime_ns for p in (out / "arms").glob("*.json")}
    assert len(after) == 3 * 2 and all(after[p] == t for p, t in arms.items())  # earlier arms reused
    assert rows(capsys.readouterr().out) == names
