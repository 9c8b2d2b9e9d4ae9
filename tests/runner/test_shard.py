"""``shard="I/N"``: which samples a shard answers, and what it leaves unchanged."""

from __future__ import annotations

from pathlib import Path

import pytest

from ebmeval._util.errors import ConfigError
from ebmeval.runner import RunConfig, config_from_flags, run, select_samples
from ebmeval.store import RunStore
from tests.helpers.toy import scripted_model, toy_task


def _ids(task_size: int, **options: object) -> list[str]:
    return [s.id for s in select_samples(toy_task(task_size), **options)]  # type: ignore[arg-type]


def test_the_shards_partition_the_samples_and_the_limit_subset() -> None:
    everything = _ids(300, limit=None, shuffle=True)
    shards = [_ids(300, limit=None, shuffle=True, shard=f"{i}/3") for i in (1, 2, 3)]
    assert sorted(sum(shards, [])) == sorted(everything)
    assert all(70 < len(s) < 130 for s in shards), [len(s) for s in shards]
    limited = _ids(300, limit=60, shuffle=True)
    parts = [_ids(300, limit=60, shuffle=True, shard=f"{i}/3") for i in (1, 2, 3)]
    assert sorted(sum(parts, [])) == sorted(limited)
    assert all(set(p) <= set(s) for p, s in zip(parts, shards, strict=True))  # the limit then the shard


def test_a_samples_shard_depends_on_its_id_alone() -> None:
    small = set(_ids(100, limit=None, shard="2/4"))
    grown = set(_ids(400, limit=None, shard="2/4"))
    assert small == {i for i in grown if i in set(_ids(100, limit=None))}
    assert set(_ids(100, limit=None, shuffle=False, shard="2/4")) == small  # the order does not matter


@pytest.mark.parametrize("bad", ["0/3", "4/3", "1/0", "1", "a/3", "1/3/5", "-1/3"])
def test_a_malformed_shard_is_a_config_error(bad: str) -> None:
    with pytest.raises(ConfigError, match="shard"):
        config_from_flags(task="toy", shard=bad)


def test_shards_share_the_run_id_and_record_their_shard(tmp_path: Path) -> None:
    def shard_run(shard: str | None, store: str) -> tuple[str, set[str] | None, dict[str, object]]:
        cfg = RunConfig(task="toy", store=str(tmp_path / store), cache=False, shard=shard)
        result = run(cfg, task=toy_task(12), models={"model": scripted_model()})
        return (
            result.run.run_id,
            result.sample_ids,
            RunStore(cfg.store, read_only=True).get_run(result.run.run_id).config,
        )

    whole, all_ids, whole_config = shard_run(None, "whole.sqlite")
    first, first_ids, first_config = shard_run("1/2", "a.sqlite")
    second, second_ids, _ = shard_run("2/2", "b.sqlite")
    assert whole == first == second
    assert first_ids is not None and second_ids is not None and all_ids is not None
    assert first_ids | second_ids == all_ids and not first_ids & second_ids
    assert whole_config["shard"] is None and first_config["shard"] == "1/2"
