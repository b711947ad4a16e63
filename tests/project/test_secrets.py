"""Secrets never leave the process (engine/secrets.py).

Unit checks of ``redact`` on every form, then one end-to-end run: the
loopback stub answers every embedding request with 401 and a body that
echoes every configured secret (API key, the password and ``user:password``
of ``EMBED_URL``, the PDF password, the explorer's access token, the MCP
token) in raw, JSON-escaped, URL-encoded and base64 forms, plus the
``Authorization`` header it received. Then every output is grepped for every
form: CLI stdout/stderr (index, status, search with ``-v`` logs), the MCP
server's results and stderr, the SQLite file (every byte: the index keeps only
a reference to the PDF password), the GUI pages under AppTest, and
the log records of an in-process call.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from engine import secrets as S
from engine.config import load_settings
from engine.embed import redact as embed_redact
from engine.tools.registry import Engine, call_tool
from tests.fixtures.mcp_session import run_session
from tests.fixtures.stub import Reply

REPO = Path(__file__).resolve().parents[2]
APP = str(REPO / "explorer" / "app.py")
KEY = "sk-live-Q7f9ZkLmN2pR8sT4"
USER, PASSWORD = "alice", "Pw-9x7Yq2LzK"
PDF_PASSWORD = "openpassword"
TOKEN = "tok-3e8c1f2a9b7d"
MCP_TOKEN = "mcp-tok-8d2e5c1a77"
SECRETS = [KEY, PASSWORD, f"{USER}:{PASSWORD}", PDF_PASSWORD, TOKEN, MCP_TOKEN]


def forms(secret: str) -> dict[str, str]:
    """Every form a server may echo a secret in."""
    out = {
        "raw": secret,
        "json-escaped": "".join(f"\\u{ord(c):04x}" for c in secret),
        "json-escaped-mixed": "".join(f"\\u{ord(c):04X}" if i % 2 else c for i, c in enumerate(secret)),
        "url-encoded": "".join(f"%{b:02X}" for b in secret.encode()),
        "url-quoted": quote(secret, safe=""),
        "base64": base64.b64encode(secret.encode()).decode(),
        "base64-unpadded": base64.b64encode(secret.encode()).decode().rstrip("="),
        "base64-urlsafe": base64.urlsafe_b64encode(secret.encode()).decode(),
        "hex": secret.encode().hex(),
        "hex-upper": secret.encode().hex().upper(),
    }
    for prefix in ENVELOPES:
        out[f"base64-inside-{len(prefix.encode()) % 3}"] = base64.b64encode(f"{prefix}{secret}; tail".encode()).decode()
        out[f"base64-urlsafe-inside-{len(prefix.encode()) % 3}"] = base64.urlsafe_b64encode(
            f"{prefix}{secret}?x".encode()
        ).decode()
    return out


#: Larger strings a secret is logged inside, one per byte alignment of a base64 group.
ENVELOPES = ("Bearer ", "Bearer: ", "Authorization: ")


def marks(secret: str) -> dict[str, str]:
    """What must not survive of each form: the form itself, or for base64 of a larger
    string the characters that encode only the secret's own bytes (whole base64 groups
    between its first and its last byte)."""
    out = forms(secret)
    raw = secret.encode()
    for prefix in ENVELOPES:
        start, end = len(prefix.encode()), len(prefix.encode()) + len(raw)
        first, last = -(-start // 3) * 4, end // 3 * 4  # character range of the secret-only groups
        for name in (f"base64-inside-{start % 3}", f"base64-urlsafe-inside-{start % 3}"):
            out[name] = out[name][first:last]
    return out


def leaks(text: str) -> list[str]:
    """``secret/form`` for each form of each secret found in ``text``."""
    found = []
    for s in SECRETS:
        for name, f in marks(s).items():
            if name == "url-quoted" and f == s:
                continue
            if f in text:
                found.append(f"{s}/{name}")
    return found


# ------------------------------------------------------------------ unit
@pytest.mark.parametrize("form", list(forms("x")))
def test_every_form_of_a_registered_secret_is_redacted(form):
    S.register(KEY)
    f, mark = forms(KEY)[form], marks(KEY)[form]
    assert len(mark) >= 8
    out = S.redact(f'{{"error": "Incorrect API key provided: {f}."}}')
    assert mark not in out and S.MARK in out


def test_basic_authorization_of_url_userinfo_is_redacted():
    S.register_url(f"http://{USER}:{PASSWORD}@127.0.0.1:9/x")
    basic = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
    out = S.redact(f"header was Authorization: Basic {basic}; password {PASSWORD}")
    assert basic not in out and PASSWORD not in out
    assert "Basic [REDACTED]" in out
    # any Basic credential, even of a secret never registered
    other = base64.b64encode(b"bob:unregistered-pw").decode()
    assert other not in S.redact(f"Authorization: Basic {other}")


def test_settings_register_every_secret_setting_and_url_userinfo():
    s = load_settings(
        environ={
            "EMBED_API_KEY": "key-abcdef-123",
            "CHUNKNAV_ACCESS_TOKEN": "tok-zzz-999",
            "EMBED_URL": "http://u:url-pw-777@h:1/",
            "CHUNKNAV_DSN": "postgresql://p:dsn-pw-555@db/x",
        }
    )
    assert s.access_token == "tok-zzz-999"
    text = S.redact("key-abcdef-123 tok-zzz-999 url-pw-777 dsn-pw-555")
    assert text.split() == [S.MARK] * 4


def test_short_strings_are_not_secrets_and_old_import_still_works():
    S.register("ab")
    assert S.redact("ab cd") == "ab cd"
    assert embed_redact("x" * 5000, ()).endswith("chars]")  # engine.embed.redact truncates as before


def test_public_dsn_drops_the_password():
    assert (
        S.public_dsn("postgresql://bob:s3cr3t-pw@db.example:5433/idx?sslmode=require")
        == "postgresql://bob@db.example:5433/idx?sslmode=require"
    )
    assert S.public_dsn("postgresql://db/idx") == "postgresql://db/idx"


def test_log_records_are_redacted(caplog):
    S.register(KEY)
    S.install_log_redaction()
    log = logging.getLogger("tests.secrets")
    with caplog.at_level(logging.INFO):
        log.warning("key %s echoed", KEY)
        try:
            raise RuntimeError(f"boom {KEY}")
        except RuntimeError:
            log.exception("failed")
    text = caplog.text + "".join(r.getMessage() + (r.exc_text or "") for r in caplog.records)
    assert KEY not in text and S.MARK in text


# ------------------------------------------------------------------ end to end
def _echo_body(rec) -> dict:
    """A 401 whose message carries every form of every secret and the Authorization header."""
    parts = [f for s in SECRETS for f in forms(s).values()]
    return {
        "error": {
            "message": "Incorrect API key provided. You sent: "
            + " | ".join(parts)
            + f" | Authorization: {rec.headers.get('Authorization', '')}",
            "type": "invalid_request_error",
            "code": "invalid_api_key",
        }
    }


@pytest.fixture
def leaky(tmp_path, embed_stub, monkeypatch):
    """An index whose provider echoes every secret back; env as every face reads it."""
    root = tmp_path / "docs"
    root.mkdir()
    (root / "notes.md").write_text("# Heat pumps\nHeat pumps move heat. " * 40, "utf-8")
    shutil.copy(REPO / "tests" / "corpus" / "edge" / "libreoffice-writer-password.pdf", root / "locked.pdf")
    embed_stub.reply = Reply(401, _echo_body)
    host = embed_stub.url.removeprefix("http://")
    env = {
        "CHUNKNAV_DB": str(tmp_path / "index.db"),
        "EMBED_PROVIDER": "openai",
        "EMBED_URL": f"http://{USER}:{PASSWORD}@{host}",
        "EMBED_API_KEY": KEY,
        "EMBED_MODEL": "stub-embed",
        "EMBED_RETRIES": "0",
        "CHUNKNAV_ACCESS_TOKEN": TOKEN,
        "CHUNKNAV_MCP_TOKEN": MCP_TOKEN,
        "LOCKED_PDF_PASSWORD": PDF_PASSWORD,  # the collection refers to it by name
    }
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    return tmp_path, root, env


def _cli(env: dict[str, str], *argv: str) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("EMBED_", "CHUNKNAV_"))}
    full.update(env, CHUNKNAV_ALLOWED_ROOTS=os.environ["CHUNKNAV_ALLOWED_ROOTS"])
    full.setdefault("EMBED_MODEL", "l2_supercat_256")
    return subprocess.run(
        [sys.executable, "-m", "engine", "-v", *argv], env=full, cwd=REPO, capture_output=True, text=True, timeout=120
    )


@pytest.mark.slow
def test_no_secret_leaves_through_any_face(leaky, caplog, monkeypatch):
    tmp_path, root, env = leaky
    outputs: dict[str, str] = {}
    # CLI: add (with the PDF password), index (embedding fails at the probe), status, a vector search
    runs = {
        "add": _cli(env, "collections", "add", "C", str(root), "--password-env", "LOCKED_PDF_PASSWORD"),
        "index": _cli(env, "index"),
        "index-json": _cli(env, "index", "--json"),
        "status": _cli(env, "status"),
        "status-json": _cli(env, "status", "--json"),
        "search": _cli(env, "search-chunks", "heat pumps", "--scope", "C", "--mode", "vector"),
        "settings": _cli(env, "settings"),
    }
    for name, r in runs.items():
        outputs[f"cli {name} stdout"] = r.stdout
        outputs[f"cli {name} stderr"] = r.stderr
    search = json.loads(runs["search"].stdout)
    assert search["error"] == "embedding-credential-rejected" and "[REDACTED]" in search["responseBody"]
    assert "embedding failed" in runs["status"].stdout  # the human view says so
    assert "locked.pdf" not in [f["filePath"] for f in json.loads(runs["status-json"].stdout)["failures"]]

    # MCP (official client): a vector search and the status
    session = run_session(
        env["CHUNKNAV_DB"],
        [
            ("search_chunks", {"query": "heat pumps", "scope": "C", "mode": "vector"}),
            ("index_status", {"probe": True}),
        ],
        env={k: v for k, v in env.items()},
    )
    assert session.answers[0].result.is_error
    outputs["mcp results"] = "\n".join(a.text for a in session.answers)
    outputs["mcp structured"] = json.dumps([a.result.structured_content for a in session.answers])
    outputs["mcp stderr"] = session.stderr

    # in-process: the log records of a failing call
    S.install_log_redaction()
    with caplog.at_level(logging.DEBUG):
        engine = Engine(load_settings())
        env_out = call_tool(engine, "search_chunks", {"query": "heat pumps", "scope": "C", "mode": "vector"})
        engine.close()
    outputs["in-process envelope"] = json.dumps(env_out)
    outputs["log records"] = "\n".join(r.getMessage() + (r.exc_text or "") for r in caplog.records)

    # GUI under AppTest: token gate, then Status and Explore with a vector search
    st.cache_resource.clear()
    at = AppTest.from_file(APP, default_timeout=90).run()
    at.text_input(key="access_token_input").input(TOKEN)
    next(b for b in at.button if b.label == "Open").click().run()
    assert not at.exception
    texts = []
    for page, params in (("status", {}), ("explore", {"q": "heat pumps", "scope": "C", "mode": "vector"})):
        for k in list(at.query_params):
            del at.query_params[k]
        for k, v in params.items():
            at.query_params[k] = v
        at.switch_page(f"../pages/{page}.py").run()
        assert not at.exception, at.exception
        texts.append(page_text(at))
    outputs["gui pages"] = "\n".join(str(t) for t in texts)
    assert "embedding server refused the credential" in outputs["gui pages"]
    st.cache_resource.clear()

    # the SQLite file, every byte of it: collections.password holds only the reference
    # (README "Passwords of encrypted PDFs")
    import sqlite3

    copy = tmp_path / "copy.db"
    src, dst = sqlite3.connect(env["CHUNKNAV_DB"]), sqlite3.connect(copy)
    src.backup(dst)  # the WAL's content included
    src.close()
    dst.execute("PRAGMA journal_mode=DELETE")
    assert dst.execute("SELECT password FROM collections").fetchone() == ("env:LOCKED_PDF_PASSWORD",)
    dst.execute("VACUUM")
    dst.close()
    outputs["sqlite file"] = copy.read_bytes().decode("latin-1")
    assert "embedError" in outputs["sqlite file"] or "embedding-credential-rejected" in outputs["sqlite file"]

    found = {where: leaks(text) for where, text in outputs.items()}
    assert not {k: v for k, v in found.items() if v}, found
    # and the secrets really were echoed back (so the test can fail)
    assert outputs["cli search stdout"].count("[REDACTED]") >= len(SECRETS) * 6


def page_text(at: AppTest) -> str:
    """Every text an AppTest page shows (values of text elements, code, tables)."""
    out = []
    for kind in (
        "title",
        "header",
        "subheader",
        "markdown",
        "caption",
        "code",
        "text",
        "error",
        "warning",
        "info",
        "success",
        "exception",
        "json",
        "metric",
    ):
        for e in getattr(at, kind, []):
            out.append(str(getattr(e, "value", "")) + str(getattr(e, "label", "")))
    for d in getattr(at, "dataframe", []):
        out.append(d.value.to_string())
    return "\n".join(out)


@pytest.mark.parametrize(
    "form", ["raw", "json-escaped", "json-escaped-mixed", "url-encoded", "base64", "base64-inside-1", "hex"]
)
def test_secrets_are_found_anywhere_in_long_text(form):
    """The fast path (substring replacement, pattern only around escape characters)
    misses nothing: the secret at the start, the middle and the end of 200k characters."""
    S.register(KEY)
    f = forms(KEY)[form]
    filler = ("a + b = 100% of text \\n " * 4000)[:100_000]
    text = f + filler + f + filler[:777] + "+" + f
    out = S.redact(text)
    assert marks(KEY)[form] not in out and out.count(S.MARK) == 3


# ------------------------------------------------------------------ the envelope check (call_tool)
_PIECES = [
    "plain words ",
    "Bearer ",
    "bearer abcdefghijklmnop1234 ",
    "BASIC ",
    "basic concept ",
    "Basic YWxpY2U6cHc= ",
    "sk-",
    "sk-abcdefghijklmnopqrstuvwxyz ",
    "%",
    "+",
    "\\",
    '"',
    "\n",
    "\t",
    "\x0c",
    "\x01",
    "\\u0073",
    "İ",
    "ſ",
    "\u212a",
    "Σ",
    "é",
    "日本",
    "50% + 3 ",
    KEY,
    "/",
    "%73",
    "u0073k-live",
]


_CLEAN = ["plain words ", "apples and pears ", "é", "日本", "Σ ", "/", "ΣΑΣ", "İstanbul "]


def _random_envelope(rng) -> dict:
    def text() -> str:
        return "".join(
            rng.choice(_PIECES) if rng.random() < 0.08 else rng.choice(_CLEAN) for _ in range(rng.randint(0, 4))
        )

    def forms_of_key() -> str:
        return rng.choice(list(forms(KEY).values()))

    hit = {
        text() or "k": text(),
        "snippet": text() + (forms_of_key() if rng.random() < 0.1 else ""),
        "score": rng.choice([0.5, 1e20, -3, 7]),
        "bbox": {"x": 0.1, "w": None},
        "list": [text(), [text()], True],
    }
    return {"searched": True, "query": text(), "hits": [hit, dict(hit, snippet=text())]}


def _strings(value) -> list[str]:
    """Every string of an envelope, keys included."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in _strings(k) + _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def test_the_envelope_redaction_walks_every_string():
    """``redact_obj`` over random envelopes of every trigger, escape and case-folding character:
    each string (keys included) comes back as ``redact`` makes it, in the same shape, and no
    form of the registered secret is left anywhere."""
    import random

    S.register(KEY)
    rng = random.Random(15)
    for _ in range(2000):
        env = _random_envelope(rng)
        got = S.redact_obj(env)
        assert _strings(got) == [S.redact(s) for s in _strings(env)]
        assert KEY not in json.dumps(got, ensure_ascii=False)
    for f in forms(KEY).values():
        env = {"hits": [{"snippet": f"see {f} here"}]}
        assert f not in json.dumps(S.redact_obj(env), ensure_ascii=False)


