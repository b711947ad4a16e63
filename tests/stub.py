"""A loopback embedding server for tests: the Ollama and OpenAI wire formats.

``EmbedStub`` listens on 127.0.0.1, port 0, in a daemon thread. By default it
answers like the real servers: ``POST /api/embed`` (Ollama) and ``POST
/v1/embeddings`` (OpenAI), ``GET /api/tags`` and ``GET /v1/models``, with a
deterministic embedding (a seeded vector from the sha256 of the text, of
``dim`` numbers, deliberately not unit length). Unknown models get each
server's real 404; a missing/wrong bearer key (when ``api_key`` is set) the
real OpenAI 401; unknown routes Ollama's plain-text ``404 page not found``
(or vLLM's ``{"detail": "Not Found"}`` when only OpenAI is spoken).

A test scripts replies with ``push(Reply(...))`` (one-shot, in order) or
``reply = Reply(...)`` (every request until reset); ``ERRORS[(wire, status)]``
holds real error bodies of each server. ``requests`` records every request.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

__all__ = ["Reply", "Recorded", "EmbedStub", "ERRORS", "QUOTA_429", "LLAMACPP_TOO_LARGE_500", "OPENAI_429_HINT_S", "stub_vector", "ollama_error", "openai_error"]


def ollama_error(message: str) -> dict[str, Any]:
    """Ollama's error body: ``{"error": "..."}``."""
    return {"error": message}


def openai_error(message: str, type_: str, code: str | None = None, param: str | None = None) -> dict[str, Any]:
    """OpenAI's error body: ``{"error": {"message", "type", "param", "code"}}``."""
    return {"error": {"message": message, "type": type_, "param": param, "code": code}}


#: Real error bodies, by (wire format, HTTP status).
ERRORS: dict[tuple[str, int], dict[str, Any]] = {
    ("ollama", 400): ollama_error("the input length exceeds the context length"),
    ("ollama", 401): ollama_error("unauthorized"),
    ("ollama", 403): ollama_error("forbidden: origin not allowed"),
    ("ollama", 404): ollama_error('model "stub-embed" not found, try pulling it first'),
    ("ollama", 422): ollama_error("invalid input type: expected string or array of strings"),
    ("ollama", 429): ollama_error("too many requests"),
    ("ollama", 500): ollama_error("llama runner process has terminated: exit status 2"),
    ("ollama", 503): ollama_error("server busy, please try again.  maximum pending requests exceeded"),
    ("openai", 400): openai_error(
        "This model's maximum context length is 8192 tokens, however you requested 9314 tokens "
        "(9314 in your prompt; 0 for the completion). Please reduce your prompt; or completion length.",
        "invalid_request_error"),
    ("openai", 401): openai_error(
        "Incorrect API key provided: sk-stub*****-key. You can find your API key at "
        "https://platform.openai.com/account/api-keys.", "invalid_request_error", "invalid_api_key"),
    ("openai", 403): openai_error(
        "Project `proj_stub` does not have access to model `stub-embed`", "invalid_request_error",
        "model_not_found"),
    ("openai", 404): openai_error(
        "The model `stub-embed` does not exist or you do not have access to it.", "invalid_request_error",
        "model_not_found"),
    ("openai", 422): openai_error("Input validation error: `inputs` cannot be empty", "Validation"),
    ("openai", 429): openai_error(
        "Rate limit reached for text-embedding-3-small in organization org-stub on requests per min (RPM): "
        "Limit 3000, Used 3000, Requested 1. Please try again in 20ms.", "requests", "rate_limit_exceeded"),
    ("openai", 500): openai_error(
        "The server had an error while processing your request. Sorry about that!", "server_error"),
    ("openai", 503): openai_error("The engine is currently overloaded, please try again later", "server_error"),
}
#: llama.cpp server (``llama-server --embeddings``): an input longer than the
#: physical batch is refused with HTTP 500, deterministically (older builds say
#: only "input is too large to process. increase the physical batch size").
LLAMACPP_TOO_LARGE_500 = {"error": {"code": 500, "message": "input (992 tokens) is too large to process. "
                                    "increase the physical batch size (current batch size: 512)",
                                    "type": "server_error"}}
#: OpenAI's rate-limit body with its own wait hint in seconds (no Retry-After header).
OPENAI_429_HINT_S = openai_error(
    "Rate limit reached for text-embedding-3-small in organization org-stub on tokens per min (TPM): "
    "Limit 1000000, Used 999000, Requested 2400. Please try again in 2.812s. Visit "
    "https://platform.openai.com/account/rate-limits to learn more.", "tokens", "rate_limit_exceeded")
QUOTA_429 = openai_error("You exceeded your current quota, please check your plan and billing details.",
                         "insufficient_quota", "insufficient_quota")


def stub_vector(text: str, dim: int) -> list[float]:
    """Deterministic embedding of ``text``: seeded normal vector, length 3 (not unit)."""
    seed = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "little")
    v = np.random.default_rng(seed).standard_normal(dim)
    return (3.0 * v / np.linalg.norm(v)).tolist()


@dataclass
class Reply:
    """A scripted answer: status, body (dict/list -> JSON, str -> text/plain; a
    callable gets the ``Recorded`` request and returns the body, e.g. to echo
    a header back), headers, hang.

    ``hang_s`` waits that long (interruptible at shutdown) before answering;
    ``body=None`` with status 200 means "the normal embedding answer".
    """

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    hang_s: float = 0.0


@dataclass
class Recorded:
    """One request the stub received."""

    method: str
    path: str
    headers: dict[str, str]
    json: Any


