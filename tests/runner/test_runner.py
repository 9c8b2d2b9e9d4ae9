from __future__ import annotations

import contextlib
import dataclasses
import gc
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

import pytest

from ebmeval.runner import RunConfig, run, summarize
from ebmeval.store import RunLockedError, RunStore
from tests.helpers.toy import scripted_model, toy_task


def config(tmp_path: Path, **fields: object) -> RunConfig:
    return RunConfig.model_validate({"task": "toy", "store": str(tmp_path / "runs.sqlite"), "cache": False, **fields})


def requests_of(model) -> list[str]:
    return [messages[-1].content for messages, _config in model.api.requests]


def test_run_generates_scores_and_summarises(tmp_path: Path) -> None:
    model = scripted_model()
    result = run(config(tmp_path), task=toy_task(6), models={"model": model})

    assert result.run.status == "complete"
    assert result.progress.done == 6 and result.progress.errors == 0
    assert len(model.api.requests) == 12  # two steps per sample
    summary = summarize(RunStore(tmp_path / "runs.sqlite"), result.run.run_id)
    (accuracy,) = [m for m in summary.metrics if m.metric == "accuracy"]
    assert accuracy.value == pytest.approx(0.5)  # 'A' is right for even ids only
    assert accuracy.n == 6 and accuracy.missing == 0
    assert accuracy.ci[0] <= 0.5 <= accuracy.ci[1]
    assert summary.generations == 6 and summary.unparsed == 0


def test_rerun_resumes_without_calling_the_model(tmp_path: Path) -> None:
    first = run(config(tmp_path), task=toy_task(6), models={"model": scripted_model()})
    again = scripted_model()
    second = run(config(tmp_path), task=toy_task(6), models={"model": again})

    assert second.run.run_id == first.run.run_id and second.resumed
    assert second.progress.resumed == 6
    assert again.api.requests == []
    store = RunStore(tmp_path / "runs.sqlite")
    assert store.count_generations(first.run.run_id) == (6, 0)
    assert len(list(store.scores(first.run.run_id))) == 6


def test_failed_samples_are_logged_and_retried_on_rerun(tmp_path: Path) -> None:
    flaky = scripted_model(fail_on={"Q q3: draft was"})
    first = run(config(tmp_path), task=toy_task(6), models={"model": flaky})
    assert first.run.status == "errors" and first.progress.errors == 1
    store = RunStore(tmp_path / "runs.sqlite")
    assert store.count_generations(first.run.run_id) == (5, 0)
    [(sample_id, _epoch, stage, error, _at)] = store.errors(first.run.run_id)
    assert (sample_id, stage) == ("q3", "generate") and "scripted failure" in error

    retry = scripted_model()
    second = run(config(tmp_path), task=toy_task(6), models={"model": retry})
    assert second.run.status == "complete"
    # only q3's unfinished step is sent again: its draft step finished before the failure
    assert requests_of(retry) == ["Q q3: draft was thinking. Final letter?"]
    assert store.count_generations(first.run.run_id) == (6, 0)
    assert summarize(store, first.run.run_id).failing == 0


def test_limit_is_not_part_of_the_identity(tmp_path: Path) -> None:
    small = run(config(tmp_path, limit=2), task=toy_task(6), models={"model": scripted_model()})
    model = scripted_model()
    full = run(config(tmp_path), task=toy_task(6), models={"model": model})
    assert full.run.run_id == small.run.run_id
    assert full.progress.resumed == 2 and len(model.api.requests) == 8


def test_changed_settings_start_a_new_run(tmp_path: Path) -> None:
    a = run(config(tmp_path), task=toy_task(2), models={"model": scripted_model()})
    b = run(config(tmp_path, seed=7), task=toy_task(2), models={"model": scripted_model()})
    assert a.run.run_id != b.run.run_id
    assert b.run.seed == 7


def test_unparsed_outputs_are_kept_and_counted(tmp_path: Path) -> None:
    model = scripted_model(lambda messages, _config: "no idea")
    result = run(config(tmp_path), task=toy_task(4), models={"model": model})
    store = RunStore(tmp_path / "runs.sqlite")
    assert store.count_generations(result.run.run_id) == (4, 4)
    sample, generation = store.get_generation(result.run.run_id, "q1")
    assert generation.output == "no idea" and not generation.answer.parsed
    (accuracy,) = [m for m in summarize(store, result.run.run_id).metrics if m.metric == "accuracy"]
    assert (accuracy.value, accuracy.n, accuracy.missing) == (None, 0, 4)  # shown, with every sample missing


def test_a_run_written_by_a_live_process_is_refused(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "runs.sqlite")
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        store._write(
            "INSERT INTO locks (run_id, pid, host, started_at) VALUES (?, ?, ?, 'now')",
            ("abc", sleeper.pid, __import__("socket").gethostname()),
        )
        with pytest.raises(RunLockedError, match=f"process {sleeper.pid}"):
            store.acquire("abc")
    finally:
        sleeper.kill()
        sleeper.wait()
    store.acquire("abc")  # the holder died: the lock is taken over


