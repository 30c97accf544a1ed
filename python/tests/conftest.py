"""Shared fixtures: write .xg graphs into a temporary folder."""
import pytest


@pytest.fixture
def graph(tmp_path):
    """graph(text, name="g.xg") -> path of a .xg file holding text."""

    def write(text, name="g.xg"):
        p = tmp_path / name
        p.write_text("xlac.graph v1\n" + text.strip() + "\n")
        return str(p)

    return write
