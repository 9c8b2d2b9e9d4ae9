from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.cli import ebmeval


def test_unknown_task_exits_2_with_suggestion(tmp_path: Path) -> None:
    done = ebmeval("run", "--task", "pubmedq", "--model", "scripted:A", cwd=tmp_path)
    assert done.returncode == 2
    assert "Unknown task 'pubmedq'" in done.stderr and "Did you mean 'pubmedqa'" in done.stderr
    assert "Traceback" not in done.stderr


def test_unknown_model_provider_exits_2(tmp_path: Path) -> None:
    done = ebmeval("run", "--task", "pubmedqa", "--model", "opeanai-compatible:x@http://h", cwd=tmp_path)
    assert done.returncode == 2
    assert "Unknown model provider 'opeanai-compatible'" in done.stderr and "openai-compatible" in done.stderr


def test_bad_config_file_exits_2_naming_the_place(tmp_path: Path) -> None:
    (tmp_path / "run.yaml").write_text("task: pubmedqa\nseed: many\n")
    done = ebmeval("run", "run.yaml", cwd=tmp_path)
    assert done.returncode == 2
    assert "run.yaml:2" in done.stderr and "field 'seed'" in done.stderr


def test_bad_task_option_exits_2(tmp_path: Path) -> None:
    done = ebmeval("run", "--task", "pubmedqa", "--task-arg", "contxt=none", "--model", "scripted:A", cwd=tmp_path)
    assert done.returncode == 2
    assert "task_args.contxt" in done.stderr


def test_run_show_export_roundtrip_with_scripted_model(tmp_path: Path) -> None:
    done = ebmeval("run", "--task", "pubmedqa", "--model", "scripted:A", "--limit", "4", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["generations"] == 4 and summary["invocation"]["new_samples"] == 4
    run_id = summary["run_id"]

    again = ebmeval("run", "--task", "pubmedqa", "--model", "scripted:A", "--limit", "4", "--json", cwd=tmp_path)
    assert json.loads(again.stdout)["invocation"] == {**json.loads(again.stdout)["invocation"], "new_samples": 0}

    shown = ebmeval("show", run_id, "--json", cwd=tmp_path)
    assert json.loads(shown.stdout)["metrics"] == summary["metrics"]

    exported = ebmeval("export", run_id, "--format", "csv", "--out", "out.csv", cwd=tmp_path)
    assert exported.returncode == 0
    assert len((tmp_path / "out.csv").read_text().strip().splitlines()) == 5

    listed = ebmeval("list", "runs", "--json", cwd=tmp_path)
    assert [r["run_id"] for r in json.loads(listed.stdout)] == [run_id]


@pytest.mark.parametrize("store", ["not-a-db.sqlite"])
def test_corrupt_store_is_a_usage_error(tmp_path: Path, store: str) -> None:
    (tmp_path / store).write_text("this is not sqlite")
    done = ebmeval("list", "runs", "--store", store, cwd=tmp_path)
    assert done.returncode == 2 and "not a readable ebmeval run store" in done.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("list",), "Missing argument"),
        (("list", "runs", "--bogus"), "No such option"),
        (("nosuch",), "No such command"),
    ],
)
def test_command_line_mistakes_exit_2_without_traceback(tmp_path: Path, args: tuple[str, ...], message: str) -> None:
    done = ebmeval(*args, cwd=tmp_path)
    assert done.returncode == 2
    assert message in done.stderr and "Traceback" not in done.stderr


def test_resume_command_keeps_bracketed_arguments() -> None:
    from rich.console import Console

    from ebmeval.cli._common import resume_command

    console = Console(record=True, width=300)
    console.print(resume_command(["run", "--task-arg", "items=[m3-1,m3-2]", "--role", "judge2=local:smollm2"]))
    assert console.export_text().strip() == "ebmeval run --task-arg 'items=[m3-1,m3-2]' --role judge2=local:smollm2"


