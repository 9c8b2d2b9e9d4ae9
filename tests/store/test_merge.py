"""``merge_stores``: the merged run's status, and what a merge refuses."""

from __future__ import annotations

from pathlib import Path

import pytest

from ebmeval._util.errors import UsageError
from ebmeval.store import RunStore, merge_stores


def _store(path: Path, status: str, *, config_hash: str = "h", host: str = "a") -> Path:
    store = RunStore(path)
    store.begin_run(
        run_id="r1", config_hash=config_hash, config={}, task="toy", model="m", seed=0, provenance={"host": host}
    )
    store.set_status("r1", status)
    store.put_error("r1", "q1", 0, "generate", "boom")
    store.close()
    return path


@pytest.mark.parametrize(
    ("statuses", "merged"),
    [
        (("complete", "complete"), "complete"),
        (("complete", "errors"), "errors"),
        (("errors", "interrupted"), "interrupted"),
        (("running", "complete"), "running"),
    ],
)
def test_the_merged_run_is_complete_only_when_every_copy_is(
    tmp_path: Path, statuses: tuple[str, str], merged: str
) -> None:
    sources = [_store(tmp_path / f"{i}.sqlite", s, host=f"h{i}") for i, s in enumerate(statuses)]
    report = merge_stores(sources, tmp_path / "out.sqlite")
    assert report.status == {"r1": merged}
    assert report.provenance_differs == {"r1": [str(sources[1])]}
    out = RunStore(tmp_path / "out.sqlite", read_only=True)
    assert out.get_run("r1").status == merged and out.get_run("r1").provenance == {"host": "h0"}
    assert len(out.errors("r1")) == 2  # one error recorded in each store
    out.close()
    again = merge_stores(sources, tmp_path / "out.sqlite")
    assert again.copied == dict.fromkeys(again.copied, 0)  # merging again adds no row, errors included


def test_a_run_id_with_another_identity_is_refused_naming_both_files(tmp_path: Path) -> None:
    first = _store(tmp_path / "first.sqlite", "complete")
    other = _store(tmp_path / "other.sqlite", "complete", config_hash="h2")
    with pytest.raises(UsageError, match=r"run r1 has a different configuration in .*other\.sqlite than in .*first"):
        merge_stores([first, other], tmp_path / "out.sqlite")
    with pytest.raises(UsageError, match="cannot also be the merge target"):
        merge_stores([first], first)
