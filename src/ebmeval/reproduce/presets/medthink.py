"""MedThink-Bench (npj Digital Medicine, 2025): reasoning scores and answer accuracy from one run per model.

The condition runs ``medthink/reasoning`` under the paper's settings (``prompts=medthink-paper``:
judges at temperature 0.1 with 4,096 tokens and seed 42; models at temperature 0 with 4,096 tokens
and seed 42). The paper shows its results as figures; the published values are those its text
prints (Results and Discussion), the other cells are left empty.
"""

from __future__ import annotations

from ... import reproduce
from ..._util.errors import ConfigError
from ...reproduce._tables import difference
from ...tables import Column, Estimate, Table

PAPER = (
    "Zhou et al. (2025), Automating expert-level medical reasoning evaluation of large language models "
    "(MedThink-Bench), npj Digital Medicine"
)

FIGURE_3 = {
    "MedGemma-27B": {"LLM-w-Ref": 0.769, "accuracy": 0.384},
    "HuatuoGPT-o1-70B": {"LLM-w-Ref": 0.737, "accuracy": 0.49},
    "DeepSeek-R1": {"LLM-w-Ref": 0.727},
    "Med42-70B": {"LLM-w-Ref": 0.482, "LLM-w/o-Ref": 0.823},
    "Qwen3-32B": {"LLM-w/o-Ref": 0.907},
    "OpenAI-o3": {"accuracy": 0.692},
}
"""The values the text prints: LLM-w-Ref and LLM-w/o-Ref (Fig. 3, Results), accuracy (Discussion)."""

FIGURE_5A = {"Gemini-2.5-flash": 0.522, "HuatuoGPT-o1-70B": 0.553}
"""Fig. 5a as the text prints it: LLM-w-Ref of Llama-3.3-70B's rationales under two of the ten judges."""

FIGURE_5B = {"p2": 0.538, "p5": 0.567}
"""Fig. 5b as the text prints it: LLM-w-Ref under prompt variants 2 and 5, GPT-4o-mini the judge."""

JUDGE_TEMPERATURE, JUDGE_MAX_TOKENS = 0.1, 4096
"""The judges' settings of ``prompts=medthink-paper``, used by the sweep too."""

CONDITIONS = (
    reproduce.Condition(
        "paper",
        "medthink/reasoning",
        {"prompts": "medthink-paper", "text_metrics": False},
        about="zero-shot CoT; the three step judges and accuracy from the same replies, the paper's settings",
    ),
)


def figure_3(reproduction: reproduce.Reproduction) -> reproduce.TracedTable:
    """Fig. 3 and the accuracy of Supplementary Data 3 as a table: one row per model."""
    measures = [
        reproduce.Measure("LLM-w-Ref", "paper", "judge/steps-with-reference", "steps_supported"),
        reproduce.Measure("LLM-w/o-Ref", "paper", "judge/steps-without-reference", "steps_covered"),
        reproduce.Measure("accuracy", "paper", "medthink/accuracy", "accuracy"),
    ]
    return reproduce.comparison(
        reproduction, "Reasoning and accuracy", measures, FIGURE_3, source="Fig. 3, text", decimals=3
    )


def _judges(value: str) -> dict[str, str]:
    """``NAME=SPEC;NAME=SPEC`` → ``{NAME: SPEC}`` (the first ``=`` of each separates)."""
    out: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in value.split(";"))):
        name, sep, spec = part.partition("=")
        if not sep or not name.strip() or not spec.strip():
            raise ConfigError("--preset-arg judges", f"expected NAME=SPEC;NAME=SPEC, got {part!r}")
        out[name.strip()] = spec.strip()
    return out


def _plain(name: str) -> str:
    return "".join(ch for ch in name.lower() if ch.isalnum())


