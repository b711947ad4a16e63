"""engine/embed/: providers against the loopback stub, the failure taxonomy,
retries, the probe, input limits, and the local WordLlama model offline."""

import json
import logging
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from engine import embed as E
from engine.embed.base import length_batches
from engine.config import load_settings
from engine.tools.envelopes import FailureFields
from engine.errors import EmbedError, SettingsError
from tests.fixtures.stub import ERRORS, QUOTA_429, Reply, stub_vector

KEY = "sk-test-SECRET-abcdef1234567890"
WIRES = {"ollama": (E.OllamaEmbedder, "/api/embed"), "openai": (E.OpenAIEmbedder, "/v1/embeddings")}


def http(stub, wire, model="stub-embed", url=None, **kw):
    cls, _ = WIRES[wire]
    kw.setdefault("retries", 0)
    kw.setdefault("backoff_s", 0.01)
    kw.setdefault("timeout_s", 2.0)
    kw.setdefault("api_key", KEY)
    return cls(url or stub.url, model, **kw)


def settings(tmp_path, **env):
    return load_settings(environ={k: str(v) for k, v in env.items()}, toml_path=tmp_path / "absent.toml")


def failure_of(fn, *args):
    with pytest.raises(EmbedError) as ei:
        fn(*args)
    return ei.value.failure


@pytest.fixture(autouse=True)
def _debug_logs(caplog):
    caplog.set_level(logging.DEBUG)
    yield
    assert KEY not in caplog.text  # the API key never reaches a log line


# --------------------------------------------------------------------------- basics


@pytest.mark.parametrize(
    "status, code",
    [
        (401, "embedding-credential-rejected"),
        (403, "embedding-credential-rejected"),
        (400, "embedding-request-rejected"),
        (404, "embedding-request-rejected"),
        (422, "embedding-request-rejected"),
        (429, "embedding-unavailable"),
        (500, "embedding-unavailable"),
        (503, "embedding-unavailable"),
        (None, "embedding-unavailable"),
    ],
)
def test_classify(status, code):
    assert E.classify(status) == code


def test_failure_fields_match_envelope():
    f = E.EmbedFailure("embedding-unavailable", "m", 503, "http://x/api/embed", "m1", "{}")
    fields = f.to_fields()
    assert set(fields) == (FailureFields.__required_keys__ | FailureFields.__optional_keys__) - {
        "storedDim",
        "serverDim",
        "whoFixes",
    }
    assert fields == {
        "error": "embedding-unavailable",
        "message": "m",
        "endpoint": "http://x/api/embed",
        "model": "m1",
        "statusCode": 503,
        "responseBody": "{}",
    }


def test_dimension_changed_fields_match_envelope():
    fields = E.dimension_changed("m1", "http://x/api/embed", 64, 32).to_fields()
    assert set(fields) == (FailureFields.__required_keys__ | FailureFields.__optional_keys__) - {"whoFixes"}
    assert (fields["error"], fields["storedDim"], fields["serverDim"]) == ("embedding-dimension-changed", 64, 32)


def test_redact_key_bearer_and_truncation():
    text = f'{{"auth": "Bearer abc.def", "key": "{KEY}", "other": "sk-proj-ABCDEFGH12"}}' + "x" * 5000
    out = E.redact(text, (KEY,))
    assert KEY not in out and "abc.def" not in out and "sk-proj-ABCDEFGH12" not in out
    assert "Bearer [REDACTED]" in out
    assert len(out) < E.BODY_LIMIT_CHARS + 40 and out.endswith("chars]")


@pytest.mark.parametrize("wire", WIRES)
def test_embed_both_wire_formats(embed_stub, wire):
    texts = [f"text number {i}" for i in range(5)]
    e = http(embed_stub, wire, batch=2)
    v = e.embed(texts)
    assert v.shape == (5, 8) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-6)
    for i, t in enumerate(texts):  # order kept (the OpenAI stub answers in reverse index order)
        want = np.asarray(stub_vector(t, 8), dtype=np.float32)
        assert np.allclose(v[i], want / np.linalg.norm(want), atol=1e-6)
    route = WIRES[wire][1]
    bodies = [r.json for r in embed_stub.requests if r.path == route]
    assert bodies[0]["input"] == [E.PROBE_TEXT]  # the probe ran first
    assert [len(b["input"]) for b in bodies[1:]] == [2, 2, 1]  # batching by embed_batch
    assert embed_stub.requests[0].headers["Authorization"] == f"Bearer {KEY}"
    if wire == "ollama":
        assert bodies[1]["truncate"] is False  # never rely on the server to truncate
    assert e.dim == 8 and e.embed_query("q").shape == (8,)


