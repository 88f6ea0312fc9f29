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