def figure_5(reproduction: reproduce.Reproduction) -> reproduce.TracedTable:
    """Fig. 5a-b as a table: the first model's rationales judged by each judge, and by the first judge per prompt.

    Runs ``ebmeval sweep`` (:func:`ebmeval.analysis.sweep`) at the paper's judge settings; stored
    scores are reused, so printing again judges nothing twice.
    """
    from ...analysis import sweep
    from ...models import ResponseCache, get_model
    from ...scorers.judges import PROMPT_VARIANTS

    title = "LLM-w-Ref robustness: judge × prompt (Fig. 5a-b, text)"
    columns: list[Column | str] = ["judge", "prompt", Column("LLM-w-Ref", "estimate"), Column("n", "number")]
    columns += [Column("paper", "number", fmt="{:.3f}"), Column("Δ", "number", fmt="{:+.3f}")]
    table = Table(title, columns)
    specs = _judges(reproduction.options.get("judges", ""))
    found = reproduction.runs.get(("paper", reproduction.models[0])) if reproduction.models else None
    if not specs or found is None:
        table.notes.append("give --preset-arg 'judges=NAME=SPEC;NAME=SPEC' (the first also tries every prompt)")
        return reproduce.TracedTable(table, [])
    prompts = tuple(reproduction.options.get("prompts", ",".join(PROMPT_VARIANTS)).split(","))
    cache = ResponseCache()
    rows = sweep(
        reproduction.store,
        found.run_id,
        {name: get_model(spec, cache=cache) for name, spec in specs.items()},
        prompts,
        judge_max_tokens=JUDGE_MAX_TOKENS,
        judge_temperature=JUDGE_TEMPERATURE,
    )
    first = next(iter(specs))
    published_judges = {_plain(k): v for k, v in FIGURE_5A.items()}
    cells: list[reproduce.CellTrace] = []
    for r in rows:
        paper = FIGURE_5B.get(r.prompt) if r.judge == first and r.prompt != PROMPT_VARIANTS[0] else None
        if r.prompt == PROMPT_VARIANTS[0]:
            paper = published_judges.get(_plain(r.judge))
        value = None if r.mean != r.mean else r.mean  # NaN: no sample scored
        delta = difference(value, paper)
        cells.append(
            reproduce.CellTrace(
                f"{r.judge} · {r.prompt}",
                "LLM-w-Ref",
                value,
                paper,
                delta,
                found.model,
                "paper",
                found.run_id,
                r.scorer,
                r.scorer,
                r.metric,
                None,
                r.n,
                r.unparsed,
            )  # fmt: skip
        )
        table.add(r.judge, r.prompt, Estimate(r.mean, r.ci), r.n, paper, delta)
    table.notes += [
        f"rationales of {found.model}, run {found.run_id}; judges at temperature {JUDGE_TEMPERATURE}, "
        f"{JUDGE_MAX_TOKENS} tokens; score sets by scorer name in ebmeval show {found.run_id}",
        "paper: Fig. 5a (a judge named as the paper's) and 5b (prompt variants of the first judge), only the "
        "values its text prints; Δ = ours − paper",
    ]
    return reproduce.TracedTable(table, cells)


reproduce.register_preset(
    reproduce.Preset(
        name="medthink",
        version="2",
        paper=PAPER,
        covers=(
            "Fig. 3 (LLM-w-Ref, LLM-w/o-Ref) and prediction accuracy, the values the text prints",
            "Fig. 5a-b (judge × prompt robustness of LLM-w-Ref) as a table, with judges=",
        ),
        limits=(
            "the paper's figures print few values: the other published cells are empty",
            "expert scores are not public, so the expert column and its correlations are not reproduced",
            "the text metrics are off here, BLEURT included: medthink/reasoning computes BLEURT only from a "
            "checkpoint you give (--task-arg bleurt=PATH; checked against the bleurt-pytorch port, not against "
            "published BLEURT-20 values), and its BERTScore runs on all-MiniLM-L6-v2",
            "Fig. 5a-b needs the judges you bring (--preset-arg judges=...); Fig. 5c (cost) is in ebmeval report",
            "the judge is the model given with --role judge=SPEC (the paper: GPT-4o-mini)",
        ),
        conditions=CONDITIONS,
        tables=(figure_3, figure_5),
        options={
            "judges": reproduce.PresetOption(
                "NAME=SPEC;NAME=SPEC: the judges of Fig. 5a, run on the first model's rationales (ebmeval "
                "sweep); the first also tries every prompt (Fig. 5b)",
                tables=True,
            ),
            "prompts": reproduce.PresetOption(
                "comma-separated prompt variants of Fig. 5b (default p1,p2,p3,p4,p5)", tables=True
            ),
        },
    )
)