def test_probe_runs_once(embed_stub):
    e = http(embed_stub, "ollama")
    e.embed(["a"])
    e.embed(["b"])
    e.embed_query("c")
    inputs = [r.json["input"] for r in embed_stub.requests]
    assert inputs == [[E.PROBE_TEXT], ["a"], ["b"], ["c"]]
    assert isinstance(e.probe_seconds, float)


def test_probe_is_thread_safe(embed_stub):
    e = http(embed_stub, "openai")
    threads = [threading.Thread(target=e.embed, args=([f"t{i}"],)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    probes = [r for r in embed_stub.requests if r.json["input"] == [E.PROBE_TEXT]]
    assert len(probes) == 1 and embed_stub.count() == 9


# --------------------------------------------------------------------------- taxonomy

EXPECTED = {
    400: "embedding-request-rejected",
    401: "embedding-credential-rejected",
    403: "embedding-credential-rejected",
    404: "embedding-request-rejected",
    422: "embedding-request-rejected",
    429: "embedding-unavailable",
    500: "embedding-unavailable",
    503: "embedding-unavailable",
}


@pytest.mark.parametrize("status", sorted(EXPECTED))
@pytest.mark.parametrize("wire", WIRES)
def test_taxonomy_status_and_body_preserved(embed_stub, caplog, wire, status):
    e = http(embed_stub, wire)
    e.probe()
    body = ERRORS[(wire, status)]
    embed_stub.reply = Reply(status, body)
    f = failure_of(e.embed, ["hello"])
    assert f.code == EXPECTED[status]
    assert f.status_code == status
    assert f.body == E.redact(json.dumps(body))  # the server's own body, redacted only
    assert f.endpoint == embed_stub.url + WIRES[wire][1] and f.model == "stub-embed"
    assert f"HTTP {status}" in f.message
    server_msg = body["error"] if isinstance(body["error"], str) else body["error"]["message"]
    assert E.redact(server_msg)[:40] in f.message
    assert KEY not in json.dumps(f.to_fields())
    warnings = [r for r in caplog.records if r.name == "engine.embed" and r.levelno == logging.WARNING]
    assert len(warnings) == 1  # logged once per call


@pytest.mark.parametrize("wire", WIRES)
def test_closed_port(closed_port, wire, embed_stub):
    e = http(embed_stub, wire, url=f"http://127.0.0.1:{closed_port}", retries=1)
    f = failure_of(e.embed, ["x"])
    assert (f.code, f.status_code, f.body) == ("embedding-unavailable", None, "")
    assert "could not connect" in f.message and "connection refused" in f.message
    assert "EMBED_URL" in f.message and "gave up after 2 attempts" in f.message


@pytest.mark.parametrize("wire", WIRES)
def test_timeout(embed_stub, wire):
    e = http(embed_stub, wire, timeout_s=0.3, retries=1)
    embed_stub.reply = Reply(hang_s=5)
    t0 = time.perf_counter()
    f = failure_of(e.probe)
    assert time.perf_counter() - t0 < 3
    assert (f.code, f.status_code) == ("embedding-unavailable", None)
    assert "0.3 s (EMBED_TIMEOUT)" in f.message
    assert embed_stub.count() == 2  # one retry


def test_key_never_in_failure_even_when_echoed(embed_stub):
    embed_stub.api_key = "the-right-key"
    e = http(embed_stub, "openai")  # sends KEY, which the stub echoes in its 401 body
    f = failure_of(e.embed, ["x"])
    assert f.code == "embedding-credential-rejected" and f.status_code == 401
    assert "invalid_api_key" in f.body and KEY not in f.body and KEY not in f.message
    assert "EMBED_API_KEY" in f.message


def test_401_without_key_says_none_is_set(embed_stub):
    embed_stub.api_key = "needed"
    f = failure_of(http(embed_stub, "openai", api_key="").probe)
    assert "no EMBED_API_KEY is set" in f.message


# --------------------------------------------------------------------------- retries


@pytest.mark.parametrize("wire", WIRES)
def test_503_then_200_succeeds(embed_stub, wire):
    e = http(embed_stub, wire, retries=2)
    e.probe()
    embed_stub.push(Reply(503, ERRORS[(wire, 503)]))
    assert e.embed(["x"]).shape == (1, 8)
    assert embed_stub.count() == 3  # probe + 503 + 200


@pytest.mark.slow
def test_retry_after_seconds_honoured(embed_stub):
    e = http(embed_stub, "openai", retries=1)
    e.probe()
    embed_stub.push(Reply(429, ERRORS[("openai", 429)], {"Retry-After": "1"}))
    t0 = time.perf_counter()
    e.embed(["x"])
    assert time.perf_counter() - t0 >= 0.95
    assert embed_stub.count() == 3


def test_retry_after_ms_honoured(embed_stub):
    e = http(embed_stub, "openai", retries=1, backoff_s=0.0)
    e.probe()
    embed_stub.push(Reply(429, ERRORS[("openai", 429)], {"retry-after-ms": "300"}))
    t0 = time.perf_counter()
    e.embed(["x"])
    assert 0.28 <= time.perf_counter() - t0 < 2


def test_retry_after_too_long_is_not_waited(embed_stub):
    e = http(embed_stub, "ollama", retries=3, max_retry_after_s=5)
    e.probe()
    embed_stub.reply = Reply(429, ERRORS[("ollama", 429)], {"Retry-After": "3600"})
    t0 = time.perf_counter()
    f = failure_of(e.embed, ["x"])
    assert time.perf_counter() - t0 < 1
    assert f.status_code == 429 and "retry after 3600 s" in f.message and embed_stub.count() == 2


def test_persistent_500_gives_up_bounded(embed_stub):
    e = http(embed_stub, "openai", retries=2)
    e.probe()
    embed_stub.reply = Reply(500, ERRORS[("openai", 500)])
    f = failure_of(e.embed, ["x"])
    assert (f.code, f.status_code) == ("embedding-unavailable", 500)
    assert "gave up after 3 attempts" in f.message and embed_stub.count() == 4


@pytest.mark.parametrize(
    "wire, status, body",
    [
        ("openai", 401, ERRORS[("openai", 401)]),
        ("ollama", 400, ERRORS[("ollama", 400)]),
        ("openai", 400, ERRORS[("openai", 400)]),
        ("ollama", 404, ERRORS[("ollama", 404)]),
        ("openai", 403, ERRORS[("openai", 403)]),
        ("openai", 422, ERRORS[("openai", 422)]),
        ("openai", 429, QUOTA_429),
    ],
)
def test_not_retried(embed_stub, wire, status, body):
    e = http(embed_stub, wire, retries=3)
    e.probe()
    embed_stub.reply = Reply(status, body)
    f = failure_of(e.embed, ["x"])
    assert f.status_code == status and embed_stub.count() == 2  # probe + one attempt
    if body is QUOTA_429:
        assert f.code == "embedding-unavailable" and "quota is exhausted" in f.message
        assert "insufficient_quota" in f.body


def test_input_too_long_from_server_names_it(embed_stub):
    e = http(embed_stub, "ollama")
    e.probe()
    embed_stub.reply = Reply(400, ERRORS[("ollama", 400)])
    f = failure_of(e.embed, ["x"])
    assert "too long" in f.message and str(e.max_input_chars) in f.message


# --------------------------------------------------------------------------- bad 2xx answers


@pytest.mark.parametrize("wire", WIRES)
@pytest.mark.parametrize(
    "body, code, words",
    [
        ({"error": "llama runner crashed"}, "embedding-unavailable", "an error instead of vectors"),
        ({"model": "stub-embed"}, "embedding-unavailable", "without vectors"),
        ("OK", "embedding-unavailable", "not JSON"),
    ],
)
def test_bad_2xx_is_a_failure(embed_stub, wire, body, code, words):
    e = http(embed_stub, wire)
    e.probe()
    embed_stub.reply = Reply(200, body)
    f = failure_of(e.embed, ["x"])
    assert (f.code, f.status_code) == (code, 200) and words in f.message
    assert f.body == (json.dumps(body) if isinstance(body, dict) else body)


def _vectors_body(wire, vectors):
    if wire == "ollama":
        return {"model": "stub-embed", "embeddings": vectors}
    return {
        "object": "list",
        "data": [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)],
    }


@pytest.mark.parametrize("wire", WIRES)
def test_wrong_count_wrong_dim_zero_vector(embed_stub, wire):
    e = http(embed_stub, wire)
    e.probe()
    embed_stub.push(Reply(200, _vectors_body(wire, [[1.0] * 8])))
    f = failure_of(e.embed, ["a", "b"])
    assert f.code == "embedding-unavailable" and "returned 1 vectors for 2 texts" in f.message
    embed_stub.push(Reply(200, _vectors_body(wire, [[1.0] * 5])))
    f = failure_of(e.embed, ["a"])
    assert f.code == "embedding-dimension-changed" and "5-dimensional" in f.message and "8" in f.message
    assert (f.stored_dim, f.server_dim) == (8, 5)
    embed_stub.push(Reply(200, _vectors_body(wire, [[0.0] * 8])))
    assert "all-zero" in failure_of(e.embed, ["a"]).message


# --------------------------------------------------------------------------- routes, detection


def test_plain_404_route_differs_from_missing_model(embed_stub):
    wrong_url = http(embed_stub, "ollama", url=embed_stub.url + "/wrong")
    f_route = failure_of(wrong_url.probe)
    missing = http(embed_stub, "ollama", model="nomic-embed-text")
    f_model = failure_of(missing.probe)
    assert f_route.code == f_model.code == "embedding-request-rejected"
    assert f_route.status_code == f_model.status_code == 404
    assert f_route.body == "404 page not found"
    assert "no /api/embed route" in f_route.message and "EMBED_URL" in f_route.message
    assert "'nomic-embed-text' is not available" in f_model.message
    assert "ollama pull nomic-embed-text" in f_model.message and "EMBED_MODEL" in f_model.message


def test_openai_model_not_found(embed_stub):
    f = failure_of(http(embed_stub, "openai", model="text-embedding-9").probe)
    assert f.status_code == 404 and "model_not_found" in f.body and "EMBED_MODEL" in f.message


@pytest.mark.parametrize(
    "formats, provider", [(("ollama", "openai"), "ollama"), (("openai",), "openai"), (("ollama",), "ollama")]
)
def test_auto_detects_wire_format(embed_stub, tmp_path, formats, provider):
    embed_stub.formats = set(formats)
    s = settings(tmp_path, EMBED_PROVIDER="auto", EMBED_URL=embed_stub.url, EMBED_MODEL="stub-embed")
    e = E.make_embedder(s)
    assert e.provider == provider and e.dim == 8
    n = embed_stub.count()
    assert e.embed(["x"]).shape == (1, 8) and embed_stub.count() == n + 1  # already probed


def test_auto_reports_ollama_model_missing_without_trying_openai(embed_stub, tmp_path):
    s = settings(tmp_path, EMBED_PROVIDER="auto", EMBED_URL=embed_stub.url, EMBED_MODEL="absent")
    with pytest.raises(EmbedError) as ei:
        E.make_embedder(s)
    assert ei.value.failure.status_code == 404 and "ollama pull absent" in ei.value.failure.message
    assert embed_stub.count("/v1/embeddings") == 0


def test_auto_neither_format(embed_stub, tmp_path):
    embed_stub.formats = set()
    s = settings(tmp_path, EMBED_PROVIDER="auto", EMBED_URL=embed_stub.url, EMBED_MODEL="stub-embed")
    with pytest.raises(EmbedError) as ei:
        E.make_embedder(s)
    f = ei.value.failure
    assert f.code == "embedding-request-rejected" and "neither wire format" in f.message


def test_auto_unreachable(closed_port, tmp_path):
    s = settings(
        tmp_path, EMBED_PROVIDER="auto", EMBED_URL=f"http://127.0.0.1:{closed_port}", EMBED_MODEL="m", EMBED_RETRIES=0
    )
    with pytest.raises(EmbedError) as ei:
        E.make_embedder(s)
    assert ei.value.failure.code == "embedding-unavailable" and ei.value.failure.status_code is None


@pytest.mark.parametrize("speaks, forced, other", [("ollama", "openai", "ollama"), ("openai", "ollama", "openai")])
def test_forced_wrong_format_refused(embed_stub, tmp_path, speaks, forced, other):
    embed_stub.formats = {speaks}
    s = settings(tmp_path, EMBED_PROVIDER=forced, EMBED_URL=embed_stub.url, EMBED_MODEL="stub-embed")
    e = E.make_embedder(s)
    f = failure_of(e.embed, ["x"])
    assert (f.code, f.status_code) == ("embedding-request-rejected", 404)
    assert f"EMBED_PROVIDER={other}" in f.message and "wire format" in f.message


def test_openai_url_with_v1_suffix(embed_stub):
    e = http(embed_stub, "openai", url=embed_stub.url + "/v1/")
    assert e.endpoint == embed_stub.url + "/v1/embeddings"
    assert e.embed(["x"]).shape == (1, 8)


# --------------------------------------------------------------------------- dim, limits, settings


def test_dim_mismatch_stops_before_any_vector(embed_stub, tmp_path):
    s = settings(tmp_path, EMBED_PROVIDER="ollama", EMBED_URL=embed_stub.url, EMBED_MODEL="stub-embed", EMBED_DIM=16)
    e = E.make_embedder(s)
    f = failure_of(e.embed, ["a", "b"])
    assert f.code == "embedding-request-rejected"
    assert "EMBED_DIM is 16" in f.message and "8-dimensional" in f.message
    assert [r.json["input"] for r in embed_stub.requests] == [[E.PROBE_TEXT]]  # no real call made


def test_too_long_input_refused_before_sending(embed_stub):
    e = http(embed_stub, "ollama", model="stub-embed")
    assert e.max_input_chars == 1536  # unknown model: 512 tokens x 3 chars
    f = failure_of(e.embed, ["short", "x" * 2000])
    assert (f.code, f.status_code) == ("embedding-request-rejected", None)
    assert "text 1 is 2000 characters" in f.message and "1536-character input limit" in f.message
    assert "CHUNKNAV_CHUNK_SIZE" in f.message and embed_stub.count() == 0
    roomy = http(embed_stub, "ollama", max_input_chars=5000)
    assert roomy.embed(["x" * 2000]).shape == (1, 8)


def test_known_input_limits():
    assert E.known_input_limit_chars("nomic-embed-text:latest") == 2048 * 3
    assert E.known_input_limit_chars("text-embedding-3-small") == 8191 * 3
    assert E.known_input_limit_chars("BAAI/bge-m3") == 8192 * 3
    assert E.known_input_limit_chars("mxbai-embed-large:335m") == 512 * 3


def test_make_embedder_settings(tmp_path):
    assert E.make_embedder(settings(tmp_path, EMBED_PROVIDER="none")) is None
    default = E.make_embedder(settings(tmp_path))  # built, not loaded
    assert isinstance(default, E.MiniLMEmbedder) and default.model == "all-MiniLM-L6-v2" and default.dim == 384
    assert isinstance(default, E.Embedder)
    local = E.make_embedder(settings(tmp_path, EMBED_MODEL="l2_supercat_256"))
    assert isinstance(local, E.LocalEmbedder) and local.model == "l2_supercat_256" and local.dim == 256
    assert isinstance(local, E.Embedder)
    for provider in ("ollama", "openai", "auto"):
        with pytest.raises(SettingsError, match="EMBED_MODEL"):
            E.make_embedder(settings(tmp_path, EMBED_PROVIDER=provider))
    with pytest.raises(SettingsError, match="EMBED_URL"):
        E.make_embedder(settings(tmp_path, EMBED_PROVIDER="ollama", EMBED_MODEL="m", EMBED_URL="127.0.0.1:11434"))
    with pytest.raises(SettingsError, match="EMBED_MODEL"):
        E.make_embedder(settings(tmp_path, EMBED_MODEL="all-mpnet-base-v2"))
    o = E.make_embedder(settings(tmp_path, EMBED_PROVIDER="ollama", EMBED_MODEL="m"))
    assert o.endpoint == "http://127.0.0.1:11434/api/embed"


def test_endpoint_hides_userinfo(embed_stub):
    url = embed_stub.url.replace("http://", "http://user:pw@")
    e = http(embed_stub, "ollama", url=url + "/?token=abc")
    assert "pw" not in e.endpoint and "token" not in e.endpoint


def test_empty_text_is_a_bug():
    with pytest.raises(ValueError):
        E.LocalEmbedder().embed(["ok", ""])


# --------------------------------------------------------------------------- local model


@pytest.fixture
def no_network(monkeypatch):
    """Any outgoing connection raises; HF offline flags set as well."""

    def refuse(*args, **kwargs):
        raise AssertionError(f"network touched: {args[1:] if len(args) > 1 else args}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def test_local_loads_offline_into_fresh_cache(tmp_path, no_network):
    with _no_warnings():
        model = E.load_wordllama(tmp_path / "cache")
    for sub in ("tokenizer", "tokenizers"):
        assert (tmp_path / "cache" / sub / "l2_supercat_tokenizer_config.json").is_file()
    v = model.embed(["offline"], norm=True)
    assert v.shape == (1, 256)


def test_local_offline_in_a_fresh_process(tmp_path):
    """A new interpreter with every socket connect refused: loads, embeds, and
    leaves the root logger as it was (wordllama calls basicConfig on import)."""
    code = f"""
import logging, socket
def refuse(*a, **k):
    raise SystemExit("network touched")
socket.socket.connect = refuse
socket.create_connection = refuse
from engine import embed
m = embed.load_wordllama({str(tmp_path)!r})
e = embed.LocalEmbedder()
v = e.embed(["offline please"])
assert v.shape == (1, 256), v.shape
assert logging.getLogger().handlers == [], logging.getLogger().handlers
assert logging.getLogger().level == logging.WARNING
print("ok")
"""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EMBED_", "CHUNKNAV_"))}
    env["HF_HUB_OFFLINE"] = "1"
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).resolve().parents[2],
        env=env,
    )
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]


