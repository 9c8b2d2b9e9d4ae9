"""The prompt templates of the question-answering strategies (``direct``, ``cot``, ``cot-refine``)."""

from __future__ import annotations

from ._template import add_template as _add

QUESTION = _add(
    "question",
    1,
    "{context}Question: {question}{options}",
    "The question block shared by every strategy: context, question, lettered options.",
)
CONTEXT = _add(
    "context",
    2,
    "Context documents:\n{documents}\n\n",
    "Wraps the documents a sample is grounded in.",
)
DOCUMENT = _add(
    "document",
    1,
    '<document number="{number}" id="{id}">\n{heading}{text}\n</document>',
    "One numbered, delimited context document with its id (its title, when known, on the first line).",
)
OPTIONS = _add("options", 1, "\n\nOptions:\n{options}", "Wraps the lettered option lines.")

FORMAT_SINGLE = _add(
    "format/single",
    1,
    "Exactly one option is correct. Answer with its letter.",
    "What a single-answer multiple-choice reply must contain.",
)
FORMAT_MULTI = _add(
    "format/multi",
    1,
    "One or more options are correct. Answer with the letters of all correct options, "
    'separated by commas (for example "A, C").',
    "What a multi-answer multiple-choice reply must contain.",
)
FORMAT_SINGLE_STRICT = _add(
    "format/single-strict",
    1,
    "Exactly one option is correct. End your reply with a final line of exactly the form "
    '"ANSWER: X", where X is the letter of that option (for example "ANSWER: B").',
    "A single-answer reply in the one format the strict reading accepts (answer_format=strict).",
)
FORMAT_MULTI_STRICT = _add(
    "format/multi-strict",
    1,
    "One or more options are correct. End your reply with a final line of exactly the form "
    '"ANSWER: X" listing the letters of all correct options, separated by commas (for example "ANSWER: A, C").',
    "A multi-answer reply in the one format the strict reading accepts (answer_format=strict).",
)
FORMAT_OPEN = _add("format/open", 1, "Answer briefly.", "What a free-form reply must contain.")

DIRECT = _add(
    "mcq/direct",
    1,
    "{question_block}\n\n{answer_format} Reply with the answer only, without explanation.",
    "Answer only, no reasoning (strategy 'direct').",
)
COT = _add(
    "mcq/cot",
    1,
    "{question_block}\n\n{answer_format} First think step by step, then end your reply with a "
    'final line of the form "Answer: <answer>".',
    "Reasoning, then a final answer line (strategy 'cot', and the first call of 'cot-refine').",
)
REFINE = _add(
    "mcq/refine",
    1,
    "{question_block}\n\nA first answer to this question was:\n<first_answer>\n{previous}\n"
    "</first_answer>\n\nCheck that answer against the question{grounding}: correct any error in "
    "its reasoning or its choice, or confirm it. {answer_format} End your reply with a final line "
    'of the form "Answer: <answer>".',
    "The second call of 'cot-refine', conditioned on the question and the first answer.",
)
COT_STRICT = _add(
    "mcq/cot-strict",
    1,
    "{question_block}\n\n{answer_format} First think step by step, then end your reply with that line.",
    "Reasoning, then the final ANSWER line (strategy 'cot' with answer_format=strict).",
)
REFINE_STRICT = _add(
    "mcq/refine-strict",
    1,
    "{question_block}\n\nA first answer to this question was:\n<first_answer>\n{previous}\n"
    "</first_answer>\n\nCheck that answer against the question{grounding}: correct any error in "
    "its reasoning or its choice, or confirm it. {answer_format}",
    "The second call of 'cot-refine' with answer_format=strict.",
)

FINAL_MARKER = "Final answer:"
"""The line after which a free-form ``cot`` or ``cot-refine`` reply gives its answer."""
FREE_COT = _add(
    "free/cot",
    1,
    '{task_prompt}\n\nFirst think step by step. Then write a line "' + FINAL_MARKER + '" followed by your '
    "answer in exactly the form asked above.",
    "Reasoning, then the answer after a 'Final answer:' line (free-form tasks, strategy 'cot').",
)
FREE_REFINE = _add(
    "free/refine",
    1,
    "{task_prompt}\n\nA first answer to this task was:\n<first_answer>\n{previous}\n</first_answer>\n\n"
    "Check that answer against the task{grounding}: correct any error or omission, or confirm it. "
    'First think step by step. Then write a line "' + FINAL_MARKER + '" followed by the final answer in exactly '
    "the form asked above.",
    "The second call of 'cot-refine' on a free-form task, conditioned on the first answer.",
)
