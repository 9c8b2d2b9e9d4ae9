"""``ebmeval reproduce``: presets run as ordinary runs, tables beside the published values, cells traced."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ebmeval._util.errors import UsageError
from ebmeval.builtin_tasks.caremedeval import load_caremedeval
from ebmeval.reproduce import Condition, Preset, PresetOption, Reproduction, condition_config, preset_registry
from ebmeval.store import RunStore
from tests.helpers.cli import ebmeval

BASELINES = ("baseline/most-frequent-2", "baseline/most-frequent-3", "baseline/random")


def _models(*specs: str) -> list[str]:
    return [arg for spec in specs for arg in ("--model", spec)]


def _table(payload: dict[str, object], source: str) -> dict[str, object]:
    tables = payload["tables"]
    assert isinstance(tables, list)
    return next(t for t in tables if f"({source})" in t["title"])


def test_caremedeval_table_4_beside_the_published_rows(tmp_path: Path) -> None:
    done = ebmeval("reproduce", "caremedeval", *_models(*BASELINES), "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    payload = json.loads(done.stdout)
    assert {(r["condition"], r["model"]) for r in payload["runs"]} == {
        (c, m) for c in ("full", "abstract", "none") for m in BASELINES
    }
    table = _table(payload, "Table 4")
    assert table["header"][:5] == ["model", "paper row", "EMR", "EMR paper", "EMR Δ"]
    rows = {row[0]: row for row in table["rows"]}
    assert rows["baseline/most-frequent-2"][1:5] == ["Most 2 frequent answers", "0.034", "0.03", "+0.004"]
    assert rows["baseline/most-frequent-3"][1] == "Most 3 frequent answers"
    assert rows["baseline/random"][1] == "Random (1-3 options)"
    assert any(row[1] == "GPT4.1" and row[3] == "0.49" and row[2] == "—" for row in table["rows"])
    cells = {(c["model"], c["column"]): c for c in table["cells"]}
    hamming = cells[("baseline/most-frequent-2", "Hamming")]
    assert hamming["value"] == pytest.approx(0.3329, abs=1e-4) and hamming["published"] == 0.33
    assert hamming["difference"] == pytest.approx(hamming["value"] - 0.33)
    # each cell names the run and score set it was read from
    shown = json.loads(ebmeval("show", hamming["run_id"], "--json", cwd=tmp_path).stdout)
    assert hamming["score_set"] in {s["id"] for s in shown["score_sets"]}
    assert any(m["metric"] == "hamming" and m["value"] == hamming["value"] for m in shown["metrics"])
    assert f"run {hamming['run_id']}" in " ".join(table["notes"])
    assert [n[:20] for n in table["notes"] if n.startswith("note:")] == ["note: sample 350275d"]  # once
    # Table 5's conditions were not named: only its published rows
    table_5 = _table(payload, "Table 5")
    assert [row[1] for row in table_5["rows"]][:2] == ["Qwen3-8B (w/o)", "Qwen3-8B (with)"]
    assert {row[0] for row in table_5["rows"]} == {""} and table_5["cells"] == []


def test_reproduce_resumes_the_same_runs(tmp_path: Path) -> None:
    args = ("reproduce", "caremedeval", "--model", "baseline/random", "--condition", "full", "--limit", "20")
    first = json.loads(ebmeval(*args, "--json", cwd=tmp_path).stdout)
    again = ebmeval(*args, "--json", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert [r["run_id"] for r in json.loads(again.stdout)["runs"]] == [r["run_id"] for r in first["runs"]]
    listed = json.loads(ebmeval("list", "runs", "--json", cwd=tmp_path).stdout)
    assert len(listed) == 1
    cell = _table(first, "Table 4")["cells"][0]
    assert cell["n"] == 20


def test_list_shows_presets_with_version_coverage_and_limits(tmp_path: Path) -> None:
    done = ebmeval("reproduce", "--list", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    care = next(p for p in json.loads(done.stdout) if p["name"] == "caremedeval")
    assert care["version"] and any("Table 4" in c for c in care["covers"]) and care["limits"]
    assert "full" in [c["name"] for c in care["conditions"]]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("caremedeval", "--model", "baseline/random", "--condition", "nope"), "has no condition 'nope'"),
        (("caremedeval",), "name at least one model"),
        (("caremedevl", "--model", "baseline/random"), "Unknown preset 'caremedevl'"),
        (("caremedeval", "--model", "baseline/random", "--paper-row", "oops"), "expected SPEC=ROW"),
        (
            ("caremedeval", "--model", "baseline/random", "--paper-row", "baseline/first-option=GPT4.1"),
            "--paper-row names 'baseline/first-option', which no --model runs",
        ),
        (("caremedeval", "--model", "baseline/random", "--preset-arg", "x=1"), "takes no --preset-arg 'x'"),
        (("caremedeval", "--model", "baseline/random", "--task-arg", "context=none"), "No such option"),
        (("caremedeval", "--model", "baseline/random", "--input", "retrieval=ix"), "No such option"),
    ],
)
def test_bad_requests_exit_2_in_one_line(tmp_path: Path, args: tuple[str, ...], message: str) -> None:
    done = ebmeval("reproduce", *args, cwd=tmp_path)
    assert done.returncode == 2 and message in done.stderr and "Traceback" not in done.stderr


def test_paper_row_found_by_name_or_given() -> None:
    preset = preset_registry.get("caremedeval")
    found = Reproduction(preset, [], {}, "store.db", rows={"openai-compatible:mine@http://h": "Qwen3-8B"})
    paper_rows = ["GPT4.1", "Qwen3-8B"]
    assert found.row("openai-compatible:gpt-4.1@http://127.0.0.1:8000/v1", paper_rows) == "GPT4.1"
    assert found.row("openai-compatible:Qwen/Qwen3-8B@http://h", paper_rows) == "Qwen3-8B"
    assert found.row("openai-compatible:mine@http://h", paper_rows) == "Qwen3-8B"
    assert found.row("openai-compatible:other@http://h", paper_rows) is None


def test_a_condition_takes_only_the_roles_its_task_uses() -> None:
    condition = Condition("c", "caremedeval", {"context": "none"}, generate={"temperature": 0.0})
    config = condition_config(
        condition,
        "baseline/random",
        model_args={},
        roles={"judge": {"model": "scripted:A", "args": {}}},
        settings={"limit": 3, "generate": {"max_tokens": 5}},
    )
    assert config.roles == {} and config.limit == 3 and config.task_args == {"context": "none"}
    assert config.generate.temperature == 0.0 and config.generate.max_tokens == 5


def test_a_preset_refuses_a_condition_named_twice() -> None:
    from ebmeval.reproduce import register_preset

    twice = Condition("a", "caremedeval")
    with pytest.raises(ValueError, match="names a condition twice"):
        register_preset(Preset("x", "1", "p", (), (), (twice, twice), ()))
    with pytest.raises(UsageError):
        preset_registry.get("caremedeval").condition("absent")


def test_the_documented_preset_module_runs(tmp_path: Path) -> None:
    page = (Path(__file__).parents[2] / "docs" / "reproduce.md").read_text(encoding="utf-8")
    module = page.split("<!-- checked by tests/reproduce/test_reproduce.py -->\n```python\n", 1)[1].split("```", 1)[0]
    (tmp_path / "mypaper.py").write_text(module, encoding="utf-8")
    script = (
        "import sys; sys.path.insert(0, '.'); import mypaper; from ebmeval.cli import main; "
        "sys.argv = ['ebmeval', 'reproduce', 'mypaper', '--model', 'baseline/first-option', '--limit', '5', '--json']; "
        "main()"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 0, done.stderr
    table = json.loads(done.stdout)["tables"][0]
    assert table["title"] == "Without the abstract (Table 2)"
    assert [row[1] for row in table["rows"]] == ["", "GPT4.1"] and table["cells"][0]["n"] == 5


def test_caremedeval_figures_3_and_4_as_tables(tmp_path: Path) -> None:
    done = ebmeval("reproduce", "caremedeval", "--model", "baseline/most-frequent-2", "--json", cwd=tmp_path)
    payload = json.loads(done.stdout)
    figure_3 = _table(payload, "Figure 3, Section 5.1.2")
    assert figure_3["header"][2:] == [f"{c}{s}" for c in ("full", "abstract", "none") for s in ("", " paper", " Δ")]
    assert figure_3["rows"][1][:4] == ["", "GPT4.1", "—", "0.49"]
    assert {c["condition"] for c in figure_3["cells"]} == {"full", "abstract", "none"}
    figure_4 = _table(payload, "Figure 4")
    assert figure_4["header"] == [
        "model",
        "paper row",
        "design",
        "statistics",
        "methodology",
        "limitations",
        "applicability",
    ]
    samples = load_caremedeval(context="none")
    for cell in figure_4["cells"]:
        labelled = [s for s in samples if cell["group"] in s.metadata["labels"]]
        assert cell["n"] == len(labelled)
        assert cell["value"] == pytest.approx(sum(s.targets == ["A", "C"] for s in labelled) / len(labelled))


def test_caremedeval_table_5_runs_its_conditions_when_named(tmp_path: Path) -> None:
    args = ("reproduce", "caremedeval", "--model", "baseline/random", "--paper-row", "baseline/random=Qwen3-8B")
    conditions = ("--condition", "no-thinking", "--condition", "thinking", "--limit", "30", "--json")
    done = ebmeval(*args, *conditions, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    table = _table(json.loads(done.stdout), "Table 5")
    assert table["header"][:5] == ["model", "paper row", "setting", "EMR", "EMR paper"]
    ours = [row for row in table["rows"] if row[0] == "baseline/random"]
    assert [row[1:3] for row in ours] == [["Qwen3-8B (w/o)", "no-thinking"], ["Qwen3-8B (with)", "thinking"]]
    assert [row[4] for row in ours] == ["0.19", "0.35"]
    cells = [c for c in table["cells"] if c["column"] == "LCA"]
    assert [(c["condition"], c["published"], c["n"]) for c in cells] == [
        ("no-thinking", 0.42, 30),
        ("thinking", 0.55, 30),
    ]
    store = RunStore(tmp_path / "runs" / "ebmeval.sqlite", read_only=True)
    task_args = store.get_run(cells[1]["run_id"]).config["task_args"]
    assert task_args | {"thinking": True, "language": "fr", "prompt_set": "paper", "context": "full"} == task_args


def test_reproduce_reads_the_score_set_its_scorer_options_made(tmp_path: Path) -> None:
    args = ("reproduce", "caremedeval", "--model", "baseline/most-frequent-2", "--condition", "full", "--json")
    first = ebmeval(*args, cwd=tmp_path)
    exam = ebmeval(*args, "--scorer-arg", "lca_credit=[1, 0.5, 0.2]", cwd=tmp_path)
    assert exam.returncode == 0, exam.stderr
    lca = [
        next(c for c in _table(json.loads(done.stdout), "Table 4")["cells"] if c["column"] == "LCA")
        for done in (first, exam)
    ]
    assert lca[0]["run_id"] == lca[1]["run_id"] and lca[0]["score_set"] != lca[1]["score_set"]
    assert (round(lca[0]["value"], 4), round(lca[1]["value"], 4)) == (0.1948, 0.1798)


def _options_preset() -> Preset:
    """A preset whose ``given`` condition takes the option ``context``, required; ``plain`` takes none."""
    given = Condition("given", "caremedeval", {"context": "full"}, inputs=("context",))
    plain = Condition("plain", "caremedeval", {"context": "abstract"}, default=False)
    options = {"context": PresetOption("article part", required=True)}
    return Preset("opts", "1", "p", (), (), (given, plain), (), options=options)


def test_a_preset_option_reaches_the_conditions_that_take_it(tmp_path: Path) -> None:
    from ebmeval.reproduce import reproduce

    settings = {"limit": 3, "store": str(tmp_path / "s.db")}
    done = reproduce(_options_preset(), ["baseline/random"], options={"context": "none"}, settings=settings)
    (found,) = done.runs.values()
    store = RunStore(tmp_path / "s.db", read_only=True)
    assert found.condition == "given" and store.get_run(found.run_id).config["task_args"]["context"] == "none"
    plain = condition_config(
        _options_preset().condition("plain"), "m", model_args={}, roles={}, settings={}, options={"context": "none"}
    )
    assert plain.task_args == {"context": "abstract"}  # a condition that does not take the option keeps its own


def test_preset_options_are_checked_before_any_run_starts(tmp_path: Path) -> None:
    from ebmeval.reproduce import reproduce

    preset, store = _options_preset(), str(tmp_path / "s.db")
    with pytest.raises(UsageError, match="takes no --preset-arg 'labels' \\(its options: context\\)"):
        reproduce(
            preset, ["baseline/random"], options={"context": "none", "labels": "x.tsv"}, settings={"store": store}
        )
    with pytest.raises(UsageError, match="condition 'given' of preset 'opts' needs --preset-arg context=… \\(article"):
        reproduce(preset, ["baseline/random"], settings={"store": store})
    assert not (tmp_path / "s.db").exists()
    alone = reproduce(preset, ["baseline/random"], conditions=["plain"], settings={"limit": 2, "store": store})
    assert list(alone.runs) == [("plain", "baseline/random")]  # a condition that does not take it runs without it
    with pytest.raises(UsageError, match="name at least one model"):
        reproduce(preset, [], options={"context": "none"})


def test_a_preset_declares_exactly_the_options_its_conditions_take() -> None:
    takes = Condition("a", "caremedeval", inputs=("labels",))
    with pytest.raises(ValueError, match="undeclared options \\['labels'\\], no condition takes \\[\\]"):
        Preset("x", "1", "p", (), (), (takes,), ())
    with pytest.raises(ValueError, match="undeclared options \\[\\], no condition takes \\['index'\\]"):
        Preset("x", "1", "p", (), (), (Condition("a", "caremedeval"),), (), options={"index": PresetOption("i")})


def test_medmeta_table_2_under_the_papers_prompts_beside_the_published_means(tmp_path: Path) -> None:
    args = ("reproduce", "medmeta", "--model", "scripted:Statins help.", "--limit", "2", "--json")
    roles = ("--role", "judge=scripted:Score: 3", "--role", "evaluator=scripted:Score: 5")
    done = ebmeval(*args, *roles, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    payload = json.loads(done.stdout)
    assert {r["condition"] for r in payload["runs"]} == {"P-ZS", "P-CoT"}
    table = _table(payload, "Table 2")
    assert table["header"][2:8] == ["P-ZS", "P-ZS paper", "P-ZS Δ", "P-CoT", "P-CoT paper", "P-CoT Δ"]
    rows = {row[1] or row[0]: row for row in table["rows"]}
    assert rows["scripted:Statins help."][2] == "3.000"  # the judge's "Score: 3", read without a retry
    assert rows["Gemini Flash 2.5"][3:8] == ["2.10", "—", "—", "2.90", "—"]
    cell = next(c for c in table["cells"] if c["column"] == "P-CoT" and c["value"] is not None)
    shown = json.loads(ebmeval("show", cell["run_id"], "--json", cwd=tmp_path).stdout)
    assert shown["config"]["task_args"]["prompts"] == "medmeta-paper"


def test_medthink_figure_5_judge_by_prompt_through_the_sweep_beside_the_printed_values(tmp_path: Path) -> None:
    """Before: Fig. 5 was left to ebmeval.analysis.sweep; the preset printed no robustness table."""
    verdicts = json.dumps({"supported": True, "required": 4, "covered": 3, **{str(i): True for i in range(1, 40)}})
    judges = f"judges=GPT-4o-mini=scripted:{verdicts};Gemini-2.5-flash=scripted:no"
    args = ("reproduce", "medthink", "--model", "scripted:Final answer: A", "--limit", "3", "--json")
    args += ("--role", f"judge=scripted:{verdicts}", "--preset-arg", judges, "--preset-arg", "prompts=p1,p2")
    done = ebmeval(*args, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    table = _table(json.loads(done.stdout), "Fig. 5a-b, text")
    assert table["header"] == ["judge", "prompt", "LLM-w-Ref", "n", "paper", "Δ"]
    rows = [r[:2] + r[3:] for r in table["rows"]]
    assert rows == [
        ["GPT-4o-mini", "p1", "3", "—", "—"],
        ["Gemini-2.5-flash", "p1", "3", "0.522", "-0.522"],
        ["GPT-4o-mini", "p2", "3", "0.538", "+0.462"],
    ]
    assert table["rows"][2][2].startswith("1.000")
    cell = table["cells"][2]
    assert cell["scorer"] == "judge/steps-with-reference@p2[GPT-4o-mini]" and cell["run_id"]
    assert ebmeval("reproduce", "medthink", "--list", cwd=tmp_path).returncode == 0


def test_medthink_reasoning_and_accuracy_from_one_run_beside_the_printed_values(tmp_path: Path) -> None:
    verdicts = json.dumps({"supported": True, "required": 4, "covered": 3, **{str(i): True for i in range(1, 40)}})
    args = ("reproduce", "medthink", "--model", "scripted:Final answer: A", "--limit", "4", "--json")
    done = ebmeval(*args, "--role", f"judge=scripted:{verdicts}", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    payload = json.loads(done.stdout)
    (run,) = payload["runs"]
    table = _table(payload, "Fig. 3, text")
    cells = {c["column"]: c for c in table["cells"] if c["model"] == "scripted:Final answer: A"}
    assert {c["run_id"] for c in cells.values()} == {run["run_id"]}  # one run gives all three
    assert cells["LLM-w-Ref"]["value"] == 1.0 and cells["LLM-w/o-Ref"]["value"] == 0.75
    store = RunStore(tmp_path / "runs" / "ebmeval.sqlite", read_only=True)
    golds = [str(sample.target) for sample, _generation in store.generations(run["run_id"])]
    store.close()
    assert cells["accuracy"]["value"] == pytest.approx(sum(g.startswith("A") for g in golds) / len(golds))
    rows = {row[1]: row for row in table["rows"] if row[1]}
    assert rows["MedGemma-27B"][3] == "0.769"