class _no_warnings:
    def __enter__(self):
        import warnings

        self._cm = warnings.catch_warnings()
        self._cm.__enter__()
        warnings.simplefilter("error")  # e.g. wordllama's "falling back to Hugging Face"

    def __exit__(self, *exc):
        return self._cm.__exit__(*exc)


def test_local_embed_shape_norm_similarity(no_network):
    e = E.LocalEmbedder(batch=2)
    texts = [
        "The cat sat on the mat and purred.",
        "A kitten was sleeping on the rug.",
        "Quarterly tax revenue rose by three percent.",
        "a" * 3000,
        "dog",
    ]
    v = e.embed(texts)
    assert v.shape == (5, 256) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert v[0] @ v[1] > v[0] @ v[2] + 0.1  # related beats unrelated
    one_by_one = np.stack([e.embed_query(t) for t in texts])  # length-sorted batching keeps order
    assert np.allclose(v, one_by_one, atol=1e-5)
    assert e.endpoint is None and e.provider == "local"


def test_local_limit_and_dim(no_network):
    e = E.LocalEmbedder()
    f = failure_of(e.embed, ["x" * (E.LOCAL_MAX_INPUT_CHARS + 1)])
    assert f.code == "embedding-request-rejected" and str(E.LOCAL_MAX_INPUT_CHARS) in f.message
    f = failure_of(E.LocalEmbedder(dim=128).probe)
    assert "EMBED_DIM is 128" in f.message and "256-dimensional" in f.message