class _Handler(BaseHTTPRequestHandler):
    server: EmbedStub
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:  # keep pytest output quiet
        pass

    def _send(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        if isinstance(body, (dict, list)):
            data, ctype = json.dumps(body).encode(), "application/json; charset=utf-8"
        else:
            data, ctype = str(body or "").encode(), "text/plain; charset=utf-8"
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _handle(self, method: str) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            payload = json.loads(raw) if raw else None
        except ValueError:
            payload = None
        path = self.path.split("?", 1)[0]
        stub = self.server
        rec = Recorded(method, path, {k: v for k, v in self.headers.items()}, payload)
        with stub.lock:
            stub.requests.append(rec)
            scripted = stub.queue.popleft() if stub.queue else stub.reply
        if scripted is not None and scripted.hang_s:
            stub.stopping.wait(scripted.hang_s)
        if scripted is not None and not (scripted.status == 200 and scripted.body is None):
            body = scripted.body(rec) if callable(scripted.body) else scripted.body
            self._send(scripted.status, body, scripted.headers)
            return
        refused = stub.refuse(path, payload) if stub.refuse is not None and method == "POST" else None
        if refused is not None:
            self._send(refused.status, refused.body, refused.headers)
            return
        self._send(*stub.answer(method, path, rec.headers, payload))

    def do_POST(self) -> None:  # noqa: N802
        self._handle("POST")

    def do_GET(self) -> None:  # noqa: N802
        self._handle("GET")


class EmbedStub(ThreadingHTTPServer):
    """Loopback stub. Attributes a test may set:

    * ``dim``: vector dimension of the normal answer (default 8).
    * ``formats``: wire formats spoken, subset of ``{"ollama", "openai"}``.
    * ``models``: model names installed (others get the server's 404).
    * ``api_key``: when set, ``/v1/embeddings`` needs ``Bearer <api_key>``.
    * ``reply``: a sticky ``Reply`` for every request (None: normal answers).
    * ``queue``: one-shot ``Reply`` objects used first (see ``push``).
    * ``refuse``: ``(path, payload) -> Reply | None`` consulted for every POST
      after the scripted replies: a ``Reply`` answers instead of the normal
      embedding (e.g. refuse any batch holding one over-long text, as a
      small-context model does), None lets the normal answer through.
    """

    daemon_threads = True

    def __init__(self, dim: int = 8, formats: tuple[str, ...] = ("ollama", "openai"),
                 models: tuple[str, ...] = ("stub-embed",)):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.dim = dim
        self.formats = set(formats)
        self.models = set(models)
        self.api_key = ""
        self.reply: Reply | None = None
        self.queue: deque[Reply] = deque()
        self.refuse: Any = None
        self.requests: list[Recorded] = []
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self._thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.02},
                                        daemon=True, name="embed-stub")

    @property
    def url(self) -> str:
        """Base URL, ``http://127.0.0.1:<port>``."""
        return f"http://127.0.0.1:{self.server_port}"

    def start(self) -> EmbedStub:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        self.shutdown()
        self.server_close()

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that timed out and closed the socket is expected here

    def push(self, *replies: Reply) -> None:
        """Queue one-shot replies, answered in order before anything else."""
        with self.lock:
            self.queue.extend(replies)

    def count(self, path: str | None = None) -> int:
        """Requests received (to ``path`` only, when given)."""
        with self.lock:
            return sum(1 for r in self.requests if path is None or r.path == path)

    # -- the normal (real-server-like) answers ----------------------------------
    def answer(self, method: str, path: str, headers: dict[str, str], payload: Any) -> tuple[int, Any]:
        if "ollama" in self.formats and (method, path) == ("POST", "/api/embed"):
            model = (payload or {}).get("model")
            if model not in self.models:
                return 404, ollama_error(f'model "{model}" not found, try pulling it first')
            texts = payload.get("input")
            texts = [texts] if isinstance(texts, str) else texts
            return 200, {"model": model, "embeddings": [stub_vector(t, self.dim) for t in texts],
                         "total_duration": 1000, "load_duration": 10, "prompt_eval_count": len(texts)}
        if "ollama" in self.formats and (method, path) == ("GET", "/api/tags"):
            return 200, {"models": [{"name": m, "model": m} for m in sorted(self.models)]}
        if "openai" in self.formats and path in ("/v1/embeddings", "/v1/models"):
            auth = {k.lower(): v for k, v in headers.items()}.get("authorization", "")
            if self.api_key and auth != f"Bearer {self.api_key}":
                shown = auth.removeprefix("Bearer ")
                return 401, openai_error(
                    f"Incorrect API key provided: {shown}. You can find your API key at "
                    f"https://platform.openai.com/account/api-keys.", "invalid_request_error", "invalid_api_key")
            if path == "/v1/models":
                return 200, {"object": "list", "data": [{"id": m, "object": "model"} for m in sorted(self.models)]}
            model = (payload or {}).get("model")
            if model not in self.models:
                return 404, openai_error(f"The model `{model}` does not exist or you do not have access to it.",
                                         "invalid_request_error", "model_not_found")
            texts = payload.get("input")
            texts = [texts] if isinstance(texts, str) else texts
            data = [{"object": "embedding", "index": i, "embedding": stub_vector(t, self.dim)}
                    for i, t in enumerate(texts)]
            data.reverse()  # real servers may return any order; clients must use "index"
            return 200, {"object": "list", "data": data, "model": model,
                         "usage": {"prompt_tokens": 1, "total_tokens": 1}}
        if self.formats == {"openai"}:
            return 404, {"detail": "Not Found"}  # vLLM / FastAPI
        return 404, "404 page not found"  # Ollama's router (Go gin)
