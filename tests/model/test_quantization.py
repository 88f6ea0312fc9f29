"""`model.quantization`: a bitsandbytes base (QLoRA) on CUDA, refused in one line elsewhere."""

from __future__ import annotations

import sys
import types

import pytest
import torch

from badinputs import refuse
from tsr.config import load_config
from tsr.errors import ConfigError, ModelError
from tsr.model.backbone import quantization_args


def test_a_quantised_base_on_the_cpu_is_refused_in_one_line(tiny_model, tmp_path, capsys):
    refuse(capsys, tmp_path, ["run", f"model.path={tiny_model}", "model.quantization=4bit", f"out_dir={tmp_path}"],
           "config key 'model.quantization': 4bit needs a CUDA device (bitsandbytes' kernels), and this run is on cpu")
    with pytest.raises(ConfigError, match="model.quantization.*8bit needs a CUDA device .*not model.device=cpu"):
        load_config(None, ["model.quantization=8bit", "model.device=cpu"])


def test_quantisation_is_part_of_the_runs_identity():
    plain, four = load_config(None, []), load_config(None, ["model.quantization=4bit"])
    assert plain.model.quantization == "none" and plain.fingerprint() != four.fingerprint()


@pytest.fixture
def stub_bitsandbytes(monkeypatch):
    monkeypatch.setitem(sys.modules, "bitsandbytes", types.ModuleType("bitsandbytes"))


def test_4bit_is_qlora_nf4_with_double_quantisation_on_the_runs_device(stub_bitsandbytes):
    cfg = load_config(None, ["model.quantization=4bit"]).model
    args = quantization_args(cfg, torch.device("cuda:1"), torch.bfloat16)
    q = args["quantization_config"]
    assert (q.load_in_4bit, q.load_in_8bit, q.bnb_4bit_quant_type, q.bnb_4bit_use_double_quant) == (True, False, "nf4", True)
    assert q.bnb_4bit_compute_dtype == torch.bfloat16 and args["device_map"] == {"": 1}
    eight = quantization_args(load_config(None, ["model.quantization=8bit"]).model, torch.device("cuda"), torch.float16)
    assert eight["quantization_config"].load_in_8bit and eight["device_map"] == {"": 0}
    assert quantization_args(load_config(None, []).model, torch.device("cuda"), torch.bfloat16) == {}


def test_without_bitsandbytes_a_quantised_base_is_one_line(monkeypatch):
    monkeypatch.setitem(sys.modules, "bitsandbytes", None)  # import fails
    cfg = load_config(None, ["model.quantization=4bit"]).model
    with pytest.raises(ModelError, match=r"^config key 'model.quantization': 4bit needs the bitsandbytes package"):
        quantization_args(cfg, torch.device("cuda"), torch.bfloat16)
