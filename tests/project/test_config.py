"""Settings: declared once, validated at load, env beats toml beats defaults."""

import pytest

from engine.index.gate import settings_key
from engine.config import SETTINGS, Settings, load_settings
from engine.errors import SettingsError


def test_defaults():
    s = load_settings(environ={})
    assert (s.chunk_size, s.chunk_overlap, s.chunk_step, s.embed_provider) == (1000, 150, 850, "local")


def test_env_beats_toml_beats_default(tmp_path):
    toml = tmp_path / "chunknav.toml"
    toml.write_text("[chunknav]\nchunk_size = 500\nchunk_overlap = 50\n")
    s = load_settings(environ={"CHUNKNAV_CHUNK_OVERLAP": "100"}, toml_path=toml)
    assert (s.chunk_size, s.chunk_overlap) == (500, 100)
    assert load_settings({"chunk_size": 700}, environ={}, toml_path=toml).chunk_size == 700


@pytest.mark.parametrize(
    "env, needle",
    [
        ({"CHUNKNAV_CHUNK_SIZE": "0"}, "CHUNKNAV_CHUNK_SIZE"),
        ({"CHUNKNAV_CHUNK_OVERLAP": "1000"}, "CHUNKNAV_CHUNK_OVERLAP"),
        ({"CHUNKNAV_CHUNK_SIZE": "big"}, "CHUNKNAV_CHUNK_SIZE"),
        ({"EMBED_PROVIDER": "magic"}, "EMBED_PROVIDER"),
        ({"EMBED_TIMEOUT": "-1"}, "EMBED_TIMEOUT"),
        ({"CHUNKNAV_DSN": "mysql://x"}, "CHUNKNAV_DSN"),
    ],
)
def test_bad_values_name_the_setting(env, needle):
    with pytest.raises(SettingsError, match=needle):
        load_settings(environ=env)


def test_unknown_toml_key_is_refused(tmp_path):
    toml = tmp_path / "chunknav.toml"
    toml.write_text("[chunknav]\nchunk_sise = 5\n")
    with pytest.raises(SettingsError, match="chunk_sise"):
        load_settings(environ={}, toml_path=toml)


def test_changing_chunking_changes_the_hash_gate_key():
    assert settings_key(Settings()) != settings_key(Settings(chunk_size=900))


def test_every_setting_has_unit_and_help():
    for s in SETTINGS:
        assert s.unit and len(s.help) > 10, s.name
