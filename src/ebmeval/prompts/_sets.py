"""Prompt sets: every instruction of the question-answering strategies in one wording and language.

The ``default`` set is ebmeval's own English wording (the templates of :mod:`._qa`). Other
sets follow a paper: ``caremedeval/fr`` is CareMedEval's physician-role instruction in French,
``caremedeval/en`` its English translation (Bonzi et al., 2025, Figure 1). A set holds the
direct and chain-of-thought prompts; strategies it does not word are refused, never filled in
with another language's text.
"""

from __future__ import annotations

from dataclasses import dataclass

from .._util.registry import Registry
from ._qa import CONTEXT, COT, DIRECT, DOCUMENT, FORMAT_MULTI, FORMAT_OPEN, FORMAT_SINGLE, OPTIONS, QUESTION
from ._template import PromptTemplate
from ._template import add_template as _add


@dataclass(frozen=True)
class PromptSet:
    """The templates one wording of the question-answering prompts is made of.

    Fields the templates may use: ``question`` ({context}, {question}, {options} and
    {answer_format}, the format instruction), ``format_*`` ({letters}: the sample's option
    letters, ``A, B, C, D, E``), ``direct`` and ``cot`` ({question_block}, {answer_format}).
    """

    name: str
    language: str
    question: PromptTemplate
    context: PromptTemplate
    options: PromptTemplate
    format_single: PromptTemplate
    format_multi: PromptTemplate
    format_open: PromptTemplate
    direct: PromptTemplate
    cot: PromptTemplate
    truncation_note: str = "\n[… the rest of this text is left out: it does not fit the model's context window …]"
    """Appended to a document cut to fit the context window."""
    document: PromptTemplate = DOCUMENT
    """One context document ({number}, {id}, {heading}: the title line or nothing, {text})."""

    @property
    def templates(self) -> tuple[PromptTemplate, ...]:
        """Every template of the set (their ids version the prompts of a task that uses it)."""
        return (
            self.question,
            self.context,
            self.options,
            self.format_single,
            self.format_multi,
            self.format_open,
            self.direct,
            self.cot,
            self.document,
        )


prompt_sets: Registry[PromptSet] = Registry("prompt set")
"""Prompt sets by name (``default``, ``caremedeval/fr`` …)."""


def add_prompt_set(prompt_set: PromptSet) -> PromptSet:
    """Register ``prompt_set`` under its name."""
    return prompt_sets.register(prompt_set.name)(prompt_set)


DEFAULT = add_prompt_set(
    PromptSet("default", "en", QUESTION, CONTEXT, OPTIONS, FORMAT_SINGLE, FORMAT_MULTI, FORMAT_OPEN, DIRECT, COT)
)


PLAIN_DOCUMENT = _add(
    "document/plain",
    1,
    "{heading}{text}",
    "A context document as it is (its title, when known, first): for papers whose prompt shows the article bare.",
)


def _paper_set(language: str, texts: dict[str, str], truncation_note: str) -> PromptSet:
    about = "CareMedEval's prompt (Bonzi et al., 2025, Figure 1)"
    name = f"caremedeval/{language}"
    return add_prompt_set(
        PromptSet(
            name=name,
            language=language,
            **{key: _add(f"{name}/{key}", 1, text, f"{about}, {language}: {key}") for key, text in texts.items()},
            truncation_note=truncation_note,
            document=PLAIN_DOCUMENT,
        )
    )


CAREMEDEVAL_EN = _paper_set(
    "en",
    {
        "question": "{context}{answer_format}\n\nQuestion:\n{question}{options}",
        "context": "Article:\n{documents}\n\n",
        "options": "\n\nAnswers:\n{options}",
        "format_single": "You are a physician capable of rigorously interpreting data from medical studies. "
        "Based on the given article, answer the following multiple-choice question. Provide only the letter "
        "corresponding to the correct answer among: {letters}. Your answer must strictly follow the exact "
        "format: one letter (e.g., B).",
        "format_multi": "You are a physician capable of rigorously interpreting data from medical studies. "
        "Based on the given article, answer the following multiple-choice question. Provide only the letter(s) "
        "corresponding to the correct answer(s) among: {letters}. Your answer must strictly follow the exact "
        "format: one or more letters, separated by commas (e.g., B, E).",
        "format_open": "You are a physician capable of rigorously interpreting data from medical studies. "
        "Based on the given article, answer the following question briefly.",
        "direct": "{question_block}",
        "cot": "{question_block}\n\nFirst reason step by step, then end your reply with a final line "
        '"Answer:" followed by your answer in that exact format.',
    },
    "\n[… the rest of this article is left out: it does not fit the model's context window …]",
)
"""The English prompt of CareMedEval's Figure 1, as printed; the ``cot`` sentence is ebmeval's."""

CAREMEDEVAL_FR = _paper_set(
    "fr",
    {
        "question": "{context}{answer_format}\n\nQuestion :\n{question}{options}",
        "context": "Article :\n{documents}\n\n",
        "options": "\n\nRéponses :\n{options}",
        "format_single": "Vous êtes un médecin capable d'interpréter rigoureusement les données d'études "
        "médicales. En vous appuyant sur l'article fourni, répondez à la question à choix multiples suivante. "
        "Donnez uniquement la lettre correspondant à la bonne réponse parmi : {letters}. Votre réponse doit "
        "respecter strictement le format exact : une lettre (par exemple : B).",
        "format_multi": "Vous êtes un médecin capable d'interpréter rigoureusement les données d'études "
        "médicales. En vous appuyant sur l'article fourni, répondez à la question à choix multiples suivante. "
        "Donnez uniquement la ou les lettres correspondant à la ou aux bonnes réponses parmi : {letters}. "
        "Votre réponse doit respecter strictement le format exact : une ou plusieurs lettres, séparées par des "
        "virgules (par exemple : B, E).",
        "format_open": "Vous êtes un médecin capable d'interpréter rigoureusement les données d'études "
        "médicales. En vous appuyant sur l'article fourni, répondez brièvement à la question suivante.",
        "direct": "{question_block}",
        "cot": "{question_block}\n\nRaisonnez d'abord étape par étape, puis terminez votre réponse par une "
        "dernière ligne « Réponse : » suivie de votre réponse dans ce format exact.",
    },
    "\n[… la suite de cet article est omise : elle ne tient pas dans la fenêtre de contexte du modèle …]",
)
"""The French of CareMedEval's prompt: the paper prints only its English rendering (Figure 1),
so this is a translation of it back into French (the ``cot`` sentence is ebmeval's)."""
