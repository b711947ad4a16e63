"""``chunknav gui``: start the Streamlit explorer as a child process and stay its parent.

Owns: the Streamlit command line (``streamlit_config.toml`` values as
``--section.key`` flags, each one yielding to its ``STREAMLIT_<SECTION>_<KEY>``
environment variable; ``--port`` / ``--address`` flags win over both), the
refusal to start on a non-loopback address without ``CHUNKNAV_ACCESS_TOKEN``
(the rule is ``engine.faces.exposure``), the startup line with the real
address, and signal handling: SIGINT, SIGTERM and SIGHUP are forwarded to
Streamlit and the launcher waits for it to exit (killed after
``STOP_TIMEOUT_S``); on Linux the child also gets SIGTERM if the launcher
dies without forwarding (``PR_SET_PDEATHSIG``).

Imports no face framework (no streamlit, mcp or argparse): it runs Streamlit
as ``python -m streamlit``.
"""

from __future__ import annotations

import errno
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import tomllib
from pathlib import Path
from typing import Any

from engine.config import Settings
from engine.errors import SettingsError
from engine.faces import exposure
from engine.secrets import redact

__all__ = [
    "REPO",
    "APP",
    "STREAMLIT_CONFIG",
    "STOP_TIMEOUT_S",
    "streamlit_env_name",
    "streamlit_flags",
    "gui_command",
    "port_problem",
    "run_gui",
]

REPO = Path(__file__).resolve().parents[2]
#: The explorer's entry script: ``explorer/app.py`` beside ``engine/`` (checkout or site-packages).
APP = REPO / "explorer" / "app.py"
#: Streamlit settings: inside the installed ``explorer`` package, else at the checkout's root.
STREAMLIT_CONFIG = next(
    (
        p
        for p in (REPO / "explorer" / "_config" / "streamlit_config.toml", REPO / "streamlit_config.toml")
        if p.is_file()
    ),
    REPO / "streamlit_config.toml",
)
#: Seconds Streamlit gets to exit after a forwarded signal before it is killed.
STOP_TIMEOUT_S = 10.0


def streamlit_env_name(section: str, key: str) -> str:
    """Streamlit's environment variable of an option: ``server.fileWatcherType``
    -> ``STREAMLIT_SERVER_FILE_WATCHER_TYPE``."""
    snake = re.sub(r"(?<!^)(?=[A-Z])", "_", key).upper()
    return f"STREAMLIT_{section.upper()}_{snake}"


def streamlit_config(config_path: Path = STREAMLIT_CONFIG) -> dict[str, dict[str, Any]]:
    """The tables of ``streamlit_config.toml`` ({} when the file is missing)."""
    if not config_path.is_file():
        return {}
    return tomllib.loads(config_path.read_text("utf-8"))


def streamlit_flags(config_path: Path = STREAMLIT_CONFIG, environ: dict[str, str] | None = None) -> list[str]:
    """``--section.key=value`` flags from ``streamlit_config.toml``, leaving out
    every option whose ``STREAMLIT_…`` environment variable is set (the
    environment beats the file; Streamlit reads that variable itself)."""
    env = os.environ if environ is None else environ
    flags = []
    for section, table in streamlit_config(config_path).items():
        for key, value in table.items():
            if env.get(streamlit_env_name(section, key)):
                continue
            if isinstance(value, bool):
                value = str(value).lower()
            flags.append(f"--{section}.{key}={value}")
    return flags


def _effective(option: str, flag: Any, environ: dict[str, str], config: dict[str, dict[str, Any]]) -> str:
    section, key = option.split(".")
    if flag not in (None, ""):
        return str(flag)
    env_value = environ.get(streamlit_env_name(section, key))
    if env_value:
        return env_value
    value = config.get(section, {}).get(key)
    return "" if value is None else str(value)