def test_call_tool_envelopes_are_redacted(tmp_path):
    """A search envelope carrying a registered secret comes back redacted; a clean one
    comes back unchanged by a second redaction."""
    from engine.config import Settings

    root = tmp_path / "docs"
    root.mkdir()
    (root / "a.txt").write_text(f"the token is {KEY} here\n\nand plain prose about apples and pears\n")
    S.register(KEY)
    engine = Engine(Settings(db=str(tmp_path / "i.db"), embed_provider="none").validate())
    engine.add_collection("C", str(root), allow_any_root=True)
    engine.run_index()
    leaky = call_tool(engine, "search_chunks", {"query": "token", "scope": "C", "mode": "keyword"})
    assert leaky["count"] == 1 and KEY not in json.dumps(leaky) and S.MARK in leaky["hits"][0]["snippet"]
    clean = call_tool(engine, "search_chunks", {"query": "apples", "scope": "C", "mode": "keyword", "limit": 5})
    assert clean == S.redact_obj(clean)
    engine.close()


def test_a_bearer_key_echoed_by_a_401_leaves_no_stray_bracket(tmp_path, embed_stub):
    """A 401 body echoing ``Bearer <key>`` gives ``Bearer [REDACTED]``, never ``Bearer [REDACTED]]``
    (the registered key is replaced first; the generic Bearer shape then takes ``[REDACTED]`` whole)."""
    from engine.config import Settings

    root = tmp_path / "docs"
    root.mkdir()
    (root / "a.txt").write_text("heat pumps move heat\n")
    embed_stub.reply = Reply(
        401,
        lambda rec: {
            "error": {
                "message": f"invalid token: Bearer {KEY}; header was {rec.headers.get('Authorization', '')}",
                "type": "invalid_request_error",
            }
        },
    )
    engine = Engine(
        Settings(
            db=str(tmp_path / "i.db"),
            embed_provider="openai",
            embed_url=embed_stub.url,
            embed_model="stub-embed",
            embed_api_key=KEY,
            embed_retries=0,
        ).validate()
    )
    engine.add_collection("C", str(root), allow_any_root=True)
    engine.run_index()
    env = call_tool(engine, "search_chunks", {"query": "heat", "scope": "C", "mode": "vector"})
    text = json.dumps(env, ensure_ascii=False)
    assert env["error"] == "embedding-credential-rejected", env
    assert KEY not in text and "Bearer [REDACTED]; header was Bearer [REDACTED]" in env["responseBody"], env
    assert "[REDACTED]]" not in text, text
    # the generic shape alone, and a secret inside a longer token, are still taken whole
    assert S.redact(f"Authorization: Bearer {KEY}", generic=True) == "Authorization: Bearer [REDACTED]"
    assert S.redact(f"Bearer {KEY}tail, next", generic=True) == "Bearer [REDACTED], next"
    assert S.redact("Bearer abc.def", generic=True) == "Bearer [REDACTED]"
    engine.close()