def test_score_prints_a_table_without_json(tmp_path: Path) -> None:
    predictions = tmp_path / "predictions.jsonl"
    predictions.write_text('{"id": "12377809", "answer": "A"}\n{"id": "26163474", "output": "no idea"}\n')
    done = ebmeval("score", "pubmedqa", "--predictions", str(predictions), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    as_json = json.loads(ebmeval("score", "pubmedqa", "--predictions", str(predictions), "--json", cwd=tmp_path).stdout)
    assert as_json["metrics"][0]["value"] == 0.5 and as_json["scored"] == 2
    lines = [line for line in done.stdout.splitlines() if "accuracy" in line]
    assert lines and "0.500" in lines[0] and "│ 2 │" in lines[0]
    assert f"2 scored · {as_json['unparsed']} unparsed" in done.stdout


def test_list_scorers_workflows_and_templates(tmp_path: Path) -> None:
    def listed(kind: str) -> list[dict[str, object]]:
        done = ebmeval("list", kind, "--json", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        rows: list[dict[str, object]] = json.loads(done.stdout)
        return rows

    scorers = {row["scorer"] for row in listed("scorers")}
    assert {"accuracy", "triplet-f1", "judge/rubric-0-5", "judge/factuality", "factuality/labels"} <= scorers
    assert {"human/factuality", "factuality/copying"} <= scorers
    workflows = {(row["workflow"], row["option"]) for row in listed("workflows")}
    assert {("direct", "strategy"), ("cot-refine", "strategy"), ("golden-rag", "workflow")} <= workflows
    templates = {row["template"]: row for row in listed("templates")}
    assert any(t.startswith("question@v") for t in templates)
    assert {"rerank/llm-pointwise@v1", "factuality/conclusion@v1"} <= set(templates)
    assert {row["family"] for row in templates.values()} == {"workflow", "judge"}
    shown = ebmeval("list", "scorers", cwd=tmp_path)
    assert shown.returncode == 0 and "triplet-f1" in shown.stdout


def test_describe_prints_each_option_with_type_default_and_allowed_values(tmp_path: Path) -> None:
    done = ebmeval("describe", "caremedeval", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    options = {row["option"]: row for row in json.loads(done.stdout)}
    assert options["context"]["type"] == "'full' | 'abstract' | 'none'" and options["context"]["default"] == "full"
    assert options["system_prompt"]["type"] == "str | None"
    assert "role prompt" in options["system_prompt"]["about"]


def test_option_values_keep_their_declared_type(tmp_path: Path) -> None:
    bad = ebmeval("run", "--task", "pubmedqa", "--model", "scripted:A", "--task-arg", "strategy=[x", cwd=tmp_path)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert "task_args.strategy" in bad.stderr and "'direct' | 'cot' | 'cot-refine'" in bad.stderr
    args = ["run", "--task", "pubmedqa", "--model", "scripted:A", "--limit", "1", "--json"]
    plain = json.loads(ebmeval(*args, cwd=tmp_path).stdout)
    prompted = ebmeval(*args, "--task-arg", "system_prompt=# Role: a careful reader", cwd=tmp_path)
    assert prompted.returncode == 0, prompted.stderr
    assert json.loads(prompted.stdout)["run_id"] != plain["run_id"]  # a prompt starting with '#' is not "no prompt"
    shown = json.loads(ebmeval("show", json.loads(prompted.stdout)["run_id"], "--json", cwd=tmp_path).stdout)
    assert shown["config"]["task_args"]["system_prompt"] == "# Role: a careful reader"


def test_describe_lists_the_model_calls_with_their_settings(tmp_path: Path) -> None:
    done = ebmeval("describe", "synthesis", "--task-arg", "workflow=negated-rag", "--calls", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    calls = {row["call"]: row for row in json.loads(done.stdout)}
    assert calls["synthesis/negate"]["role"] == "negator" and calls["synthesis/negate"]["purpose"] == "evidence"
    assert calls["answer"]["max_tokens"] == 256 and calls["answer"]["thinking_max_tokens"] == 4096
    shown = ebmeval("describe", "pubmedqa", cwd=tmp_path)
    assert shown.returncode == 0 and "model calls" in shown.stdout
    bad = tmp_path / "bad.yaml"
    bad.write_text("task: pubmedqa\nmodel: scripted:A\nsteps:\n  synthesis/negate: {max_tokens: 9}\n")
    refused = ebmeval("run", str(bad), "--limit", "1", cwd=tmp_path)
    assert refused.returncode == 2 and "steps.synthesis/negate" in refused.stderr and "Traceback" not in refused.stderr


def test_describe_and_show_prompt_name_the_templates_of_each_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: the calls were listed with their settings but not the templates their prompts are rendered from."""

    def calls(task: str, *args: str) -> dict[str, dict[str, object]]:
        done = ebmeval("describe", task, *(f"--task-arg={a}" for a in args), "--calls", "--json", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        return {row["call"]: row for row in json.loads(done.stdout)}

    rag = calls("synthesis", "workflow=standard-rag")
    rerank = rag["rerank/llm-pointwise"]
    assert rerank["templates"] == ["rerank/llm-pointwise@v1"] and rerank["role"] == "model"
    assert (rerank["temperature"], rerank["max_tokens"]) == (0.0, 3)
    assert rag["answer"]["templates"] == ["synthesis/plan@v1", "synthesis/synthesise@v1"]
    assert rag["judge"]["templates"] == ["synthesis/rubric@v2", "synthesis/rubric-retry@v2"]
    assert set(calls("synthesis", "workflow=standard-rag", "rerank_top_n=0")) == {"answer", "judge"}
    negated = calls("synthesis", "workflow=negated-rag")
    assert negated["answer"]["templates"] == ["synthesis/synthesise@v1"]
    assert negated["synthesis/negate"]["templates"] == ["synthesis/negate@v1"]
    assert negated["synthesis/negation-check"]["templates"] == ["synthesis/negation-check@v1"]
    paper = calls("synthesis", "workflow=parametric-cot", "prompts=medmeta-paper")
    assert paper["synthesis/evaluate"]["templates"] == ["synthesis/medmeta-paper/evaluate@v1"]
    assert "mcq/direct@v1" in calls("pubmedqa")["answer"]["templates"]
    assert "mcq/refine@v1" in calls("pubmedqa", "strategy=cot-refine")["answer"]["templates"]
    conclusions = calls("factuality/m3-conclusions")
    assert conclusions["answer"]["templates"] == ["factuality/conclusion@v1"]
    assert "factuality/compare@v2" in conclusions["judge"]["templates"]

    shown = ebmeval("show-prompt", "synthesis", "--task-arg", "workflow=negated-rag", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert (
        "synthesis/negate (role negator, evidence): temperature=0.0, max_tokens=None, thinking_max_tokens=None;"
        " templates: synthesis/negate@v1\n" in shown.stdout
    )
    mcq = ebmeval("show-prompt", "pubmedqa", cwd=tmp_path)
    assert mcq.returncode == 0 and "max_tokens=32, thinking_max_tokens=4096; templates: question@v1," in mcq.stdout
    monkeypatch.setenv("COLUMNS", "200")  # a terminal wide enough for the table not to cut the ids
    table = ebmeval("describe", "synthesis", "--task-arg", "workflow=standard-rag", cwd=tmp_path)
    assert table.returncode == 0, table.stderr
    row = next(line for line in table.stdout.splitlines() if line.startswith("│ rerank/llm-pointwise"))
    assert [cell.strip() for cell in row.strip("│").split("│")][:6] == [
        "rerank/llm-pointwise",
        "model",
        "verdict",
        "rerank/llm-pointwise@v1",
        "0.0",
        "3",
    ]


def test_run_shows_its_progress_bar_on_stderr_unless_quiet(tmp_path: Path) -> None:
    args = ("run", "--task", "pubmedqa", "--model", "scripted:Answer: yes", "--limit", "2", "--no-cache")
    shown = ebmeval(*args, cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert [line for line in shown.stderr.splitlines() if line.startswith("pubmedqa") and "2/2" in line]
    quiet = ebmeval(*args, "--seed", "1", "--quiet", cwd=tmp_path)
    assert quiet.returncode == 0 and not [line for line in quiet.stderr.splitlines() if line.startswith("pubmedqa")]


def test_reproduce_takes_runs_options_as_run_declares_them() -> None:
    import typer

    from ebmeval.cli._app import app

    def options(command: str) -> dict[str, tuple[object, ...]]:
        found = typer.main.get_command(app).commands[command].params  # type: ignore[attr-defined]
        return {p.name: (tuple(p.opts), p.help, p.multiple, p.default) for p in found if p.param_type_name == "option"}

    shared = ("model_arg", "role", "role_arg", "scorer_arg", "limit", "seed")
    run, reproduce = options("run"), options("reproduce")
    assert [reproduce[name] for name in shared] == [run[name] for name in shared]
