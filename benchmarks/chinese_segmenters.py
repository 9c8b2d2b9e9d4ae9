"""Speed of the Chinese word segmenters on PyPI that BM25's ``zh`` tokenizer could use.

Text: sentences drawn (seeded) from jieba's own dictionary, words weighted by their frequency,
joined without spaces into ~100-character runs with Chinese punctuation. Each segmenter is
timed over the same text after one warm-up call (dictionary loading is timed apart).

    python benchmarks/chinese_segmenters.py [--chars 2000000]

Needs ``jieba``; ``rjieba`` and ``jieba_fast`` are timed when installed.
"""

from __future__ import annotations

import argparse
import importlib
import random
import time
from collections.abc import Callable
from pathlib import Path


def corpus(chars: int, seed: int = 0) -> list[str]:
    """Lines of about 100 characters made of dictionary words (frequency-weighted)."""
    import jieba

    words, weights = [], []
    for line in (Path(jieba.__file__).parent / "dict.txt").read_text(encoding="utf-8").splitlines():
        word, freq, *_ = line.split(" ")
        words.append(word)
        weights.append(int(freq))
    rng = random.Random(seed)
    lines, total = [], 0
    while total < chars:
        line = "".join(rng.choices(words, weights, k=40))[:100] + "。"
        lines.append(line)
        total += len(line)
    return lines


def segmenters() -> dict[str, Callable[[str], list[str]]]:
    """Every segmenter that imports here, by name."""
    found: dict[str, Callable[[str], list[str]]] = {}
    import jieba

    found["jieba (HMM)"] = lambda text: jieba.lcut(text)
    found["jieba (no HMM)"] = lambda text: jieba.lcut(text, HMM=False)
    for module, name in (("jieba_fast", "jieba_fast (HMM)"), ("rjieba", "rjieba (HMM)")):
        try:
            lib = importlib.import_module(module)
        except ImportError:
            continue
        found[name] = (lambda lib: lambda text: list(lib.cut(text)))(lib)
    found["character bigrams (no dictionary)"] = lambda text: [text[i : i + 2] for i in range(len(text) - 1)]
    return found


def main() -> None:
    """Time each segmenter and print characters per second."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--chars", type=int, default=2_000_000)
    lines = corpus(parser.parse_args().chars)
    total = sum(map(len, lines))
    print(f"{len(lines)} lines, {total} characters")
    for name, cut in segmenters().items():
        started = time.perf_counter()
        cut("二甲双胍用于治疗2型糖尿病。")
        warm = time.perf_counter() - started
        started = time.perf_counter()
        tokens = sum(len(cut(line)) for line in lines)
        elapsed = time.perf_counter() - started
        print(f"{name:38s} load {warm:6.2f} s  {total / elapsed / 1e6:6.2f} M chars/s  {tokens} tokens")


if __name__ == "__main__":
    main()
