"""MedMeta (meta-analysis conclusion synthesis): Tables 2–4 on the public items, under the paper's prompts.

Every condition runs task ``synthesis`` on the 20 public MedMeta items with ``prompts=medmeta-paper``
(Appendix B–F) and MedMeta's rubric judge (role ``judge``, "Score: N" replies). P-ZS and P-CoT
always run; the evidence workflows run where the user gives what they need as preset options:
``abstracts=PATH`` (the primary studies' abstracts: G-RAG, N-RAG and the feasibility rating) and
``retrieval=INDEX`` (an index built with ``ebmeval index build``: S-RAG at K = 5 and K = 10, with
``reranker=PATH`` a cross-encoder). ``study=SLUG`` names a study whose human scores were imported
into the run store (``ebmeval annotate import``): Tables 3 and 4 are then computed with
:mod:`ebmeval.report`'s judge-versus-human statistics (sign: human − judge).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from ... import reproduce
from ...report import POOLED, SIGN, Agreement, HumanContrast, agreement, human_contrast
from ...reproduce._tables import difference, paper_columns, with_paper
from ...tables import Column, Table

PAPER = (
    "Anonymous authors (under double-blind review), MedMeta: A Benchmark for LLMs in Synthesizing "
    "Meta-Analysis Conclusion"
)

WORKFLOWS = ("P-ZS", "P-CoT", "G-RAG", "K5-RAG", "K10-RAG", "N-RAG")
"""Table 2's columns."""

TABLE_2 = {
    "Gemini Flash 2.5": (2.10, 2.90, 3.16, 3.03, 3.17, 1.01),
    "O4 Mini": (2.00, 2.70, 2.79, 2.90, 2.94, 1.19),
    "MedGemma 27B": (1.80, 2.17, 2.72, 2.68, 2.46, 1.00),
    "Gemma 27B": (1.60, 1.77, 2.58, 2.37, 2.31, 0.98),
    "Qwen3 8B": (1.70, 2.27, 2.72, 2.53, 2.63, 1.03),
    "Qwen3 8B (reasoning)": (1.50, 2.00, 2.56, 2.46, 2.30, 1.00),
    "Qwen3 8B-DeepSeek": (1.30, 1.94, 2.55, 2.10, 2.13, 1.17),
}
"""Table 2: mean LLM-judge score (0–5) per model and workflow, as printed (the ± 95% CI left out)."""

TABLE_3 = {
    ("MedGemma 27B", "G-RAG"): (0.74, 0.14, -1.18, 1.46),
    ("Gemma 27B", "G-RAG"): (0.65, 0.31, -1.42, 2.04),
    ("MedGemma 27B", "P-CoT"): (0.81, 0.27, -1.08, 1.62),
    ("Gemma 27B", "P-CoT"): (0.70, 0.10, -1.58, 1.78),
}
"""Table 3: Pearson r, mean bias (human − judge) and the 95% limits of agreement, per model and workflow."""

TABLE_4 = {
    ("H2", "MedGemma 27B", "Human"): (20, 0.742, 2.314, 0.032, 0.517),
    ("H2", "MedGemma 27B", "LLM"): (81, 0.543, 4.347, 0.001, 0.483),
    ("H2", "Gemma 27B", "Human"): (20, 1.025, 3.289, 0.004, 0.735),
    ("H2", "Gemma 27B", "LLM"): (81, 0.807, 5.745, 0.001, 0.638),
    ("H3", "G-RAG", "Human"): (20, 0.150, 1.084, 0.292, 0.242),
    ("H3", "G-RAG", "LLM"): (81, 0.140, 1.952, 0.054, 0.217),
    ("H3", "P-CoT", "Human"): (20, 0.433, 1.317, 0.203, 0.295),
    ("H3", "P-CoT", "LLM"): (81, 0.403, 2.935, 0.004, 0.326),
}
"""Table 4: paired t-tests, N, mean difference, t, p and Cohen's d; H2 is G-RAG − P-CoT per model,
H3 MedGemma 27B − Gemma 27B per workflow (the paper's "Sig." is p < 0.05)."""

PAPER_SETTINGS = {"source": "medmeta", "prompts": "medmeta-paper", "text_metrics": False}
"""The public items, the paper's prompts and judge; ROUGE and BERTScore are not in Table 2."""

JUDGE = ("judge/rubric-0-5", "rubric")
"""The judge scorer and its metric, read by every table."""


def _synthesis(
    name: str,
    workflow: str,
    about: str,
    *,
    inputs: tuple[str, ...] = (),
    requires: tuple[str, ...] = (),
    **task_args: Any,
) -> reproduce.Condition:
    """Task ``synthesis`` in ``workflow`` on the public items, under the paper's prompts and judge."""
    settings = {**PAPER_SETTINGS, "workflow": workflow, **task_args}
    return reproduce.Condition(name, "synthesis", settings, about=about, inputs=inputs, requires=requires)


