"""A GGUF checkpoint as an ordinary model folder.

Transformers reads a GGUF file (with the optional ``gguf`` package: ``pip install 'tsr[gguf]'``)
and dequantises its tensors to float32, but a model loaded that way refuses
``save_pretrained``. :func:`convert_gguf` therefore rebuilds the same architecture from the
file's config without its quantisation record, moves the dequantised tensors into it, and saves
model and tokenizer as a safetensors folder that every command loads like any other.
``model.path=<file>.gguf`` goes through :func:`gguf_folder`, which converts once into the cache
(keyed by the file's sha256) and reuses the folder after that.
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import tempfile
from pathlib import Path

from ..errors import ModelError
from .cache import cache_root, sha256_file

PROVENANCE = "provenance.json"


@contextlib.contextmanager
def _quiet():
    """Transformers' log lines and progress bars (the GGUF reader's own tqdm bar included) off."""
    from transformers.utils import logging as hf_logging

    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            yield
    finally:
        hf_logging.set_verbosity(verbosity)
        hf_logging.enable_progress_bar()


def convert_gguf(gguf: Path, out: Path, provenance: dict | None = None) -> dict:
    """Write ``gguf`` as a float32 safetensors model folder ``out`` (created; must not exist)
    with a ``provenance.json`` of ``provenance`` plus the converted model's facts. Returns it."""
    try:
        import gguf as _  # noqa: F401  (transformers' GGUF reader needs it)
    except ImportError:
        raise ModelError(f"{gguf}: reading a GGUF file needs the `gguf` package "
                         "(pip install 'tsr[gguf]')") from None
    gguf = Path(gguf)
    with _quiet():
        try:
            tokenizer, plain, quantised = _read(gguf)
        except (OSError, ValueError, KeyError, RuntimeError) as err:
            first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            raise ModelError(f"{gguf}: cannot read as a GGUF model ({first})") from None
        facts = {
            "architecture": type(plain).__name__,
            "model_type": plain.config.model_type,
            "parameters": sum(p.numel() for p in plain.parameters()),
            "vocab_size": plain.config.vocab_size,
            "dtype": "float32",
            "gguf_sha256": sha256_file(gguf),
            "source_format": "quantised gguf" if quantised else "gguf",
        }
        out = Path(out)
        out.mkdir(parents=True)
        plain.save_pretrained(str(out))
        tokenizer.save_pretrained(str(out))
    record = {**(provenance or {}), **facts}
    (out / PROVENANCE).write_text(json.dumps(record, indent=2, default=str) + "\n", encoding="utf-8")
    return record


def _read(gguf: Path):
    """(tokenizer, float32 model without a quantisation record, whether the file was quantised)."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    loaded = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32)
    config = loaded.config.to_dict()
    quant = config.pop("quantization_config", None)
    plain = AutoModelForCausalLM.from_config(AutoConfig.for_model(**config), dtype=torch.float32)
    missing, unexpected = plain.load_state_dict(loaded.state_dict(), strict=False)
    tied = {"lm_head.weight"} if plain.config.tie_word_embeddings else set()
    if set(missing) - tied or unexpected:
        raise ValueError(f"the GGUF tensors do not fill a {type(plain).__name__} (missing "
                         f"{sorted(set(missing) - tied)[:3]}, unexpected {sorted(unexpected)[:3]})")
    if tied:
        plain.tie_weights()
    return tokenizer, plain, quant is not None


def gguf_folder(path: Path, report=None) -> Path:
    """The converted folder of the GGUF file ``path``, converting it into the cache the first
    time (``report(text)`` hears about that)."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise ModelError(f"config key 'model.path': {str(path)!r} is not a file")
    digest = sha256_file(path)
    folder = cache_root() / "gguf" / digest[:16]
    if (folder / PROVENANCE).is_file():
        return folder
    if report is not None:
        report(f"converting {path.name} to a model folder in {folder} (once)")
    folder.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", suffix=".tmp", dir=folder.parent))
    try:
        convert_gguf(path, work / "model", {"source": str(path.resolve()), "source_sha256": digest,
                                            "note": "dequantised to float32 from the GGUF file"})
        if not (folder / PROVENANCE).is_file():
            shutil.rmtree(folder, ignore_errors=True)  # a half-written folder from a kill
            (work / "model").rename(folder)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return folder

