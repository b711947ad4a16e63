"""engine/embed/isolate.py and the retry rules: one refused input never blocks the
others (bisection, truncation, failure as data), deterministic refusals are not
retried, and a 429's wait comes from Retry-After, then the body's hint, then
backoff. Against the loopback stub speaking the real Ollama / OpenAI /
llama.cpp wire formats and error bodies; only ``time.sleep`` is monkeypatched."""

import numpy as np
import pytest

from engine import embed as E
from engine.embed import http as H
from engine.errors import EmbedError
from tests.fixtures.stub import ERRORS, LLAMACPP_TOO_LARGE_500, OPENAI_429_HINT_S, Reply, openai_error, stub_vector

LONG = 300  # characters over which the stub's "small-context model" refuses a text


def _unit(v):
    v = np.asarray(v, dtype=np.float32)
    return v / np.linalg.norm(v)


def _inputs(payload):
    x = payload.get("input")
    return [x] if isinstance(x, str) else list(x)


def ollama_small_context(path, payload):
    """Ollama with a small context and "truncate": false: the whole batch gets a 400."""
    if path == "/api/embed" and not payload.get("truncate") and any(len(t) > LONG for t in _inputs(payload)):
        return Reply(400, ERRORS[("ollama", 400)])
    return None


def openai_context(path, payload):
    """OpenAI: a batch with a text over the limit is refused with its token counts
    (the real 400 body, ERRORS[("openai", 400)], with one token per character here)."""
    longest = max(len(t) for t in _inputs(payload))
    if path == "/v1/embeddings" and longest > LONG:
        return Reply(
            400,
            openai_error(
                f"This model's maximum context length is {LONG} tokens, however you requested {longest} tokens "
                f"({longest} in your prompt; 0 for the completion). Please reduce your prompt; or completion length.",
                "invalid_request_error",
            ),
        )
    return None


def llamacpp_too_large(path, payload):
    if path == "/v1/embeddings" and any(len(t) > LONG for t in _inputs(payload)):
        return Reply(500, LLAMACPP_TOO_LARGE_500)
    return None


def texts(n=10, bad=(3,)):
    return [("bad text " * 60 if i in bad else f"window number {i} about topic {i % 3}") for i in range(n)]


@pytest.fixture
def sleeps(monkeypatch):
    got = []
    monkeypatch.setattr(H, "_sleep", got.append)
    return got


def test_ollama_one_refused_input_is_isolated_and_truncated(embed_stub):
    embed_stub.refuse = ollama_small_context
    e = E.OllamaEmbedder(embed_stub.url, "stub-embed", retries=3, max_input_chars=5000)
    t = texts(10, bad=(3,))
    vectors, ok, outcomes = E.embed_isolating(e, t)
    assert ok.all()
    for i, text in enumerate(t):
        if i != 3:
            assert np.allclose(vectors[i], _unit(stub_vector(text, 8)), atol=1e-6)
    assert [(o.index, o.truncated_chars, o.failure) for o in outcomes] == [(3, len(t[3]), None)]
    posts = [r.json for r in embed_stub.requests if r.path == "/api/embed" and r.json["input"] != [E.PROBE_TEXT]]
    retries = [p for p in posts if p["truncate"]]
    assert retries == [{"model": "stub-embed", "input": [t[3]], "truncate": True}]  # the retry only
    assert len(posts) <= 1 + 2 * 4 + 1  # whole batch, bisection (log2 10 levels), truncated retry


def test_openai_refusal_is_cut_by_the_servers_token_counts(embed_stub):
    embed_stub.refuse = openai_context
    e = E.OpenAIEmbedder(embed_stub.url, "stub-embed", retries=3, max_input_chars=5000)
    t = texts(6, bad=(0, 5))
    vectors, ok, outcomes = E.embed_isolating(e, t)
    assert ok.all() and [o.index for o in outcomes] == [0, 5]
    want = int(len(t[0]) * LONG / len(t[0]) * 0.9)  # the body's "300 tokens, however you requested 540"
    assert outcomes[0].truncated_chars == want
    cut = t[0][:want]
    assert np.allclose(vectors[0], _unit(stub_vector(cut, 8)), atol=1e-6)


def test_llamacpp_too_large_500_is_not_retried_and_isolated(embed_stub, sleeps):
    embed_stub.refuse = llamacpp_too_large
    e = E.OpenAIEmbedder(embed_stub.url, "stub-embed", retries=4, max_input_chars=5000)
    e.probe()
    with pytest.raises(EmbedError) as ei:
        e.embed([texts(1, bad=(0,))[0]])
    f = ei.value.failure
    assert (f.code, f.status_code, f.input_refused) == ("embedding-request-rejected", 500, True)
    assert "not retried" in f.message and embed_stub.count() == 2 and sleeps == []
    t = texts(8, bad=(6,))
    vectors, ok, outcomes = E.embed_isolating(e, t)
    assert ok.all() and sleeps == []
    # "input (992 tokens) ... (current batch size: 512)": keep 512/992 of the text, less 10 %
    assert outcomes[0].truncated_chars == int(len(t[6]) * 512 / 992 * 0.9)


