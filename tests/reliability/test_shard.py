"""A run spread over shards (``run --shard I/N``) and merged (``store merge``) equals the unsharded run."""

from __future__ import annotations

import asyncio
import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

from ._support import EBMEVAL, cli_env, load_delay_server, run_args, sample_of, write_questions
from .test_faults import ebmeval_run

DelayServer = load_delay_server().DelayServer
N = 200


def _letter(request: dict[str, Any]) -> str:
    """A different answer per sample (A for every fourth), so equal stores are a real check."""
    sample = sample_of(json.dumps(request).encode()) or "q0000"
    return "ABCD"[int(sample[1:]) % 4]


def _rows(store: Path, run_id: str) -> dict[tuple[str, int], tuple[Any, ...]]:
    with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as db:
        gens = db.execute(
            "SELECT sample_id, epoch, output, answer, parsed FROM generations WHERE run_id = ?", (run_id,)
        ).fetchall()
        scores = dict(
            ((s, e, ss), sc)
            for s, e, ss, sc in db.execute(
                "SELECT sample_id, epoch, score_set, score FROM scores WHERE run_id = ?", (run_id,)
            )
        )
    return {
        (s, e): (out, ans, parsed, sorted((k[2], v) for k, v in scores.items() if k[:2] == (s, e)))
        for s, e, out, ans, parsed in gens
    }


async def _merge(sources: list[Path], out: Path, tmp: Path) -> tuple[int, dict[str, Any] | None, str]:
    return await ebmeval_run([EBMEVAL, "store", "merge", *map(str, sources), "--out", str(out), "--json"], tmp)


async def test_sharded_and_merged_run_equals_the_unsharded_run_sample_for_sample(tmp_path: Path) -> None:
    questions = write_questions(tmp_path / "q.jsonl", N)
    async with DelayServer(0.005, reply=_letter) as server:
        whole = tmp_path / "whole.sqlite"
        code, payload, err = await ebmeval_run(run_args(questions, server.url, whole, n=N, concurrency=8), tmp_path)
        assert code == 0 and payload is not None, err
        run_id = payload["run_id"]
        shards, sizes = [], []
        for i in (1, 2, 3):
            store = tmp_path / f"shard{i}.sqlite"
            args = run_args(questions, server.url, store, n=N, concurrency=8) + ["--shard", f"{i}/3"]
            code, payload, err = await ebmeval_run(args, tmp_path)
            assert code == 0 and payload is not None, err
            assert payload["run_id"] == run_id  # the shard is not part of the identity
            assert payload["generations"] == payload["invocation"]["new_samples"]  # the summary is the shard's
            sizes.append(payload["generations"])
            shards.append(store)
        assert sum(sizes) == N and all(40 < size < 95 for size in sizes), sizes
        merged = tmp_path / "merged.sqlite"
        code, payload, err = await _merge(shards, merged, tmp_path)
        assert code == 0 and payload is not None, err
        assert payload["runs"] == {run_id: {"generations": N, "status": "complete"}}
        expected = _rows(whole, run_id)
        assert len(expected) == N
        assert _rows(merged, run_id) == expected
        print(f"shards: {sizes} samples, merged {N} equal to the unsharded run, run id {run_id}")
        # merging again adds nothing
        code, payload, err = await _merge(shards, merged, tmp_path)
        assert code == 0 and payload is not None and payload["copied"]["generations"] == 0, err
        assert _rows(merged, run_id) == expected


def _store_with(tmp: Path, source: Path, name: str, sql: str) -> Path:
    copy = tmp / name
    shutil.copy(source, copy)
    with sqlite3.connect(copy) as db:
        db.execute(sql)
    return copy


async def test_merge_refuses_overlapping_different_answers_and_other_runs_with_the_same_id(tmp_path: Path) -> None:
    questions = write_questions(tmp_path / "q.jsonl", 20)
    async with DelayServer(0.0, reply=_letter) as server:
        first = tmp_path / "a.sqlite"
        code, payload, err = await ebmeval_run(run_args(questions, server.url, first, n=20), tmp_path)
        assert code == 0 and payload is not None, err
    overlapping = _store_with(
        tmp_path, first, "b.sqlite", "UPDATE generations SET output = 'D' WHERE sample_id = 'q0004'"
    )
    code, _payload, err = await _merge([first, overlapping], tmp_path / "m1.sqlite", tmp_path)
    assert code == 2
    assert "q0004" in err and "a.sqlite" in err and "b.sqlite" in err and "answered differently" in err
    other = _store_with(tmp_path, first, "c.sqlite", "UPDATE runs SET config_hash = 'x' || config_hash")
    target = tmp_path / "m2.sqlite"
    code, _payload, err = await _merge([first, other], target, tmp_path)
    assert code == 2
    assert "different configuration" in err and "a.sqlite" in err and "c.sqlite" in err
    assert not target.exists()  # a refused merge creates no store
    code, payload, err = await _merge([first], target, tmp_path)
    assert code == 0, err
    code, _payload, err = await _merge([other], target, tmp_path)
    assert code == 2 and "different configuration" in err
    with sqlite3.connect(f"file:{target}?mode=ro", uri=True) as db:  # an existing target is left unchanged
        assert db.execute("SELECT count(*) FROM generations").fetchone()[0] == 20
        kept = db.execute("SELECT config_hash FROM runs").fetchall()
    with sqlite3.connect(f"file:{first}?mode=ro", uri=True) as db:
        assert kept == db.execute("SELECT config_hash FROM runs").fetchall()
    # the same answers in two stores (a re-run shard) merge into one copy; provenance differences are reported
    moved = _store_with(
        tmp_path, first, "d.sqlite", "UPDATE runs SET provenance = json_set(provenance, '$.host', 'elsewhere')"
    )
    code, payload, err = await _merge([first, moved], tmp_path / "m3.sqlite", tmp_path)
    assert code == 0 and payload is not None, err
    (run_id,) = payload["runs"]
    assert payload["runs"][run_id]["generations"] == 20
    assert payload["provenance_differs"] == {run_id: [str(moved)]}