def gui_command(
    settings: Settings,
    port: int | None = None,
    address: str | None = None,
    headless: bool = False,
    environ: dict[str, str] | None = None,
    config_path: Path = STREAMLIT_CONFIG,
) -> tuple[list[str], dict[str, str], str, int]:
    """The Streamlit command, its environment, and the address and port it binds.

    Precedence of ``server.port`` / ``server.address``: the ``--port`` /
    ``--address`` flag, then ``STREAMLIT_SERVER_PORT`` / ``STREAMLIT_SERVER_ADDRESS``,
    then ``streamlit_config.toml``, then Streamlit's defaults (8501, every interface).

    The child's environment names the index by absolute path and carries the
    allowed roots resolved here (the child runs from the repo directory).

    Raises:
        SettingsError: a non-loopback address without ``CHUNKNAV_ACCESS_TOKEN``;
            a port outside 1..65535.
    """
    from engine.paths import allowed_roots

    env = dict(os.environ if environ is None else environ)
    config = streamlit_config(config_path)
    bind = _effective("server.address", address, env, config)
    port_text = _effective("server.port", port, env, config) or "8501"
    try:
        real_port = int(port_text)
    except ValueError:
        raise SettingsError(
            f"server port must be a number (--port / STREAMLIT_SERVER_PORT), got {port_text!r}"
        ) from None
    if not 0 < real_port < 65536:
        raise SettingsError(f"server port must be in 1..65535 (--port / STREAMLIT_SERVER_PORT), got {real_port}")
    exposure.check(exposure.EXPLORER, bind, settings.access_token)
    own = ("--server.port=", "--server.address=", "--browser.serverAddress=", "--browser.serverPort=")
    cmd = [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(APP),
        *(f for f in streamlit_flags(config_path, env) if not f.startswith(own)),
        f"--server.port={real_port}",
    ]
    if bind:
        cmd.append(f"--server.address={bind}")
    # Streamlit prints browser.serverAddress in its "URL:" line: make it the real bind address
    cmd += [f"--browser.serverAddress={bind or '0.0.0.0'}", f"--browser.serverPort={real_port}"]
    if headless:
        cmd.append("--server.headless=true")
    env["CHUNKNAV_DB"] = os.path.abspath(settings.db) if settings.db != ":memory:" else settings.db
    if settings.dsn:
        env["CHUNKNAV_DSN"] = settings.dsn
    env["CHUNKNAV_ALLOWED_ROOTS"] = os.pathsep.join(allowed_roots(settings.allowed_roots))
    if settings.access_token:
        env["CHUNKNAV_ACCESS_TOKEN"] = settings.access_token
    if settings.read_only:
        env["CHUNKNAV_READ_ONLY"] = "true"
    return cmd, env, bind, real_port


def port_problem(bind: str, port: int) -> str | None:
    """Why Streamlit could not listen on ``bind``:``port`` (a bind test on a
    throw-away socket, ``SO_REUSEADDR`` like Streamlit's own), or None when it can.

    Args:
        bind: the bind address ("" = every interface).
        port: TCP port, 1..65535.

    Returns:
        ``"port N is in use; pass --port"`` (EADDRINUSE), another sentence
        naming the OS error, or None.
    """
    try:
        infos = socket.getaddrinfo(bind or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as e:
        return f"cannot resolve the bind address {bind!r}: {e}"
    family, kind, proto, _name, addr = infos[0]
    with socket.socket(family, kind, proto) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(addr)
        except OSError as e:
            if e.errno == errno.EADDRINUSE:
                return f"port {port} is in use; pass --port (e.g. --port {port + 1})"
            return f"cannot listen on {bind or '0.0.0.0'}:{port}: {e.strerror or e}; pass --port or --address"
    return None


def _die_with_parent() -> None:  # runs in the child between fork and exec (Linux)
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except Exception:
        pass


def run_gui(settings: Settings, port: int | None = None, address: str | None = None, headless: bool = False) -> int:
    """Start Streamlit, forward SIGINT/SIGTERM/SIGHUP to it, wait for it to exit.

    Returns:
        Streamlit's exit code (128 + signal number when a signal ended it);
        2 when the settings refuse to start or the port is taken (message
        on stderr, Streamlit not started).
    """
    try:
        cmd, env, bind, real_port = gui_command(settings, port, address, headless)
    except SettingsError as e:
        print(f"chunknav gui: {redact(str(e))}", file=sys.stderr)
        return 2
    problem = port_problem(bind, real_port)  # before any "bound to" line and before Streamlit starts
    if problem:
        print(f"chunknav gui: {problem}", file=sys.stderr)
        return 2
    shown = bind or "0.0.0.0"
    host = f"[{shown}]" if ":" in shown else shown
    print(
        f"chunknav explorer: http://{host}:{real_port}/ (bound to {shown}, {exposure.reach(bind)}"
        + (", access token required" if settings.access_token else "")
        + (", read-only" if settings.read_only else "")
        + ")",
        file=sys.stderr,
        flush=True,
    )
    # the app runs in this working directory (chunknav.toml is read here, as by every other command)
    kwargs: dict[str, Any] = {"env": env}
    if sys.platform.startswith("linux"):
        kwargs["preexec_fn"] = _die_with_parent
    proc = subprocess.Popen(cmd, **kwargs)
    killer: list[threading.Timer] = []

    def kill_if_running() -> None:
        if proc.poll() is None:
            proc.kill()

    def forward(signum: int, _frame: Any) -> None:
        if proc.poll() is None:
            try:
                proc.send_signal(signum)
            except ProcessLookupError:
                return
            if not killer:
                t = threading.Timer(STOP_TIMEOUT_S, kill_if_running)
                t.daemon = True
                t.start()
                killer.append(t)

    caught = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    previous = {s: signal.signal(s, forward) for s in caught}
    try:
        while True:
            try:
                code = proc.wait()
                break
            except KeyboardInterrupt:  # pragma: no cover - the handler above normally runs instead
                forward(signal.SIGINT, None)
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
        for t in killer:
            t.cancel()
    return 128 - code if code < 0 else code
