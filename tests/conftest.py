"""Every test records into its own store: the studio's default store lives under the
user's cache directory, which each test points at its own temporary folder."""

import pytest


@pytest.fixture(autouse=True)
def private_cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
