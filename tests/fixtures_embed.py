"""Fixtures: embed (see tests/conftest.py).

* ``embed_stub``: a started ``tests.stub.EmbedStub`` on 127.0.0.1 port 0 that
  speaks both wire formats (base URL ``embed_stub.url``); stopped afterwards.
* ``closed_port``: a loopback port nothing listens on.
"""

import socket

import pytest

from tests.stub import EmbedStub


@pytest.fixture
def embed_stub():
    server = EmbedStub().start()
    yield server
    server.stop()


@pytest.fixture
def closed_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return port  # bound then released: nothing listens there
