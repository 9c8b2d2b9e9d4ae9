"""The long-form QA tasks and their shipped data."""

from __future__ import annotations

import importlib.util
import json
import shlex
from pathlib import Path

import pytest

from ebmeval._util.errors import ConfigError
from ebmeval.builtin_tasks import lfqa
from ebmeval.models import Model
from ebmeval.models.providers.scripted import ScriptedModel
from ebmeval.runner import RunConfig, run
from ebmeval.store import RunStore
from ebmeval.tasks import SampleContext, create_task
from tests.helpers.cli import ebmeval

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared" / "data"


def test_question_counts_and_references() -> None:
    live = lfqa.load_liveqa()
    assert len(live) == 104
    assert sum(len(s.metadata["references"]) for s in live) == 167
    assert all(s.target == s.metadata["references"][0] for s in live)
    medication = lfqa.load_medicationqa()
    assert len(medication) == 651 and all(s.metadata["references"] for s in medication)
    assert len({s.input for s in medication}) == 651
    health = lfqa.load_healthsearchqa()
    assert len(health) == 3156 and health[0].input == "Are benign brain tumors serious?" and health[0].target == ""


def test_liveqa_question_forms() -> None:
    original = lfqa.load_liveqa("original")[0]
    assert original.input.startswith("Noonan syndrome\n")
    paraphrase = lfqa.load_liveqa("paraphrase")[0]
    assert paraphrase.input == "What is the relationship between Noonan syndrome and polycystic renal disease?"
    with pytest.raises(ConfigError, match="question"):
        create_task("lfqa/liveqa", question="rewritten")


@pytest.mark.skipif(not SHARED.exists(), reason="needs the project's shared data folder")
def test_shipped_files_are_what_the_build_script_writes(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("build_lfqa_data", ROOT / "scripts/build_lfqa_data.py")
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    data = ROOT / "src/ebmeval/builtin_tasks/data"
    for name, records in (
        ("lfqa_liveqa.jsonl.gz", script.liveqa(SHARED / script.LIVEQA)),
        ("lfqa_medicationqa.jsonl.gz", script.medicationqa(SHARED / script.MEDICATIONQA)),
        ("lfqa_healthsearchqa.jsonl.gz", script.healthsearchqa(SHARED / script.HEALTHSEARCHQA)),
    ):
        script.write_records(tmp_path / name, records)
        assert (tmp_path / name).read_bytes() == (data / name).read_bytes(), name


async def test_workflow_sends_the_optional_system_prompt() -> None:
    plain = create_task("lfqa/medicationqa")
    with_system = create_task("lfqa/medicationqa", system_prompt="You are a pharmacist.")
    assert plain.version != with_system.version
    api = ScriptedModel(["  Take it with food.  ", "Ask your doctor."])
    result = await plain.workflow(plain.dataset[0], SampleContext({"model": Model(api)}))
    assert result.output == "Take it with food."
    await with_system.workflow(with_system.dataset[0], SampleContext({"model": Model(api)}))
    assert [m.role for m in api.requests[0][0]] == ["user"]
    assert [m.role for m in api.requests[1][0]] == ["system", "user"]
    assert plain.dataset[0].input in api.requests[0][0][-1].content


def test_runs_end_to_end_without_scorers(tmp_path: Path) -> None:
    store_path = tmp_path / "runs.sqlite"
    model = Model(ScriptedModel(lambda _m, _c: "Rest and drink fluids."))
    config = RunConfig(task="lfqa/healthsearchqa", limit=3, store=str(store_path))
    result = run(config, task=create_task("lfqa/healthsearchqa"), models={"model": model})
    assert result.progress.errors == 0
    store = RunStore(store_path)
    assert store.count_generations(result.run.run_id) == (3, 0)
    store.close()


def test_a_long_form_run_prints_the_command_that_judges_it_next(tmp_path: Path) -> None:
    made = ebmeval(
        "run", "--task", "lfqa/liveqa", "--model", "scripted:Rest and drink fluids.", "--limit", "2", cwd=tmp_path
    )
    assert made.returncode == 0, made.stderr
    (run_id,) = [r.run_id for r in RunStore(tmp_path / "runs" / "ebmeval.sqlite", read_only=True).list_runs()]
    (hint,) = [line for line in made.stderr.splitlines() if line.startswith("Next:")]
    rescore = f"ebmeval rescore {run_id} --scorer judge/reference-0-5 --role judge=local"
    arena = f"ebmeval arena {run_id} RUN_B --role judge=local, RUN_B another model's run of lfqa/liveqa"
    assert hint == f"Next: lfqa/liveqa computes no metric; {rescore}, or {arena}"
    command = [arg.replace("judge=local", "judge=scripted:Score: 4") for arg in shlex.split(rescore)[1:]]
    judged = ebmeval(*command, cwd=tmp_path)
    assert judged.returncode == 0, judged.stderr
    assert "reference" in judged.stdout and "4.000" in judged.stdout and "Next:" not in judged.stderr
    as_json = ebmeval(
        "run", "--task", "lfqa/healthsearchqa", "--model", "scripted:Rest.", "--limit", "1", "--json", cwd=tmp_path
    )
    step = json.loads(as_json.stdout)["invocation"]["next_step"]
    assert step.startswith("ebmeval arena ") and step.endswith("RUN_B another model's run of lfqa/healthsearchqa")
    scored = ebmeval("run", "--task", "pubmedqa", "--model", "scripted:Answer: yes", "--limit", "1", cwd=tmp_path)
    assert scored.returncode == 0 and "Next:" not in scored.stderr
