"""MRAG (medical RAG benchmark, paper 004 in the project's papers): the closed-form Table 1 and the LFQA Elo Table 2.

Section 5.1: every model answers with the CoT-Refine strategy, nucleus sampling at temperature
0.7, top_p 0.8 and repetition penalty 1.05, without and with retrieval of eight snippets per
question. Here each MRAG task the project ships is one condition without retrieval and one
with it (``--preset-arg retrieval=INDEX``: the user's index, MRAG's is BGE-base over its
combined corpus). Published values are Table 1's and Table 2's as printed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ... import reproduce
from ..._util.errors import ConfigError, UsageError
from ...reproduce._tables import difference, setting_row, unreproduced

if TYPE_CHECKING:
    from ...arena import ArenaResult

PAPER = (
    "MRAG: a benchmark and toolkit for retrieval-augmented generation in medicine "
    "(MCQA, IE, link prediction and LFQA cohorts; the project's papers/004)"
)

DECODING = {"temperature": 0.7, "top_p": 0.8, "repetition_penalty": 1.05}
"""Section 5.1's decoding for every model."""
K = 8
"""Snippets retrieved per question (Section 5.1)."""

MCQA = {
    "MMLU-Med": "mirage/mmlu_med",
    "MedQA": "mirage/medqa",
    "MedMCQA": "mirage/medmcqa",
    "PubMedQA": "mirage/pubmedqa",
    "BioASQ": "mirage/bioasq",
}
"""Table 1's MCQA columns → the tasks (MIRAGE's question-only sets)."""
IE = {"DDI": "ddi", "ChemProt": "chemprot"}
"""The IE columns the project ships (CMeIE, in Chinese, is not shipped)."""
LFQA = ("lfqa/liveqa", "lfqa/medicationqa", "lfqa/healthsearchqa")

SETTINGS = (("w/o. RAG", ""), ("w. RAG", "-rag"))
"""Table rows → the suffix of their conditions."""

TABLE_1 = {
    "GPT-4 (gpt-4o)": ((93.1, 86.5, 76.2, 57.2, 88.1), (92.5, 89.3, 75.8, 78.3, 90.5)),
    "GPT-3.5 (gpt-3.5-turbo)": ((78.9, 61.5, 56.2, 36.7, 76.9), (78.2, 67.3, 57.8, 68.7, 86.4)),
    "Tongyi Qwen (qwen_max)": ((77.7, 62.6, 59.7, 37.1, 76.3), (77.1, 66.7, 60.2, 75.3, 88.1)),
    "Mixtral (8 * 22B)": ((75.5, 59.3, 53.4, 35.8, 73.8), (75.1, 62.5, 54.0, 74.1, 84.2)),
    "LlaMA-3 (70B)": ((61.6, 54.1, 44.5, 32.6, 61.6), (61.4, 53.6, 45.2, 63.5, 70.2)),
    "Qwen2.5 (72B)": ((70.6, 55.6, 43.9, 30.9, 64.3), (68.5, 56.9, 43.0, 69.2, 81.7)),
    "MEDITRON (70B)": ((64.9, 51.6, 46.7, 43.4, 68.4), (65.4, 49.5, 45.9, 53.4, 76.8)),
    "PMC-LlaMA (13B)": ((52.2, 44.3, 46.5, 35.8, 63.1), (52.5, 42.6, 48.3, 54.0, 65.2)),
}
"""Table 1, MCQA cohort: accuracy (%) on MMLU-Med, MedQA, MedMCQA, PubMedQA, BioASQ w/o. and w. RAG (the
order of ``SETTINGS``), as printed (the ± spreads and the IE/LP columns are not in the text the project holds)."""

TABLE_2 = {
    "GPT-4 (gpt-4o)": ((931.7, 1179.5, 1062.4, 990.9), (1270.9, 1082.4, 696.1, 1259.4)),
    "GPT-3.5 (gpt-3.5-turbo)": ((811.7, 873.4, 1345.8, 773.5), (985.5, 864.6, 895.6, 976.0)),
}
"""Table 2: Elo (initial 1000, K = 40) on usefulness, readability, knowledge, reasoning w/o. and w. RAG, as printed."""
TABLE_2_AXES = ("Usefulness", "Readability", "Knowledge", "Reasoning")
AXES = ("usefulness", "readability", "knowledge", "reasoning")
"""Table 2's columns → the arena's axes."""
ELO_K = 40.0
MIN_MATCHES = 80
"""MRAG's sampled arena: each pair of systems meets until it has 80 matches on every axis."""


def _published(
    table: Mapping[str, tuple[tuple[float, ...], ...]], headers: Sequence[str], per: float = 1
) -> dict[str, dict[str, dict[str, float]]]:
    """Paper row → setting → header → value of one of the paper's tables, each value divided by ``per``."""
    settings = [setting for setting, _suffix in SETTINGS]
    return {
        row: {
            setting: dict(zip(headers, (v / per for v in values), strict=True))
            for setting, values in zip(settings, both, strict=True)
        }
        for row, both in table.items()
    }


