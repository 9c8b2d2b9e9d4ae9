"""The paper's Figure 3: the distribution of ROUGE-1 for correct and incorrect summaries, by category."""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from typing import Final

from .._util.errors import MissingDependencyError
from ._analysis import Assessment

FIGURE3_CATEGORIES: Final[tuple[str, ...]] = ("pico", "direction", "modality", "factually_correct")
"""The categories of the paper's Figure 3."""


def rouge_plot(
    assessments: Sequence[Assessment],
    scores: Sequence[Mapping[str, float]],
    metric: str = "rouge1",
    categories: Sequence[str] = FIGURE3_CATEGORIES,
) -> bytes:
    """PNG box plots of ``metric`` for correct and incorrect summaries, one pair of boxes per category.

    ``scores[i]`` holds the ROUGE F values of ``assessments[i]``; summaries whose category is
    unknown are left out of that category's boxes.

    Raises:
        MissingDependencyError: matplotlib is not installed.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise MissingDependencyError("The ROUGE plot", "matplotlib", "report") from exc
    figure, axes = plt.subplots(1, len(categories), figsize=(2.4 * len(categories), 3.2), sharey=True, squeeze=False)
    for axis, category in zip(axes[0], categories, strict=True):
        groups = [
            [s[metric] for a, s in zip(assessments, scores, strict=True) if a.labels.value(category) is flag]
            for flag in (True, False)
        ]
        axis.boxplot(groups)
        axis.set_xticks([1, 2], [f"correct\n(n={len(groups[0])})", f"incorrect\n(n={len(groups[1])})"], fontsize=8)
        axis.set_title(category, fontsize=9)
        axis.spines[["top", "right"]].set_visible(False)
    axes[0][0].set_ylabel(f"{metric} F")
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    plt.close(figure)
    return buffer.getvalue()