def test_a_text_over_the_client_limit_is_cut_without_sending_it_whole(embed_stub):
    e = E.OpenAIEmbedder(embed_stub.url, "stub-embed", max_input_chars=100)
    t = ["short one", "y" * 250, "short two"]
    vectors, ok, outcomes = E.embed_isolating(e, t)
    assert ok.all() and [(o.index, o.truncated_chars) for o in outcomes] == [(1, 100)]
    sent = [x for r in embed_stub.requests for x in _inputs(r.json)]
    assert "y" * 250 not in sent and "y" * 100 in sent


def test_a_text_refused_even_cut_is_reported_and_the_rest_embedded(embed_stub):
    embed_stub.refuse = lambda path, p: (
        Reply(400, ERRORS[("ollama", 400)]) if any("poison" in t for t in _inputs(p)) else None
    )
    e = E.OllamaEmbedder(embed_stub.url, "stub-embed")
    t = ["alpha", "beta poison", "gamma", "delta"]
    vectors, ok, outcomes = E.embed_isolating(e, t)
    assert ok.tolist() == [True, False, True, True]
    assert len(outcomes) == 1 and outcomes[0].index == 1 and outcomes[0].truncated_chars is None
    assert outcomes[0].failure.code == "embedding-request-rejected"
    assert not vectors[1].any()


def test_a_server_that_refuses_everything_stops_instead_of_bisecting_forever(embed_stub):
    e = E.OllamaEmbedder(embed_stub.url, "stub-embed")
    e.probe()
    embed_stub.reply = Reply(400, ERRORS[("ollama", 400)])
    with pytest.raises(EmbedError) as ei:
        E.embed_isolating(e, [f"text {i}" for i in range(32)])
    assert ei.value.failure.code == "embedding-request-rejected"
    assert embed_stub.count() < 20  # bisect to one text, cut it, then the probe text is refused too: stop


def test_global_failures_are_not_bisected(embed_stub, sleeps):
    e = E.OllamaEmbedder(embed_stub.url, "stub-embed", retries=1)
    e.probe()
    embed_stub.reply = Reply(404, ERRORS[("ollama", 404)])
    with pytest.raises(EmbedError):
        E.embed_isolating(e, [f"text {i}" for i in range(16)])
    assert embed_stub.count() == 2  # probe + one request: a missing model is not about one text


# --------------------------------------------------------------------------- 429 waits


def test_429_retry_after_header_is_used_first(embed_stub, sleeps):
    e = E.OpenAIEmbedder(embed_stub.url, "stub-embed", retries=2)
    e.probe()
    embed_stub.push(Reply(429, OPENAI_429_HINT_S, {"Retry-After": "4"}))
    assert e.embed(["x"]).shape == (1, 8)
    assert sleeps == [4.0]


def test_429_body_hint_is_used_when_no_header(embed_stub, sleeps):
    e = E.OpenAIEmbedder(embed_stub.url, "stub-embed", retries=2)
    e.probe()
    embed_stub.push(Reply(429, OPENAI_429_HINT_S))
    embed_stub.push(Reply(429, ERRORS[("openai", 429)]))  # "Please try again in 20ms."
    assert e.embed(["x"]).shape == (1, 8)
    assert sleeps == [2.812, 0.02]


@pytest.mark.parametrize(
    "body, seconds",
    [
        ("Please try again in 1m30s.", 90.0),
        ("please try again in 7s", 7.0),
        ("Try again in 450ms", 0.45),
        ("Please try again in 1.5s.", 1.5),
        ("rate limited", None),
    ],
)
def test_body_hint_forms(body, seconds):
    assert H._body_retry_hint_s('{"error": {"message": "%s"}}' % body) == seconds


def test_429_without_hints_backs_off_exponentially_and_bounded(embed_stub, sleeps, monkeypatch):
    monkeypatch.setattr(H.random, "random", lambda: 1.0)  # no jitter: delays are exact
    e = E.OllamaEmbedder(embed_stub.url, "stub-embed", retries=5, backoff_s=0.5, max_backoff_s=3.0)
    e.probe()
    embed_stub.reply = Reply(429, ERRORS[("ollama", 429)])  # "too many requests": no hint
    with pytest.raises(EmbedError) as ei:
        e.embed(["x"])
    assert sleeps == [0.5, 1.0, 2.0, 3.0, 3.0]
    assert "gave up after 6 attempts" in ei.value.failure.message


def test_429_body_hint_longer_than_the_cap_is_not_waited(embed_stub, sleeps):
    e = E.OpenAIEmbedder(embed_stub.url, "stub-embed", retries=3, max_retry_after_s=2)
    e.probe()
    embed_stub.reply = Reply(429, OPENAI_429_HINT_S)  # 2.812 s > 2 s
    with pytest.raises(EmbedError) as ei:
        e.embed(["x"])
    assert sleeps == [] and "longer than the 2 s we wait" in ei.value.failure.message


def test_isolation_logs_one_line_per_bad_text_not_per_sub_batch(embed_stub, caplog):
    import logging

    caplog.set_level(logging.INFO, logger="engine.embed")
    embed_stub.refuse = ollama_small_context
    e = E.OllamaEmbedder(embed_stub.url, "stub-embed", max_input_chars=5000)
    e.probe()
    caplog.clear()
    E.embed_isolating(e, texts(32, bad=(17,)))
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and "embedded cut" in warnings[0].getMessage()