PUBLISHED_1 = _published(TABLE_1, list(MCQA), per=100)
"""Table 1's accuracies as fractions, by setting."""
PUBLISHED_2 = _published(TABLE_2, TABLE_2_AXES)
"""Table 2's Elo values, by setting."""


def _short(task: str) -> str:
    return task.rsplit("/", 1)[-1]


def _conditions() -> tuple[reproduce.Condition, ...]:
    found: list[reproduce.Condition] = []
    for task in (*MCQA.values(), *IE.values(), *LFQA):
        closed = {"strategy": "cot-refine"}
        lfqa = task in LFQA
        found.append(
            reproduce.Condition(
                _short(task), task, closed, generate=DECODING, about=f"{task}, CoT-Refine", default=not lfqa
            )
        )
        found.append(
            reproduce.Condition(
                f"{_short(task)}-rag",
                task,
                {**closed, "k": K},
                generate=DECODING,
                about=f"{task}, CoT-Refine over the top {K} documents of the user's index",
                default=not lfqa,
                inputs=("retrieval",),
            )
        )
    return tuple(found)


def table_1(reproduction: reproduce.Reproduction) -> reproduce.TracedTable:
    """Table 1, MCQA and IE cohorts: each model without and with RAG; accuracy (%) and micro-F1 (%)."""
    headers = [*MCQA, *IE]
    entries: list[reproduce.Entry] = []
    for model in reproduction.models:
        row = reproduction.row(model, TABLE_1)
        for setting, suffix in SETTINGS:
            measures = [reproduce.Measure(h, f"{_short(t)}{suffix}", "accuracy", "accuracy") for h, t in MCQA.items()]
            measures += [reproduce.Measure(h, f"{t}{suffix}", "triplet-f1", "micro_f1") for h, t in IE.items()]
            published = PUBLISHED_1[row][setting] if row else {}
            entries.append(
                reproduce.Entry(model, setting_row(row, setting) if row else "", measures, published, setting=setting)
            )
    entries += unreproduced(PUBLISHED_1, {entry.row for entry in entries})
    table = reproduce.comparison_table(
        reproduction, "Closed-form tasks w/o. and w. RAG", headers, entries, source="Table 1"
    )
    table.table.notes.append(
        "published accuracies are the paper's percentages as fractions; DDI and ChemProt micro-F1 have no "
        "printed per-task values here; RAG rows need --preset-arg retrieval=INDEX"
    )
    return table


def _lfqa_systems(reproduction: reproduce.Reproduction) -> dict[tuple[str, str], list[reproduce.ConditionRun]]:
    """(model, setting) → its runs of the LFQA sets every such system ran (the arena's pooled systems)."""
    found: dict[tuple[str, str], dict[str, reproduce.ConditionRun]] = {}
    for model in reproduction.models:
        for setting, suffix in SETTINGS:
            runs = {t: reproduction.runs.get((f"{_short(t)}{suffix}", model)) for t in LFQA}
            ran = {t: run for t, run in runs.items() if run is not None}
            if ran:
                found[(model, setting)] = ran
    shared = [t for t in LFQA if all(t in ran for ran in found.values())]
    return {key: [ran[t] for t in shared] for key, ran in found.items() if shared}


def _target(reproduction: reproduce.Reproduction) -> int:
    """The per-pair target of the sampled arena (``--preset-arg min_matches``, MRAG's 80 by default)."""
    value = str(reproduction.options.get("min_matches", MIN_MATCHES)).strip()
    if not value.isdigit() or int(value) < 1:
        raise ConfigError("--preset-arg min_matches", f"must be a whole number of at least 1, not {value!r}")
    return int(value)


def _arena(
    reproduction: reproduce.Reproduction,
    systems: dict[tuple[str, str], list[reproduce.ConditionRun]],
    judge: dict[str, Any],
    target: int,
) -> ArenaResult | str:
    """One arena over every system (MRAG rates its four systems together): sampled pairs, K = 40.

    An arena that cannot rate the systems (no answer parsed in every run, no verdict read) gives
    the reason instead.
    """
    from ...arena import run_arena
    from ...models import ResponseCache, get_model

    model = get_model(str(judge["model"]), cache=ResponseCache(), **judge.get("args", {}))
    groups = [",".join(run.run_id for run in runs) for runs in systems.values()]
    seed = reproduction.seed or 0
    try:
        return run_arena(reproduction.store, groups, judge=model, k=ELO_K, seed=seed, min_matches=target)
    except UsageError as exc:
        return f"the arena could not rate the systems: {exc}"


def _elo_cells(
    row: str, runs: list[reproduce.ConditionRun], result: ArenaResult, published: dict[str, float]
) -> dict[str, reproduce.CellTrace]:
    """Our Elo per axis for the system of ``runs``, traced to the arena and the runs."""
    system = "+".join(sorted(run.run_id for run in runs))
    cells: dict[str, reproduce.CellTrace] = {}
    for header, axis in zip(TABLE_2_AXES, AXES, strict=True):
        found = result.axes[axis]
        value, paper = found.elo.value[system], published.get(header)
        cells[header] = reproduce.CellTrace(
            row=row,
            column=header,
            value=value,
            published=paper,
            difference=difference(value, paper),
            model=runs[0].model,
            condition=",".join(run.condition for run in runs),
            run_id=system,
            score_set=result.arena_id,
            scorer="arena",
            metric=f"elo/{axis}",
            group=None,
            n=sum(found.record[system]),
            missing=0,
        )
    return cells


