"""The results store: index.sqlite follows the run folders, and `tsr table` reads it."""

import json
import shutil
import sqlite3

from tsr.analysis import table
from tsr.interface.cli import main
from tsr.runs import store
from tsr.engine.run import execute


def rows(root):
    conn = sqlite3.connect(root / store.INDEX)
    try:
        runs = {r["name"]: r for r in store.runs(conn)}
        tasks = conn.execute("SELECT path, idx, name, acc, loss, info FROM tasks ORDER BY path, idx").fetchall()
    finally:
        conn.close()
    return runs, tasks


def test_runs_index_each_finished_task_and_a_rebuild_gives_the_same_index(make_config, tmp_path):
    configs = [make_config("method.name=tsr", "name=a"), make_config("method.name=seqft", "train.steps=5", "name=b")]
    a, b = map(execute, configs)
    root = tmp_path / "runs"
    runs, tasks = rows(root)
    assert set(runs) == {"a", "b"}
    for outcome, cfg in zip((a, b), configs):
        assert runs[outcome.run.path.name]["fingerprint"] == cfg.fingerprint()
        saved = json.loads((outcome.run.path / "results.json").read_text())
        row = runs[outcome.run.path.name]
        assert row["results"] == saved and row["metrics"] == saved["metrics"] and row["finished"] == 1
        assert row["completed"] == row["tasks"] == len(saved["tasks"]) and row["seed"] == 0
        mine = [t for t in tasks if t[0] == row["path"]]
        assert [json.loads(t[3]) for t in mine] == saved["acc"]
        assert [json.loads(t[5]) for t in mine] == saved["task_info"]
    # the keys that vary between the folder's runs: the method and its parameters, and the steps
    assert "train.steps" in runs["a"]["varying"] and "method.name" in runs["a"]["varying"]
    assert "seed" not in runs["a"]["varying"] and "name" not in runs["a"]["varying"]
    assert store.rebuild(root) == 2
    rebuilt, rebuilt_tasks = rows(root)
    drop = ("updated",)
    assert {n: {k: v for k, v in r.items() if k not in drop} for n, r in rebuilt.items()} == \
        {n: {k: v for k, v in r.items() if k not in drop} for n, r in runs.items()}
    assert rebuilt_tasks == tasks


def test_refresh_follows_runs_removed_added_and_changed_behind_its_back(make_config, tmp_path):
    execute(make_config("name=a"))
    b = execute(make_config("seed=1", "name=b"))
    root = tmp_path / "runs"
    shutil.rmtree(b.run.path)
    copied = root / "elsewhere" / "c"
    shutil.copytree(root / "a", copied)
    results = json.loads((copied / "results.json").read_text())
    results["seed"] = 7
    (copied / "results.json").write_text(json.dumps(results))
    got = {r["name"]: r for r in store.refresh(root)}
    assert set(got) == {"a", "c"} and got["c"]["seed"] == 7


def test_table_reads_the_store_and_matches_the_folders(make_config, tmp_path):
    for seed in (0, 1):
        execute(make_config("method.name=er", f"seed={seed}"))
    root = tmp_path / "runs"
    from_store = table.aggregate(table.summaries([root]))
    from_folders = table.aggregate([table.summarise(p) for p in table.find_runs([root])])
    assert from_store == from_folders
    assert (root / store.INDEX).is_file()


def test_a_folder_without_runs_gets_no_index(tmp_path):
    assert store.refresh(tmp_path) == [] and not (tmp_path / store.INDEX).exists()


