"""`tsr archive`: a folder's finished runs in one file without tensors, and back as run folders
that grids and `tsr run` report without training and that the tables read as the originals."""

import json

import pytest

from tsr.analysis.table import summarise
from tsr.runs import archive
from tsr.engine.run import execute
from tsr.interface.cli import main


def test_restored_runs_read_as_the_originals_and_are_not_trained_again(make_config, tmp_path, capsys):
    runs, file, elsewhere = tmp_path / "runs", tmp_path / "results.jsonl", tmp_path / "elsewhere"
    a = execute(make_config("method.name=tsr"))
    b = execute(make_config("method.name=er", "seed=1"))
    assert main(["archive", str(runs), str(file)]) == 0
    assert "archived 2 finished run(s)" in capsys.readouterr().out
    before = file.read_bytes()
    assert archive.archive(runs, file) == 0 and file.read_bytes() == before  # nothing new: unchanged
    assert main(["archive", str(elsewhere), str(file), "--restore"]) == 0
    assert "restored 2 run(s)" in capsys.readouterr().out
    for outcome in (a, b):
        copy = elsewhere / outcome.run.path.name
        assert sorted(p.name for p in copy.iterdir()) == sorted(archive.FILES)  # no tensors
        for name in ("config.yaml", "run.json", "results.json"):
            assert (copy / name).read_bytes() == (outcome.run.path / name).read_bytes()
        events = [json.loads(line)["event"] for line in (copy / "progress.jsonl").read_text().splitlines()]
        original = [json.loads(line)["event"] for line in (outcome.run.path / "progress.jsonl").read_text().splitlines()]
        assert events == [e for e in original if e != "steps"] and "steps" in original
        assert summarise(copy).metrics == summarise(outcome.run.path).metrics
    again = execute(make_config("method.name=tsr", f"out_dir={elsewhere}"))
    assert again.already_finished and again.results.acc == a.results.acc
    assert not (again.run.path / "checkpoint").exists()  # reported, not trained
    assert archive.restore(file, elsewhere) == (0, 2)
    capsys.readouterr()
    assert main(["export", str(elsewhere / a.run.path.name), "--out", str(tmp_path / "adapter")]) == 2
    assert "keeps no tensors" in capsys.readouterr().err and not (tmp_path / "adapter").exists()


def test_an_unfinished_run_is_not_archived(make_config, tmp_path):
    done = execute(make_config())
    results = json.loads((done.run.path / "results.json").read_text())
    results["acc"], results["loss"], results["task_info"] = results["acc"][:1], results["loss"][:1], results["task_info"][:1]
    (done.run.path / "results.json").write_text(json.dumps(results))
    assert archive.archive(tmp_path / "runs", tmp_path / "a.jsonl") == 0
    assert not (tmp_path / "a.jsonl").exists()