CONDITIONS = (
    _synthesis("P-ZS", "parametric-zero-shot", "title only"),
    _synthesis(
        "P-CoT", "parametric-cot", "plan 5 sub-questions, answer, synthesise, evaluate, refine (evaluator role)"
    ),
)

OPTIONS = {
    "abstracts": reproduce.PresetOption(
        "PubMed XML, JSONL, CSV or folder of the primary abstracts: adds G-RAG, N-RAG (role negator) and feasibility"
    ),
    "retrieval": reproduce.PresetOption(
        "an index built with ebmeval index build: adds K5-RAG and K10-RAG (S-RAG, K per query)"
    ),
    "reranker": reproduce.PresetOption(
        "with retrieval, a local cross-encoder folder that reranks each query's candidates"
    ),
    "study": reproduce.PresetOption(
        "a study whose human scores were imported into the run store (ebmeval annotate import): Tables 3-4",
        tables=True,
    ),
}

GOLD = ("abstracts",)
"""What the gold-abstract workflows read and require."""

EVIDENCE = (
    _synthesis("G-RAG", "golden-rag", "every gold abstract", inputs=GOLD, requires=GOLD),
    _synthesis("N-RAG", "negated-rag", "gold abstracts, findings negated", inputs=GOLD, requires=GOLD),
    _synthesis("feasibility", "feasibility", "3 ratings at T 0.5", inputs=GOLD, requires=GOLD),
    *(
        _synthesis(
            f"K{k}-RAG",
            "standard-rag",
            f"S-RAG over the index, {k} per query",
            k=k,
            inputs=("abstracts", "retrieval", "reranker"),
            requires=("retrieval",),
        )
        for k in (5, 10)
    ),
)
"""The evidence workflows: each runs when the user gives what it reads (``--preset-arg``)."""


def table_2(reproduction: reproduce.Reproduction) -> reproduce.TracedTable:
    """Table 2: the mean judge score of each model per workflow, beside the published means."""
    measures = [reproduce.Measure(name, name, *JUDGE) for name in WORKFLOWS]
    published = {row: dict(zip(WORKFLOWS, values, strict=True)) for row, values in TABLE_2.items()}
    table = reproduce.comparison(reproduction, "Mean LLM-judge score (0-5)", measures, published, source="Table 2")
    missing = [w for w in WORKFLOWS[2:] if not any(c == w for c, _m in reproduction.runs)]
    if missing:
        table.table.notes.append(
            f"{', '.join(missing)} not run: give --preset-arg abstracts=PATH (G-RAG, N-RAG) and "
            "--preset-arg retrieval=INDEX (K5-RAG, K10-RAG)"
        )
    return table


def feasibility(reproduction: reproduce.Reproduction) -> reproduce.TracedTable:
    """Section 3.1: each model's mean feasibility rating (the paper keeps the items rated over 4)."""
    measures = [reproduce.Measure("feasibility", "feasibility", "synthesis/feasibility", "feasibility")]
    return reproduce.comparison(reproduction, "Mean feasibility rating (0-5)", measures, {}, source="Section 3.1")


Key = tuple[str, str, int]


def _scores(
    reproduction: reproduce.Reproduction, study: str
) -> tuple[dict[Key, dict[str, float]], dict[Key, float], dict[tuple[str, str], list[Key]], dict[str, str]]:
    """Human scores (field ``score``) and judge scores of every run, the human keys of each (condition, model).

    The last item maps each run to its judge score set's id.
    """
    human: dict[Key, dict[str, float]] = defaultdict(dict)
    judged: dict[Key, float] = {}
    keys: dict[tuple[str, str], list[Key]] = {}
    score_sets: dict[str, str] = {}
    with reproduction.read_store() as store:
        rows = store.human_scores(study, "score")
        for (condition, model), run in reproduction.runs.items():
            mine = [r for r in rows if r[0] == run.run_id and (run.samples is None or r[1] in run.samples)]
            for run_id, sample, epoch, annotator, value in mine:
                human[(run_id, sample, epoch)][annotator] = float(value)
            if mine:
                keys[(condition, model)] = sorted({(r[0], r[1], r[2]) for r in mine})
            for sample, epoch, label, score in store.scores(run.run_id, JUDGE[0]):
                if (graded := score.values.get(JUDGE[1])) is not None:
                    judged[(run.run_id, sample, epoch)] = float(graded)
                    score_sets.setdefault(run.run_id, label)
    return human, judged, keys, score_sets


