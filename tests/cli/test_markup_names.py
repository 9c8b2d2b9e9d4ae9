"""A model name that looks like console markup is printed as text by ``run``, ``show`` and ``list runs``."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from ebmeval.cli._app import app


def test_a_model_named_like_markup_is_printed_as_text(tmp_path: Path) -> None:
    store = str(tmp_path / "runs.sqlite")
    cli = CliRunner()
    ran = cli.invoke(
        app, ["run", "--task", "pubmedqa", "--limit", "2", "--model", "scripted:ev[/b]il", "--store", store]
    )
    assert ran.exit_code == 0, ran.output
    listed = cli.invoke(app, ["list", "runs", "--store", store])
    assert listed.exit_code == 0 and "scripted/ev[" in listed.output, listed.output
    (record,) = json.loads(cli.invoke(app, ["list", "runs", "--store", store, "--json"]).output)
    assert record["model"] == "scripted/ev[/b]il"
    shown = cli.invoke(app, ["show", record["run_id"], "--store", store])
    assert shown.exit_code == 0 and "ev[/b]il" in shown.output, shown.output
