"""`tsr pretrain-base`: deterministic from its seed, standard format, loadable like any model."""

import json

import pytest

from tsr.interface.cli import main
from tsr.config import load_config
from tsr.model.backbone import load_backbone
from tsr.model.pretrain import weights_sha256

SMALL = ["steps=6", "tokenizer_texts=600", "vocab_size=400", "hidden=32", "layers=1", "heads=2", "kv_heads=1",
         "intermediate=64", "batch_size=4", "warmup=2", "threads=1"]


def test_pretraining_is_reproducible_and_loadable(tmp_path, capsys):
    for name in ("a", "b"):
        assert main(["pretrain-base", "--out", str(tmp_path / name), *SMALL]) == 0
    a, b = (json.loads((tmp_path / n / "pretrain.json").read_text()) for n in ("a", "b"))
    assert a["weights_sha256"] == b["weights_sha256"] and a["final_loss"] == b["final_loss"]
    assert a["config"]["steps"] == 6 and a["config"]["hidden"] == 32
    assert (tmp_path / "a" / "tokenizer.json").read_text() == (tmp_path / "b" / "tokenizer.json").read_text()
    bb = load_backbone(load_config("default", [f"model.path={tmp_path / 'a'}"]).model)
    assert weights_sha256(bb.model) == a["weights_sha256"]
    assert "saved to" in capsys.readouterr().out
    # another seed, another model
    assert main(["pretrain-base", "--out", str(tmp_path / "c"), *SMALL, "seed=1"]) == 0
    assert json.loads((tmp_path / "c" / "pretrain.json").read_text())["weights_sha256"] != a["weights_sha256"]


@pytest.mark.parametrize("args,fragment", [
    (["hidden=0"], "hidden"),
    (["colour=red"], "colour"),
])
def test_bad_pretraining_input_is_one_line(tmp_path, capsys, args, fragment):
    assert main(["pretrain-base", "--out", str(tmp_path / "x"), *args]) == 2
    err = capsys.readouterr().err
    assert fragment in err and "Traceback" not in err
    assert not (tmp_path / "x").exists()


def test_pretraining_refuses_to_overwrite(tmp_path, capsys):
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep.txt").write_text("mine")
    assert main(["pretrain-base", "--out", str(tmp_path / "full"), *SMALL]) == 2
    assert "--force" in capsys.readouterr().err and (tmp_path / "full" / "keep.txt").read_text() == "mine"


def test_an_interrupted_pretraining_resumes_to_the_same_weights(tmp_path, capsys):
    """Stopped after step 3 of 6 (a checkpoint every step), the same command on the same folder
    goes on from step 3 and ends with the uninterrupted run's weights; the checkpoint goes."""
    from tsr.model.pretrain import CHECKPOINT, PretrainConfig, pretrain
    from tsr.schema import build

    assert main(["pretrain-base", "--out", str(tmp_path / "whole"), *SMALL]) == 0
    whole = json.loads((tmp_path / "whole" / "pretrain.json").read_text())
    cfg = build(PretrainConfig, {k: int(v) for k, v in (a.split("=") for a in SMALL)})

    def stop(step: int, loss: float) -> None:
        if step == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        pretrain(cfg, tmp_path / "cut", stop, checkpoint_minutes=0)
    assert (tmp_path / "cut" / CHECKPOINT).exists() and not (tmp_path / "cut" / "pretrain.json").exists()
    capsys.readouterr()
    assert main(["pretrain-base", "--out", str(tmp_path / "cut"), *SMALL]) == 0
    assert "resuming from step 3/6" in capsys.readouterr().err
    cut = json.loads((tmp_path / "cut" / "pretrain.json").read_text())
    assert cut["weights_sha256"] == whole["weights_sha256"] and cut["final_loss"] == whole["final_loss"]
    assert not (tmp_path / "cut" / CHECKPOINT).exists()


def test_a_checkpoint_of_another_config_is_one_line_and_force_starts_over(tmp_path, capsys):
    from tsr.model.pretrain import CHECKPOINT, PretrainConfig, pretrain
    from tsr.schema import build

    cfg = build(PretrainConfig, {k: int(v) for k, v in (a.split("=") for a in SMALL)})

    def stop(step: int, loss: float) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        pretrain(cfg, tmp_path / "x", stop, checkpoint_minutes=0)
    before = (tmp_path / "x" / CHECKPOINT).read_bytes()
    capsys.readouterr()
    assert main(["pretrain-base", "--out", str(tmp_path / "x"), *SMALL, "hidden=48", "heads=2"]) == 2
    err = capsys.readouterr().err
    assert "another config (differs in hidden)" in err and len(err.strip().splitlines()) == 1
    assert (tmp_path / "x" / CHECKPOINT).read_bytes() == before  # nothing changed
    assert main(["pretrain-base", "--out", str(tmp_path / "x"), *SMALL, "hidden=48", "--force"]) == 0
    assert json.loads((tmp_path / "x" / "pretrain.json").read_text())["config"]["hidden"] == 48
