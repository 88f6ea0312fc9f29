"""What a kill leaves (temporary files and folders, a replaced folder's old version) is
recognised by name and removed; nothing else is."""

from tsr.atomic import remove_leftovers, replace_dir, temp_dir, write_text


def test_leftovers_are_removed_and_nothing_else(tmp_path):
    write_text(tmp_path / "keep.json", "{}")
    (tmp_path / ".hidden-user-file").write_text("mine")
    (tmp_path / "checkpoint").mkdir()
    stale = [tmp_path / ".keep.json.abc123.tmp", tmp_path / ".checkpoint.old", temp_dir(tmp_path / "checkpoint")]
    stale[0].write_text("half")
    stale[1].mkdir()
    orphan_old = tmp_path / ".gone.old"  # its folder is not in place: it is the intact previous version
    orphan_old.mkdir()
    assert sorted(remove_leftovers(tmp_path)) == sorted(stale)
    assert sorted(p.name for p in tmp_path.iterdir()) == [".gone.old", ".hidden-user-file", "checkpoint", "keep.json"]


def test_leftovers_of_one_name_only(tmp_path):
    mine, other = temp_dir(tmp_path / "run-a"), temp_dir(tmp_path / "run-b")
    assert remove_leftovers(tmp_path, "run-a") == [mine] and other.is_dir()


def test_temp_dir_then_replace_dir_builds_a_folder_as_a_whole(tmp_path):
    final = tmp_path / "rec"
    for text in ("one", "two"):
        tmp = temp_dir(final)
        assert tmp.name.startswith(".rec.") and tmp.name.endswith(".tmp")
        write_text(tmp / "f.txt", text)
        replace_dir(tmp, final)
        assert (final / "f.txt").read_text() == text
    assert [p.name for p in tmp_path.iterdir()] == ["rec"]


def test_saved_files_and_folders_get_the_usual_mode_and_strict_json(tmp_path):
    import json
    import os
    import stat

    import torch

    from tsr.atomic import append_jsonl, write_json, write_tensors

    write_json(tmp_path / "r.json", {"overall": float("nan"), "rows": [[1.0, float("inf")], [None, 2.5]]})
    write_tensors(tmp_path / "t.safetensors", {"x": torch.zeros(2)})  # safetensors replaces the file it is given
    append_jsonl(tmp_path / "log.jsonl", {"loss": float("-inf")})
    folder = temp_dir(tmp_path / "rec")
    umask = os.umask(0o022)
    os.umask(umask)
    assert stat.S_IMODE((tmp_path / "r.json").stat().st_mode) == 0o666 & ~umask
    assert stat.S_IMODE((tmp_path / "t.safetensors").stat().st_mode) == 0o666 & ~umask
    assert stat.S_IMODE(folder.stat().st_mode) == 0o777 & ~umask
    strict = lambda text: json.loads(text, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))  # noqa: E731
    assert strict((tmp_path / "r.json").read_text()) == {"overall": None, "rows": [[1.0, None], [None, 2.5]]}
    assert strict((tmp_path / "log.jsonl").read_text()) == {"loss": None}
