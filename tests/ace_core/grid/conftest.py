import pytest


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    """An empty ``$GRIDACE_DATA_DIR``: where generated days go and where make_env looks first."""
    folder = tmp_path / "data"
    monkeypatch.setenv("GRIDACE_DATA_DIR", str(folder))
    return folder