def test_tsr_index_rebuilds_and_refuses_a_missing_folder(make_config, tmp_path, capsys):
    execute(make_config("name=a"))
    (tmp_path / "runs" / store.INDEX).unlink()
    assert main(["index", str(tmp_path / "runs")]) == 0
    assert "indexed 1 run(s)" in capsys.readouterr().out and (tmp_path / "runs" / store.INDEX).is_file()
    assert main(["index", str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "nowhere: not a folder" in err


def test_latex_table_in_the_papers_layout():
    cells = {"synth · base": {"seqft": {"overall": (0.264, 0.048, 3), "bwt": (-0.134, 0.058, 3)},
                              "er": {"overall": (0.451, 0.031, 3), "bwt": (0.025, 0.020, 3)},
                              "tsr": {"overall": (0.475, 0.030, 3), "bwt": (-0.2, 0.015, 3)}}}
    seeds = {"synth · base": {m: (0, 1, 2) for m in ("seqft", "er", "tsr")}}
    tex = table.latex_table(cells, ["synth · base"], ["seqft", "er", "tsr"], ("overall", "bwt"), seeds=seeds)
    lines = tex.splitlines()
    assert lines[0] == "% seeds: 0-2" and lines[1] == r"\begin{tabular}{l cc}" and r"\multicolumn{2}{c}{synth $\cdot$ base}" in tex
    seqft = lines[lines.index("SeqFT") + 1]
    assert seqft == r" & $.264{\scriptscriptstyle\pm .048}$ & $-.134{\scriptscriptstyle\pm .058}$ \\"
    assert r"$\mathbf{.475}{\scriptscriptstyle\pm .030}$" in tex      # best Overall in bold
    assert r"$\mathbf{+.025}{\scriptscriptstyle\pm .020}$" in tex     # best BWT in bold: ER's
    # a rule between each family: SeqFT | rehearsal (ER) | TSR
    assert lines.count(r"\midrule") == 3 and tex.index("ER\n") < tex.index("TSR\n")
    # one run: the mean alone
    one = table.latex_table({"s": {"er": {"overall": (0.451, 0.0, 1)}}}, ["s"], ["er"], ("overall",),
                            seeds={"s": {"er": (4,)}})
    assert r" & $\mathbf{.451}$ \\" in one.splitlines()


def _edit_keeping_mtime(path, change) -> None:
    import os

    before = path.stat()
    path.write_text(json.dumps(change(json.loads(path.read_text()))))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


def test_an_entry_is_rebuilt_when_its_files_change_even_with_the_mtime_kept(make_config, tmp_path):
    """`tsr table` once printed a stale index's numbers when results.json changed but kept its
    mtime (issue 77): the index keeps a digest of what each row was read from, and refresh reads
    a run again whenever it differs."""
    run = execute(make_config("method.name=seqft", "train.steps=2", "name=a")).run.path
    root = tmp_path / "runs"
    store.refresh(root)

    def changed(data):
        data["acc"][0][0] = 0.125
        return data

    _edit_keeping_mtime(run / "results.json", changed)
    assert {r["name"]: r for r in store.refresh(root)}["a"]["results"]["acc"][0][0] == 0.125
    assert rows(root)[0]["a"]["results"]["acc"][0][0] == 0.125


def test_an_index_made_before_the_digest_is_refreshed_whole(make_config, tmp_path):
    """An index.sqlite written by an earlier version (no digest column) reads every run again once,
    then keeps digests like a new one."""
    run = execute(make_config("method.name=seqft", "train.steps=2", "name=a")).run.path
    root = tmp_path / "runs"
    conn = sqlite3.connect(root / store.INDEX)
    with conn:
        conn.execute("ALTER TABLE runs DROP COLUMN digest")
        conn.execute("UPDATE runs SET results = '{}'")  # stale: what a refresh by mtime kept
    conn.close()
    [row] = store.refresh(root)
    assert row["results"] == json.loads((run / "results.json").read_text()) and row["digest"] == store.digest(run)


def _linked_index(root, tmp_path, hard: bool):
    import os

    outside = tmp_path / "outside" / "index.sqlite"
    outside.parent.mkdir()
    shutil.move(str(root / store.INDEX), str(outside))
    os.link(outside, root / store.INDEX) if hard else (root / store.INDEX).symlink_to(outside)
    return outside


def test_table_never_writes_an_index_through_a_link(make_config, tmp_path, capsys):
    """A symbolic or hard-linked index.sqlite (a folder someone sent) was rewritten by `tsr table`,
    changing a file outside the folder (issue 77): one line naming it, exit 2, nothing changed; a run
    finishing there skips the index (it never stops a run)."""
    from badinputs import refuse

    execute(make_config("method.name=seqft", "train.steps=2", "name=a"))
    root = tmp_path / "runs"
    for hard, says in ((False, "is a symbolic link; tsr writes the results store only as a plain file"),
                       (True, "is a hard link (another path names the same file); tsr writes the results store")):
        outside = _linked_index(root, tmp_path, hard)
        (root / "a" / "results.json").write_text((root / "a" / "results.json").read_text() + " ")  # a change to index
        refuse(capsys, tmp_path, ["table", str(root)], f"{root / store.INDEX}: {says}")
        assert store.record_run(root, root / "a") is False
        (root / store.INDEX).unlink()
        shutil.move(str(outside), str(root / store.INDEX))
        outside.parent.rmdir()
