"""docs/data.md: which benchmarks take ``tasks``, as the page says, checked against every built-in one."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tsr.data.streams import BENCHMARKS, load_stream
from tsr.errors import ConfigError

DOC = Path(__file__).resolve().parents[2] / "docs" / "data.md"


def table_benchmarks() -> list[str]:
    """The benchmark names of the page's first table (its `name` column)."""
    text = DOC.read_text(encoding="utf-8")
    return re.findall(r"^\| `([\w-]+)` \|", text.split("| name | what |", 1)[1].split("\n\n", 1)[0], re.M)


def test_the_benchmarks_the_page_says_take_tasks_take_them_and_the_others_refuse_them():
    text = DOC.read_text(encoding="utf-8")
    table = table_benchmarks()
    assert len(table) == 5 and "The five benchmarks of\nthe table accept `tasks: [...]`" in text
    synthetic = re.search(r"The synthetic\nbenchmarks \(([^;]+);", text).group(1)
    assert sorted(set(table) | set(re.findall(r"`([\w-]+)`", synthetic))) == sorted(BENCHMARKS)
    for name in BENCHMARKS:  # an unknown task name: a subset was read (and refused), or the key itself
        with pytest.raises(ConfigError) as err:
            load_stream(name, root="/nonexistent", options={"tasks": ["nope"]})
        taken = f"'{name}' has no task 'nope'" in str(err.value)
        assert taken == (name in table), str(err.value)
        if not taken:
            assert "unknown config key 'stream.options.tasks'" in str(err.value)
    assert load_stream("synth-trace", order=["stance", "policy"]).names == ["stance", "policy"]  # the page's way