def table_2(reproduction: reproduce.Reproduction) -> reproduce.TracedTable:
    """Table 2 (LFQA Elo): ours from one arena over each model's pooled LFQA runs w/o. and w. RAG.

    Runs ``ebmeval arena`` (:func:`ebmeval.arena.run_arena`) with the ``--role judge`` model;
    judgements are stored under the arena id, so printing again judges nothing twice. Without a
    judge, or with fewer than two systems (model × setting) that ran LFQA, the published values
    only, with a note of what is missing.
    """
    target = _target(reproduction)
    systems = _lfqa_systems(reproduction)
    judge = reproduction.roles.get("judge")
    missing = _missing(systems, judge)
    result: ArenaResult | None = None
    if not missing and judge is not None:
        found = _arena(reproduction, systems, judge, target)
        result, missing = (found, "") if not isinstance(found, str) else (None, found)
    entries = _rated_entries(reproduction, systems, result) if result is not None else []
    entries += unreproduced(PUBLISHED_2, {entry.row for entry in entries})
    table = reproduce.comparison_table(
        reproduction, "LFQA arena, Elo", list(TABLE_2_AXES), entries, source="Table 2", decimals=1
    )
    table.table.notes.append(_arena_note(result) if result is not None else f"ours: {missing}")
    return table


def _rated_entries(
    reproduction: reproduce.Reproduction,
    systems: dict[tuple[str, str], list[reproduce.ConditionRun]],
    result: ArenaResult,
) -> list[reproduce.Entry]:
    """One row per system rated: the model, beside the paper's row it reproduces under the same setting."""
    entries: list[reproduce.Entry] = []
    for (model, setting), runs in systems.items():
        row = reproduction.row(model, TABLE_2)
        published = PUBLISHED_2[row][setting] if row else {}
        label = setting_row(row, setting) if row else ""
        traced = _elo_cells(label or model, runs, result, published)
        entries.append(reproduce.Entry(model, label, (), published, setting=setting, traced=traced))
    return entries


def _missing(systems: dict[tuple[str, str], list[reproduce.ConditionRun]], judge: dict[str, Any] | None) -> str:
    """What the arena lacks (``""`` when it can run)."""
    if len(systems) < 2:
        return (
            "the arena needs the LFQA runs of at least two systems (model × setting): run two models with "
            "--condition liveqa --condition medicationqa --condition healthsearchqa (and their -rag conditions)"
        )
    if judge is None:
        return "give the arena's judge with --role judge=SPEC"
    return ""


def _arena_note(result: ArenaResult) -> str:
    """The arena behind our values: id, judge, design and its shortfalls."""
    least = min((n for axis in result.axes for n in result.pair_matches(axis).values()), default=0)
    failed = f"; {len(result.errors)} judgements failed" if result.errors else ""
    return (
        f"ours: arena {result.arena_id} judged by {result.judge} (Elo from 1000, K = {ELO_K:g}; seeded random "
        f"questions per pair until {result.min_matches} matches on every axis, fewest reached: {least}{failed}); "
        f"each cell's run id is its system's pooled runs"
    )


reproduce.register_preset(
    reproduce.Preset(
        name="mrag",
        version="2",
        paper=PAPER,
        covers=(
            "Table 1, MCQA cohort (MMLU-Med, MedQA, MedMCQA, PubMedQA, BioASQ) w/o. and w. RAG",
            "Table 1, IE cohort (DDI, ChemProt micro-F1) w/o. and w. RAG",
            "Table 2, LFQA Elo: the LFQA runs (LiveQA, MedicationQA, HealthSearchQA) w/o. and w. RAG, when "
            "named, pooled per model and setting into one sampled arena judged by --role judge=SPEC",
        ),
        limits=(
            "the retrieval index is the user's (--preset-arg retrieval=INDEX): MRAG's BGE-base index over its "
            "combined corpus is not shipped",
            "CMeIE (IE) and the link-prediction sets ADInt and DRKG are not shipped",
            "Table 2's Elo values need a judge of yours (--role judge=SPEC; MRAG's is GPT-4) and the LFQA runs "
            "of two models or settings; without them the preset prints the published values",
            "the text the project holds prints Table 1's MCQA columns only: IE and LP per-task values are missing",
        ),
        conditions=_conditions(),
        tables=(table_1, table_2),
        options={
            "retrieval": reproduce.PresetOption(
                "the folder of your retrieval index, from ebmeval index build: the -rag conditions answer over it",
                required=True,
            ),
            "min_matches": reproduce.PresetOption(
                f"Table 2's per-pair target: matches of each pair of systems on every axis (default {MIN_MATCHES})",
                tables=True,
            ),
        },
    )
)
