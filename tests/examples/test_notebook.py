"""examples/notebook.ipynb runs top to bottom (nbclient, a real Jupyter kernel) on its small config."""

from __future__ import annotations

from pathlib import Path

import pytest

NOTEBOOK = Path(__file__).resolve().parents[2] / "examples" / "notebook.ipynb"


def test_notebook_runs_top_to_bottom(tmp_path):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    assert not any(c.get("outputs") for c in nb.cells if c.cell_type == "code"), "commit the notebook without outputs"
    nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()  # raises on any cell error
    outputs = {i: c.outputs for i, c in enumerate(nb.cells) if c.cell_type == "code"}
    html = [o["data"].get("text/html", "") for outs in outputs.values() for o in outs if "data" in o]
    assert any("twolayer run" in h and "completed" in h for h in html)  # Run._repr_html_
    assert any("xarray.Dataset" in h for h in html)  # to_xarray
    assert any("final.loss" in h for h in html)  # runs(...) as a DataFrame
    images = [o for outs in outputs.values() for o in outs if "image/png" in o.get("data", {})]
    assert len(images) == 2  # the two quick plots, shown inline
    page = next(Path(tmp_path, o["text"].strip()) for outs in outputs.values() for o in outs
                if o.get("output_type") == "stream" and "explore" in o.get("text", ""))
    assert page.is_file() and (page.parent / "plotly.min.js").is_file()