KILL_SCRIPT = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {root!r})
    from ebmeval.runner import RunConfig, run
    from tests.helpers.toy import scripted_model, toy_task
    from tests.helpers.counting import counting_responder
    cfg = RunConfig(task="toy", store={store!r}, cache=False)
    run(cfg, task=toy_task(40), models={{"model": scripted_model(counting_responder({log!r}), delay={delay})}})
    """
)


def _stored_generations(path: Path) -> int:
    with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
        try:
            return int(db.execute("SELECT count(*) FROM generations").fetchone()[0])
        except sqlite3.OperationalError:  # the schema is not written yet
            return 0


def test_kill_9_halfway_then_rerun_completes_without_repeats(tmp_path: Path) -> None:
    store_path = tmp_path / "runs.sqlite"
    log = tmp_path / "calls.log"
    root = str(Path(__file__).resolve().parents[2])
    script = KILL_SCRIPT.format(root=root, store=str(store_path), log=str(log), delay=0.15)
    proc = subprocess.Popen([sys.executable, "-c", script], cwd=root)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if store_path.exists() and _stored_generations(store_path) >= 3:
            break
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()

    store = RunStore(store_path)
    (record,) = store.list_runs()
    finished_before = {s.id for s, _g in store.generations(record.run_id)}
    assert 0 < len(finished_before) < 40
    calls_before = log.read_text().splitlines()

    script = KILL_SCRIPT.format(root=root, store=str(store_path), log=str(log), delay=0)
    subprocess.run([sys.executable, "-c", script], cwd=root, check=True, timeout=120)

    assert store.count_generations(record.run_id) == (40, 0)
    assert len(list(store.scores(record.run_id))) == 40
    assert store.get_run(record.run_id).status == "complete"
    calls_after = log.read_text().splitlines()[len(calls_before) :]
    # finished samples are not sent again; at most the one call in flight at the kill is repeated
    assert not [c for c in calls_after if c.split()[1].rstrip(":") in finished_before]
    assert len([c for c in calls_after if c in calls_before]) <= 1
    assert len(calls_before) + len(calls_after) <= 80 + 1


def test_limit_takes_a_seeded_subset_that_spans_a_grouped_dataset() -> None:
    from ebmeval.runner import select_samples

    task = toy_task(40)
    task.dataset = sorted(task.dataset, key=lambda s: s.target)  # grouped by label, as upstream files often are
    first = select_samples(task, 10, shuffle=False)
    assert {s.target for s in first} == {"A"}
    picked = select_samples(task, 10, shuffle=True)
    assert {s.target for s in picked} == {"A", "B"}
    # the order depends on the ids only: any dataset order gives the same subset
    task.dataset = list(reversed(task.dataset))
    assert [s.id for s in select_samples(task, 10, shuffle=True)] == [s.id for s in picked]
    # a sample's place does not depend on the others: a larger limit extends the subset
    assert [s.id for s in select_samples(task, 20, shuffle=True)][:10] == [s.id for s in picked]


def test_run_settings_apply_to_role_models_and_task_defaults_only_to_the_evaluated_one(tmp_path: Path) -> None:
    from dataclasses import replace

    from ebmeval.models import GenerateConfig
    from ebmeval.runner import build_models

    task = replace(toy_task(2), roles=("judge",), generate_config=GenerateConfig(max_tokens=8, temperature=0.5))
    flags = config(tmp_path, model="scripted:A", roles={"judge": "scripted:B"}, generate={"max_tokens": 99})
    models = build_models(flags, task)
    assert models["model"].config == GenerateConfig(max_tokens=99, temperature=0.5)
    assert models["judge"].config == GenerateConfig(max_tokens=99)
    plain = build_models(config(tmp_path, model="scripted:A", roles={"judge": "scripted:B"}), task)
    assert plain["model"].config.max_tokens == 8 and plain["judge"].config.max_tokens is None


def test_a_role_left_to_the_model_under_evaluation_is_said_in_the_summary(tmp_path: Path) -> None:
    from dataclasses import replace

    task = replace(toy_task(2), roles=("judge",))
    alone = run(config(tmp_path, model="scripted:A"), task=task)
    notes = summarize(RunStore(tmp_path / "runs.sqlite"), alone.run.run_id).notes
    assert any(note.startswith("role judge: played by the model under evaluation") for note in notes)
    assert any("--role judge=SPEC" in note for note in notes)
    judged = run(config(tmp_path, model="scripted:A", roles={"judge": "scripted:B"}), task=task)
    assert not any("role judge" in n for n in summarize(RunStore(tmp_path / "runs.sqlite"), judged.run.run_id).notes)


async def test_arun_runs_inside_a_running_event_loop(tmp_path: Path) -> None:
    """A notebook's cell runs in an event loop, where asyncio.run (and so ``run``) cannot."""
    import ebmeval
    from ebmeval._util.errors import UsageError

    first = await ebmeval.arun(config(tmp_path), task=toy_task(3), models={"model": scripted_model()})
    assert first.run.status == "complete" and first.progress.done == 3
    again = await ebmeval.arun(config(tmp_path), task=toy_task(3), models={"model": scripted_model()})
    assert again.run.run_id == first.run.run_id and again.progress.resumed == 3
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(UsageError, match=r"inside a running event loop \(a notebook\): use await ebmeval.arun"):
            ebmeval.run(config(tmp_path), task=toy_task(3), models={"model": scripted_model()})
        gc.collect()
    assert not [w for w in caught if "never awaited" in str(w.message)]  # the refused run is not left pending


def test_a_task_without_scorers_says_what_to_run_next(tmp_path: Path) -> None:
    scored = run(config(tmp_path), task=toy_task(2), models={"model": scripted_model()})
    assert scored.next_step is None
    bare = dataclasses.replace(toy_task(2), scorers=[])
    plain = run(config(tmp_path), task=bare, models={"model": scripted_model()})
    assert plain.next_step == f"ebmeval rescore {plain.run.run_id} --scorer SCORER (ebmeval list scorers names them)"
    own = dataclasses.replace(bare, next_step="ebmeval arena {run} RUN_B --role judge=local # {task}")
    told = run(config(tmp_path), task=own, models={"model": scripted_model()})
    assert told.next_step == f"ebmeval arena {told.run.run_id} RUN_B --role judge=local # toy"