def test_local_model_shared_across_threads(no_network):
    seen = []
    threads = [threading.Thread(target=lambda: seen.append(id(E._shared_model()))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(seen)) == 1


def test_length_batches_respect_count_and_budget():
    lengths = [10, 5000, 20, 30, 4000, 40]
    batches = length_batches(lengths, batch=3, budget=8000)
    assert sorted(i for b in batches for i in b) == list(range(6))
    for b in batches:
        assert len(b) <= 3 and (len(b) == 1 or len(b) * max(lengths[i] for i in b) <= 8000)


def test_auto_openai_server_failure_stands_and_detection_is_quiet(embed_stub, tmp_path, caplog):
    embed_stub.formats = {"openai"}
    s = settings(tmp_path, EMBED_PROVIDER="auto", EMBED_URL=embed_stub.url, EMBED_MODEL="stub-embed", EMBED_API_KEY=KEY)
    assert E.make_embedder(s).provider == "openai"
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]  # the /api/embed miss is not an error
    embed_stub.api_key = "another-key"
    with pytest.raises(EmbedError) as ei:
        E.make_embedder(s)
    f = ei.value.failure
    assert (f.code, f.status_code) == ("embedding-credential-rejected", 401)
    assert "neither" not in f.message and KEY not in f.body


def test_local_unpadded_pooling_gives_wordllamas_vectors(no_network):
    """The local provider tokenizes once without padding and averages each text's rows:
    the same vectors as WordLlama's own padded, unsorted batches."""
    texts = [
        "short",
        "a much longer text about rockets, skates and the speed of light " * 12,
        "Über naïve café 東京 123,456.78",
        "x",
        "the middle one, of a middling length " * 3,
    ]
    ref = E._shared_model().embed(texts, norm=True, batch_size=64)  # one padded batch, given order
    ours = E.LocalEmbedder().embed(texts)
    assert np.allclose(ours, ref, atol=1e-6)
    assert np.allclose(E.LocalEmbedder().embed(texts[::-1])[::-1], ref, atol=1e-6)  # order-free