@pytest.mark.parametrize("line, says", [
    ("{not json", "not JSON"),
    ('["a list"]', "expected an object"),
    ('{"path": "x"}', "no 'config.yaml' text"),
    ('{"path": "../x", "config.yaml": "", "run.json": "{}", "results.json": "{}", "progress.jsonl": ""}',
     "not a relative path inside the folder"),
    ('{"path": "/abs", "config.yaml": "", "run.json": "{}", "results.json": "{}", "progress.jsonl": ""}',
     "not a relative path inside the folder"),
    ('{"path": "x", "config.yaml": "", "run.json": "[", "results.json": "{}", "progress.jsonl": ""}',
     "its run.json is not JSON"),
    ('{"path": "p", "probe": {"config.yaml": "", "data.json": "{}", "arms/../../x.json": ""}}',
     "is not a file of a probe folder"),
    ('{"path": "p", "probe": {"config.yaml": "", "arms/a.json": "{}"}}', "no 'data.json'"),
    ('{"path": "p", "probe": ["config.yaml"]}', "not an archived probe"),
    ('{"path": "../p", "probe": {"config.yaml": "", "data.json": "{}"}}', "not a relative path inside the folder"),
])
def test_a_bad_archive_line_is_one_line_naming_it_and_nothing_is_written(tmp_path, capsys, line, says):
    file, root = tmp_path / "a.jsonl", tmp_path / "runs"
    good = '{"path": "ok", "config.yaml": "", "run.json": "{}", "results.json": "{}", "progress.jsonl": ""}'
    file.write_text(good + "\n" + line + "\n")
    assert main(["archive", str(root), str(file), "--restore"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"tsr: error: {file}:2: ") and says in err and "\n" not in err
    assert not root.exists()


def test_a_path_archived_twice_and_a_folder_holding_another_run_are_refused(make_config, tmp_path, capsys):
    done = execute(make_config())
    file = tmp_path / "a.jsonl"
    archive.archive(tmp_path / "runs", file)
    line = file.read_text()
    file.write_text(line + line)
    assert main(["archive", str(tmp_path / "x"), str(file), "--restore"]) == 2
    assert f"{file}:2: {done.run.path.name} is archived twice" in capsys.readouterr().err
    file.write_text(line)
    other = tmp_path / "other" / done.run.path.name
    other.mkdir(parents=True)
    (other / "run.json").write_text('{"fingerprint": "someone-else"}')
    assert main(["archive", str(tmp_path / "other"), str(file), "--restore"]) == 2
    assert "holds another run than" in capsys.readouterr().err
    assert sorted(p.name for p in other.iterdir()) == ["run.json"]


def test_a_restore_never_writes_through_a_linked_subfolder(make_config, tmp_path, capsys):
    """`tsr archive --restore` into a folder whose subfolder is a symbolic link once wrote the runs
    outside that folder (issue 77): one line naming the link, exit 2, nothing written anywhere."""
    from badinputs import refuse

    runs, file = tmp_path / "runs", tmp_path / "results.jsonl"
    execute(make_config("method.name=seqft", "train.steps=2", f"out_dir={runs / 'grid'}", "name=a"))
    assert main(["archive", str(runs), str(file)]) == 0
    elsewhere, outside = tmp_path / "elsewhere", tmp_path / "outside"
    elsewhere.mkdir()
    outside.mkdir()
    (elsewhere / "grid").symlink_to(outside, target_is_directory=True)
    refuse(capsys, tmp_path, ["archive", str(elsewhere), str(file), "--restore"],
           f"{elsewhere / 'grid'}: is a symbolic link inside {elsewhere}; a run is restored only into plain folders")
    assert list(outside.iterdir()) == []


def test_a_probe_is_archived_arm_by_arm_and_goes_on_from_the_restored_arms(tiny_model, toy_stream, tmp_path, capsys):
    """A probe run in two halves on two machines: the archive of the first half restored on a bare
    second one, the probe finishes only the arms it lacks, and its report equals a probe run whole."""
    def probe(out, seeds, *extra):
        return main(["probe", "paper", f"model.path={tiny_model}", f"stream.source={toy_stream}", "train.steps=3",
                     "stream.budget=3", "stream.test_cap=4", "stream.max_length=48", "train.lr=3e-3",
                     "model.threads=1", "--seeds", seeds, "--arms", "target,mixed", "--workers", "1",
                     "--out", str(out), *extra])

    whole, first, second, file = tmp_path / "whole", tmp_path / "a" / "p", tmp_path / "b" / "p", tmp_path / "arms.jsonl"
    assert probe(whole, "0,1") == 0 and probe(first, "0") == 0
    assert main(["archive", str(tmp_path / "a"), str(file)]) == 0
    assert "and 9 probe arm(s)" in capsys.readouterr().out
    [line] = archive.read_probes(file)
    assert line["path"] == "p" and sorted(line["probe"]) == ["arms/" + p.name for p in sorted((first / "arms").iterdir())] \
        + ["config.yaml", "data.json"]
    before = file.read_bytes()
    assert archive.archive_all(tmp_path / "a", file) == (0, 0) and file.read_bytes() == before

    assert main(["archive", str(tmp_path / "b"), str(file), "--restore"]) == 0
    assert "and 9 probe arm(s)" in capsys.readouterr().out
    restored = sorted(p.name for p in (second / "arms").iterdir())
    assert restored == sorted(p.name for p in (first / "arms").iterdir())
    stamps = {p: p.stat().st_mtime_ns for p in (second / "arms").iterdir()}
    assert probe(second, "0,1") == 0  # trains seed 1's arms only
    assert all(p.stat().st_mtime_ns == t for p, t in stamps.items())
    assert json.loads((second / "report.json").read_text())["matrix"] == json.loads((whole / "report.json").read_text())["matrix"]
    assert archive.archive_all(tmp_path / "b", file) == (0, 9)  # the arms saved since
    assert len(archive.read_probes(file)[0]["probe"]) == 2 + 18
    assert archive.restore_all(file, tmp_path / "b") == (0, 0, 0)  # nothing lacking

    other = tmp_path / "c" / "p"
    assert probe(other, "0", "train.steps=4") == 0  # the same path, another config
    capsys.readouterr()
    assert main(["archive", str(tmp_path / "c"), str(file), "--restore"]) == 2
    assert "holds another probe" in capsys.readouterr().err
