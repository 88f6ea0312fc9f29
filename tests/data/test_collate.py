import pytest
import torch

from tsr.data.collate import IGNORE, Encoder, fit
from tsr.data.example import Example
from tsr.errors import DataError
from tsr.model.tiny import train_tokenizer


@pytest.fixture(scope="module")
def tokenizer():
    return train_tokenizer(["the quick brown fox jumps over the lazy dog"] * 20, vocab_size=300)


def test_answer_and_eos_supervised_prompt_masked(tokenizer):
    enc = Encoder(tokenizer, max_length=64)
    e = enc.encode(Example("the quick", " fox"))
    assert e.answer_ids[-1] == tokenizer.eos_token_id
    batch = enc.collate([e, enc.encode(Example("the", " lazy dog"))])
    row = batch.labels[0].tolist()
    n_prompt = len(e.prompt_ids)
    assert row[:n_prompt] == [IGNORE] * n_prompt
    assert row[n_prompt: n_prompt + len(e.answer_ids)] == list(e.answer_ids)
    # padding is unattended and unsupervised
    assert batch.attention_mask[0].sum() == len(e.prompt_ids) + len(e.answer_ids)
    assert (batch.labels[0][batch.attention_mask[0] == 0] == IGNORE).all()


def test_long_prompt_is_cut_from_the_left(tokenizer):
    enc = Encoder(tokenizer, max_length=8)
    e = enc.encode(Example("the quick brown fox jumps over the lazy dog the quick", " dog"))
    ids, labels = fit(e, 8)
    assert len(ids) == 8
    assert ids[-len(e.answer_ids):] == list(e.answer_ids)
    assert ids[: 8 - len(e.answer_ids)] == list(e.prompt_ids[-(8 - len(e.answer_ids)):])
    assert labels.count(IGNORE) == 8 - len(e.answer_ids)


def test_answer_that_cannot_fit_is_an_error(tokenizer):
    enc = Encoder(tokenizer, max_length=3)
    with pytest.raises(DataError, match=r"task x: example 1 has an answer of \d+ tokens"):
        enc.encode_all([Example("a", " b"), Example("a", " the quick brown fox jumps")], "task x")


def test_left_truncation_keeps_the_last_tokens_as_the_reference_code(tokenizer):
    """``truncate="left"``: an answer longer than max_length keeps its last max_length tokens (EOS
    last, no prompt), what left-truncating prompt + answer + EOS gives; a fitting answer is whole."""
    long = Example("a", " the quick brown fox jumps over the lazy dog")
    full = Encoder(tokenizer, max_length=64).encode(long)
    enc = Encoder(tokenizer, max_length=5, truncate="left")
    cut = enc.encode_all([long], "task x")[0]
    assert len(full.answer_ids) > 5 and cut.answer_ids == full.answer_ids[-5:]
    ids, labels = fit(cut, 5)
    whole = list(full.prompt_ids) + list(full.answer_ids)
    assert ids == whole[-5:] and labels == whole[-5:]  # every kept token supervised
    short = Example("the quick brown fox", " dog")
    assert enc.encode(short).answer_ids == Encoder(tokenizer, max_length=64).encode(short).answer_ids


def test_encoding_is_cached(tokenizer):
    enc = Encoder(tokenizer, max_length=32)
    a = enc.encode(Example("p", " q"))
    assert enc.encode(Example("p", " q")) is a


def test_batch_keys_and_device(tokenizer):
    enc = Encoder(tokenizer, max_length=32)
    b = enc.collate([enc.encode(Example("p", " q"))], keys=[("target", 0)])
    assert b.keys == (("target", 0),) and b.to("cpu").input_ids.dtype == torch.long


def test_an_answer_the_tokenizer_cannot_read_is_refused(tmp_path):
    """A tokenizer without its vocabulary (a model folder missing tokenizer.json) encodes every text
    to nothing: the examples are refused at load instead of training on EOS alone (loss 0.000)."""
    import shutil

    from transformers import AutoTokenizer

    from tsr.model.backbone import bundled_path

    shutil.copy(bundled_path() / "tokenizer_config.json", tmp_path)
    shutil.copy(bundled_path() / "config.json", tmp_path)
    empty = AutoTokenizer.from_pretrained(tmp_path, local_files_only=True)
    with pytest.raises(DataError, match=r"task 'a' \(training\): example 0's answer ' yes' encodes to no tokens"):
        Encoder(empty, max_length=64).encode_all([Example("Is 4 even?", " yes")], "task 'a' (training)")