def _unmatched(study: str, keys: Mapping[tuple[str, str], list[Key]]) -> list[str]:
    """A note when ``study`` holds no human score of any run reproduced: a misspelt or unimported study."""
    if keys:
        return []
    return [f"study {study} has no human scores (field 'score') of these runs in this store: "
            "check its name, and import it with ebmeval annotate import"]  # fmt: skip


def _no_study(title: str, source: str) -> reproduce.TracedTable:
    table = Table(f"{title} ({source})", ["note"])
    table.add("needs human scores: --preset-arg study=SLUG, imported with ebmeval annotate import")
    return reproduce.TracedTable(table, [])


def _cell(row: str, column: str, value: float | None, paper: float | None, model: str, condition: str,
          run_id: str, score_set: str, n: int) -> reproduce.CellTrace:  # fmt: skip
    return reproduce.CellTrace(row, column, value, paper, difference(value, paper), model, condition, run_id,
                               score_set, JUDGE[0], JUDGE[1], None, n, 0)  # fmt: skip


def table_3(reproduction: reproduce.Reproduction) -> reproduce.TracedTable:
    """Table 3: Pearson r and Bland–Altman (d = human − judge) per model and workflow, then pooled."""
    study = reproduction.options.get("study")
    if study is None:
        return _no_study("Human-LLM-judge alignment", "Table 3")
    human, judged, keys, score_sets = _scores(reproduction, study)
    columns: list[Column | str] = ["model", "paper row", "workflow", Column("n", "number")]
    columns += [*paper_columns("Pearson r"), *paper_columns("mean bias")]
    columns += ["95% LoA", "95% LoA paper"]
    table = Table(f"Human-LLM-judge alignment, study {study} (Table 3)", columns)
    cells: list[reproduce.CellTrace] = []
    reproduced = set()
    models = sorted({m for m, _w in TABLE_3})
    for (condition, model), found in keys.items():
        a = agreement(f"{condition} · {model}", found, human, judged)
        row = reproduction.row(model, models) or ""
        paper = TABLE_3.get((row, condition))
        reproduced.add((row, condition))
        r, bias = _r_bias(a)
        run_id = reproduction.runs[(condition, model)].run_id
        where = f"{score_sets.get(run_id, '')} + human study {study}"
        cells += [
            _cell(row or model, "Pearson r", r, paper and paper[0], model, condition, run_id, where, a.n_pairs),
            _cell(row or model, "mean bias", bias, paper and paper[1], model, condition, run_id, where, a.n_pairs),
        ]
        table.add(model, row, condition, a.n_pairs, *with_paper(r, paper and paper[0]),
                  *with_paper(bias, paper and paper[1]), _loa(a), _paper_loa(paper))  # fmt: skip
    for (row, condition), paper in TABLE_3.items():
        if (row, condition) not in reproduced:
            table.add("", row, condition, None, None, paper[0], None, None, paper[1], None, "", _paper_loa(paper))
    if keys:
        pooled = agreement(POOLED, sorted(k for found in keys.values() for k in found), human, judged)
        r, bias = _r_bias(pooled)
        table.add(POOLED, "", "", pooled.n_pairs, r, None, None, bias, None, None, _loa(pooled), "")
    table.notes += _unmatched(study, keys)
    table.notes += [SIGN, "paper: published values from Table 3; Δ = ours − paper; the paper pools no conditions"]
    table.notes += [f"{c.model} · {c.condition}: run {c.run_id}, {c.score_set}" for c in cells[::2]]
    return reproduce.TracedTable(table, cells)


def _r_bias(a: Agreement) -> tuple[float | None, float | None]:
    return (a.pearson or {}).get("value"), (a.bland_altman or {}).get("bias")


def _loa(a: Agreement) -> str:
    loa = (a.bland_altman or {}).get("loa")
    return f"[{loa[0]:.2f}, {loa[1]:.2f}]" if loa else ""


def _paper_loa(paper: Sequence[float] | None) -> str:
    return f"[{paper[2]:.2f}, {paper[3]:.2f}]" if paper else ""


def _item_scores(keys: Sequence[Key], value: Mapping[Key, float]) -> dict[str, float]:
    """Per sample: the mean over its epochs of ``value`` (keys without one left out)."""
    per: dict[str, list[float]] = defaultdict(list)
    for key in keys:
        if key in value:
            per[key[1]].append(value[key])
    return {sample: sum(v) / len(v) for sample, v in per.items()}


def _judge_items(
    reproduction: reproduce.Reproduction, condition: str, model: str, judged: Mapping[Key, float]
) -> dict[str, float]:
    run = reproduction.runs.get((condition, model))
    if run is None:
        return {}
    keys = [k for k in judged if k[0] == run.run_id and (run.samples is None or k[1] in run.samples)]
    return _item_scores(keys, judged)


