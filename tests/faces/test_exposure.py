"""engine/faces/exposure.py: one loopback and token rule, applied by every face that listens.

Each face is driven through its own entry point: the ``chunknav gui`` launcher
(``gui_command``), the MCP HTTP app (``http_app``) and the explorer's
per-session gate (``explorer.access.refusal``, by bind address and by client
address). Without its token a face serves loopback only and names the setting
when it refuses; with the token it serves any address.
"""

from __future__ import annotations

from typing import Callable

import pytest

from engine.config import Settings, load_settings
from engine.errors import SettingsError
from engine.faces import exposure, mcp_server
from engine.faces.gui import gui_command
from engine.tools.registry import Engine
from explorer import access

LOOPBACK = ["127.0.0.1", "127.0.1.1", "127.1.2.3", "localhost", "::1"]
BEYOND = ["0.0.0.0", "::", "192.168.1.5", "example.org"]


@pytest.mark.parametrize(
    "address, loopback",
    [(a, True) for a in LOOPBACK]
    + [(a, False) for a in BEYOND]
    + [
        ("[::1]", True),
        (" LocalHost ", True),
        ("localhost.localdomain", True),
        ("", False),  # every interface, as Streamlit reads it
        ("[::]", False),
        ("127.0.0.1.example.org", False),
    ],
)
def test_the_loopback_rule(address, loopback):
    assert exposure.is_loopback(address) is loopback


@pytest.fixture(scope="module")
def engine():
    eng = Engine(Settings(db=":memory:", embed_provider="none").validate())
    yield eng
    eng.close()


def _raised(call: Callable[[], object]) -> str | None:
    try:
        call()
    except SettingsError as e:
        return str(e)
    return None


def _gui(address: str, token: str, engine: Engine) -> str | None:
    settings = load_settings(environ={"CHUNKNAV_ACCESS_TOKEN": token} if token else {})
    return _raised(lambda: gui_command(settings, address=address, environ={}))


def _mcp(address: str, token: str, engine: Engine) -> str | None:
    return _raised(lambda: mcp_server.http_app(engine, address, token))


def _explorer_bind(address: str, token: str, engine: Engine) -> str | None:
    return access.refusal(Settings(access_token=token), address, None)


def _explorer_client(address: str, token: str, engine: Engine) -> str | None:
    return access.refusal(Settings(access_token=token), None, address)


#: face -> (its exposure row, address -> its refusal or None)
FACES = {
    "chunknav gui": (exposure.EXPLORER, _gui),
    "chunknav mcp --http": (exposure.MCP_HTTP, _mcp),
    "explorer session, bind address": (exposure.EXPLORER, _explorer_bind),
    "explorer session, client address": (exposure.EXPLORER, _explorer_client),
}


@pytest.mark.parametrize("face", list(FACES))
@pytest.mark.parametrize("address", LOOPBACK + BEYOND)
def test_every_face_serves_loopback_alone_and_anything_with_its_token(face, address, engine):
    row, refusal = FACES[face]
    why = refusal(address, "", engine)
    if exposure.is_loopback(address):
        assert why is None
    else:
        assert why is not None and row.token_env in why and address in why and "127.0.0.1" in why
    assert refusal(address, "tok-long-enough", engine) is None  # the token opens every address


def test_the_explorer_gate_judges_the_client_when_the_bind_is_unknown():
    assert access.refusal(Settings(), None, None) is None
    assert access.refusal(Settings(), "", None) is None  # server.address not given
    assert "10.0.0.7" in (access.refusal(Settings(), "127.0.0.1", "10.0.0.7") or "")


def test_every_face_names_its_own_token_setting():
    assert {f.token_env for f in exposure.FACES} == {"CHUNKNAV_ACCESS_TOKEN", "CHUNKNAV_MCP_TOKEN"}
    for face in exposure.FACES:
        why = exposure.refusal(face, "0.0.0.0", "")
        assert why and face.name in why and face.token_env in why and face.token_key in why


@pytest.mark.parametrize(
    "bind, words",
    [
        ("127.0.0.1", "loopback only"),
        ("::1", "loopback only"),
        ("", "every interface"),
        ("0.0.0.0", "every interface"),
        ("::", "every interface"),
        ("192.168.1.5", "non-loopback"),
    ],
)
def test_the_startup_line_says_who_can_reach_the_face(bind, words):
    assert exposure.reach(bind) == words


@pytest.mark.parametrize("given", ["tok-long-enough", b"tok-long-enough"])
def test_a_token_matches_only_itself(given):
    assert exposure.token_matches(given, "tok-long-enough")
    assert exposure.bearer_matches(
        b"Bearer " + (given if isinstance(given, bytes) else given.encode()), "tok-long-enough"
    )
    for wrong in ("tok-long-enougH", "tok-long-enough ", "tok-long", "", "Bearer tok-long-enough"):
        assert not exposure.token_matches(wrong, "tok-long-enough")
    for wrong in (b"", b"tok-long-enough", b"bearer tok-long-enough", b"Bearer tok-long-enoug", b"Basic x"):
        assert not exposure.bearer_matches(wrong, "tok-long-enough")
    assert not exposure.token_matches("", "") and not exposure.bearer_matches(b"Bearer ", "")  # none configured
