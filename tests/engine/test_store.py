"""The results store: index.sqlite follows the run folders, and `tsr table` reads it."""

import json
import shutil
import sqlite3

from tsr.analysis import table
from tsr.interface.cli import main
from tsr.engine import store
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