def test_a_shard_outside_1_to_n_is_a_config_error(tmp_path: Path) -> None:
    import subprocess

    questions = write_questions(tmp_path / "q.jsonl", 2)
    for bad in ("0/2", "3/2", "1-2", "a/b"):
        args = run_args(questions, "http://127.0.0.1:9", tmp_path / "s.sqlite", n=2) + ["--shard", bad]
        done = subprocess.run(args, env=cli_env(tmp_path), capture_output=True, text=True, timeout=120)
        assert done.returncode == 2 and "shard" in done.stderr, done.stderr
    assert not (tmp_path / "s.sqlite").exists()


def _replica_args(questions: Path, servers: tuple[Any, ...], store: Path, **model_args: Any) -> list[str]:
    """``run_args`` for the replicas, without ``--concurrency`` so each replica's own bound decides."""
    args = run_args(questions, _replicas(*servers), store, n=N, **model_args)
    at = args.index("--concurrency")
    return args[:at] + args[at + 2 :]


def _replicas(*servers: Any) -> str:
    """The ``run_args`` URL naming every server as a replica (``run_args`` appends ``/v1`` to the last)."""
    return ",".join(f"{s.url}/v1" for s in servers)[: -len("/v1")]


async def test_two_replicas_share_the_requests_and_one_stopping_mid_run_fails_over(tmp_path: Path) -> None:
    questions = write_questions(tmp_path / "q.jsonl", N)
    async with DelayServer(0.01, reply=_letter) as a, DelayServer(0.01, reply=_letter) as b:
        store = tmp_path / "spread.sqlite"
        args = _replica_args(questions, (a, b), store, max_concurrency=4)
        code, payload, err = await ebmeval_run(args, tmp_path)
        assert code == 0 and payload is not None and payload["generations"] == N, err
        spread = (a.stats.requests, b.stats.requests)
        assert sum(spread) == N + 1 and min(spread) >= N // 4, spread  # N samples and the pre-flight request
        assert (a.stats.max_in_flight, b.stats.max_in_flight) == (4, 4)  # each replica's own bound, both used
        # the same replicas named in the other order are the same run
        swapped = _replica_args(questions, (b, a), store, max_concurrency=4)
        code, again, err = await ebmeval_run(swapped, tmp_path)
        assert code == 0 and again is not None and again["run_id"] == payload["run_id"], err
        assert again["invocation"]["new_samples"] == 0
    expected = _rows(store, payload["run_id"])

    c = DelayServer(0.01, reply=_letter)
    d = DelayServer(0.01, reply=_letter)
    await c.__aenter__()
    await d.__aenter__()
    stopped_after: list[int] = []

    async def stop_d() -> None:
        while d.stats.requests < 40:
            await asyncio.sleep(0.005)
        stopped_after.append(d.stats.requests)
        await d.__aexit__(None, None, None)

    try:
        stopper = asyncio.create_task(stop_d())
        failover = tmp_path / "failover.sqlite"
        args = _replica_args(questions, (c, d), failover, max_concurrency=4, max_retries=0)
        code, payload, err = await ebmeval_run(args, tmp_path)
        await asyncio.wait_for(stopper, 5)
    finally:
        await c.__aexit__(None, None, None)
        await d.__aexit__(None, None, None)
    # no retries are allowed: every request that met the stopped replica was answered by the other one
    assert code == 0 and payload is not None and payload["generations"] == N and payload["failing"] == 0, err
    assert stopped_after and d.stats.requests < N // 2 < c.stats.requests, (c.stats.requests, d.stats.requests)
    assert _rows(failover, payload["run_id"]) == expected
    print(
        f"replicas: spread {spread[0]}/{spread[1]}; failover: stopped replica answered {d.stats.requests}, "
        f"the other {c.stats.requests}"
    )


async def test_a_replica_whose_connections_fail_is_tried_last_until_it_answers_again() -> None:
    """A replica that drops every connection costs one failed attempt, not one per request."""
    from ebmeval.models import Model
    from ebmeval.models.providers.openai_compatible import OpenAICompatibleModel, RetryPolicy

    dropped: list[int] = []

    async def drop(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        dropped.append(1)
        writer.close()

    broken = await asyncio.start_server(drop, "127.0.0.1", 0)
    port = broken.sockets[0].getsockname()[1]
    try:
        async with DelayServer(0.01, reply=_letter) as good:
            api = OpenAICompatibleModel(
                "m", base_url=f"http://127.0.0.1:{port}/v1,{good.url}/v1", max_concurrency=4,
                retry=RetryPolicy(max_retries=0),
            )  # fmt: skip
            model = Model(api)  # 4 calls in flight per replica, 8 in all
            replies = await asyncio.gather(*(model.generate(f"Question {i}") for i in range(60)))
            await model.aclose()
    finally:
        broken.close()
        await broken.wait_closed()
    assert len(replies) == 60 and good.stats.requests == 60
    assert len(dropped) <= 4, len(dropped)  # at most the first calls, sent before any had failed