def table_4(reproduction: reproduce.Reproduction) -> reproduce.TracedTable:
    """Table 4: paired t-tests of human and judge scores, G-RAG − P-CoT per model (H2), model − model (H3)."""
    study = reproduction.options.get("study")
    if study is None:
        return _no_study("Paired t-tests", "Table 4")
    human, judged, keys, _sets = _scores(reproduction, study)
    mean_human = {k: sum(v.values()) / len(v) for k, v in human.items()}
    rated = {cell: _item_scores(found, mean_human) for cell, found in keys.items()}
    columns: list[Column | str] = ["hypothesis", "comparison", "paper row", "judge", Column("N", "number"),
                                   Column("N paper", "number")]  # fmt: skip
    for name, fmt in (("mean diff", "{:.3f}"), ("t", "{:.3f}"), ("p", "{:.3f}"), ("Cohen's d", "{:.3f}")):
        columns += [Column(name, "number", fmt=fmt), Column(f"{name} paper", "number", fmt=fmt)]
    columns += ["sig", "sig paper"]
    table = Table(f"Paired t-tests, human (study {study}) and LLM judge (Table 4)", columns)
    models = sorted({m for h, m, _j in TABLE_4 if h == "H2"})
    comparisons: list[tuple[str, str, str, tuple[str, str], tuple[str, str]]] = []
    for model in reproduction.models:
        row = reproduction.row(model, models) or ""
        comparisons.append(("H2", f"G-RAG − P-CoT · {model}", row, ("G-RAG", model), ("P-CoT", model)))
    for first, second in zip(reproduction.models, reproduction.models[1:], strict=False):
        pair = (reproduction.row(first, models), reproduction.row(second, models))
        for workflow in ("G-RAG", "P-CoT"):
            row = workflow if pair == ("MedGemma 27B", "Gemma 27B") else ""
            comparisons.append(("H3", f"{first} − {second} · {workflow}", row, (workflow, first), (workflow, second)))
    for hypothesis, label, row, a, b in comparisons:
        for judge, x, y in (
            ("Human", rated.get(a, {}), rated.get(b, {})),
            ("LLM", _judge_items(reproduction, *a, judged), _judge_items(reproduction, *b, judged)),
        ):
            if not x or not y:
                continue
            contrast = human_contrast(a[0], b[0], x, y)
            _add_contrast(table, hypothesis, label, row, judge, contrast)
            if contrast.note:
                table.notes.append(f"{hypothesis} {label} ({judge}): {contrast.note}")
    table.notes += _unmatched(study, keys)
    table.notes += [
        "a − b on the items both conditions have; Human: per item the mean of the annotators; "
        "paired t, Cohen's d_z = mean(d) / SD(d) (ebmeval.report.human_contrast); sig: p < 0.05",
        "paper: published values from Table 4 (H3 is MedGemma 27B − Gemma 27B: name them in that order)",
    ]
    return reproduce.TracedTable(table, [])


def _add_contrast(table: Table, hypothesis: str, label: str, row: str, judge: str, c: HumanContrast) -> None:
    paper: Sequence[float | None] = TABLE_4.get((hypothesis, row, judge), (None,) * 5)
    sig = "" if c.p_t is None else ("Yes" if c.p_t < 0.05 else "No")
    paper_sig = "" if paper[3] is None else ("Yes" if paper[3] < 0.05 else "No")
    ours: list[Any] = [c.difference, c.t, c.p_t, c.cohens_d]
    values = [v for pair in zip(ours, paper[1:], strict=True) for v in pair]
    table.add(hypothesis, label, row, judge, c.n, paper[0], *values, sig, paper_sig)


reproduce.register_preset(
    reproduce.Preset(
        name="medmeta",
        version="2",
        paper=PAPER,
        covers=(
            "Table 2 (mean LLM-judge score per model and workflow; evidence workflows with abstracts= / retrieval=)",
            "Table 3 (judge versus human: Pearson r, Bland-Altman, per model and workflow) with study=",
            "Table 4 (paired t-tests of human and judge scores, H2 and H3) with study=",
            "Section 3.1 feasibility ratings with abstracts=",
        ),
        limits=(
            "20 of the paper's 81 meta-analyses are public: our means are over those 20",
            "the primary abstracts and the paper's ~25k-abstract corpus are not bundled: give abstracts=PATH and "
            "retrieval=INDEX (ebmeval index build) with --preset-arg",
            "N-RAG needs a negator model: --role negator=SPEC (the same for every model under test)",
            "the paper's human scores are not public: Tables 3-4 need a study of your own (study=SLUG)",
            "the judge is the model given with --role judge=SPEC (the paper's judges were reasoning models)",
            "the paper's models are not bundled: name them with --model",
        ),
        conditions=(*CONDITIONS, *EVIDENCE),
        tables=(table_2, table_3, table_4, feasibility),
        options=OPTIONS,
    )
)
