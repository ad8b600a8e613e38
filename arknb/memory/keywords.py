"""Keyword search: a tokenizer for mixed-script text and an incremental BM25 index.

Used by ``search_history`` (the messages a compression replaced) and by
``EpisodicMemory.retrieve`` (episodes, when no ``embed`` function is given).

Okapi BM25 with Lucene's non-negative IDF, ``idf = ln(1 + (N - n + 0.5) / (n + 0.5))``,
``k1 = 1.5``, ``b = 0.75``. It is written here rather than taken from a library: the
formula is a dozen lines, the maintained libraries either stopped in 2022
(``rank-bm25``) or pull in NumPy and SciPy (``bm25s``), and what matters for our use,
an index that grows one document at a time and a tokenizer that also handles Chinese
and Japanese text (no spaces between words), neither provides.

Example:
    >>> index = BM25Index()
    >>> for text in ["the cat sat on the mat", "dogs chase cats", "上下文压缩很重要"]:
    ...     _ = index.add(tokenize(text))
    >>> [i for i, _ in index.search(tokenize("cat mat"), 2)]
    [0]
    >>> [i for i, _ in index.search(tokenize("压缩"), 1)]
    [2]
"""

from __future__ import annotations

import math
import re
from collections import Counter

__all__ = ["BM25Index", "tokenize"]

_WORD = re.compile(r"\w+", re.UNICODE)
# Scripts written without spaces between words: searched by character bigrams.
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+")


def _stem(word: str) -> str:
    """A light English suffix strip, so "releases" finds "release" and "caches" "cache"."""
    if len(word) <= 3 or not word.isascii() or not word.isalpha():
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "shes", "ches", "xes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def tokenize(text: str) -> list[str]:
    """Lower-cased word tokens (plurals folded); runs of CJK characters become overlapping bigrams.

    Example:
        >>> tokenize("Read configs.yaml, 压缩上下文")
        ['read', 'config', 'yaml', '压缩', '缩上', '上下', '下文']
    """
    tokens: list[str] = []
    for word in _WORD.findall(text.lower()):
        if not _CJK.search(word):
            tokens.append(_stem(word))
            continue
        position = 0
        for run in _CJK.finditer(word):
            if run.start() > position:
                tokens.append(word[position:run.start()])
            chars = run.group()
            if len(chars) == 1:
                tokens.append(chars)
            else:
                tokens.extend(chars[i:i + 2] for i in range(len(chars) - 1))
            position = run.end()
        if position < len(word):
            tokens.append(word[position:])
    return tokens


class BM25Index:
    """Documents (token lists) added one at a time, searched by BM25 score.

    Documents are numbered from 0 in the order they were added.
    """

    __slots__ = ("k1", "b", "_frequencies", "_lengths", "_document_counts", "_total_length")

    def __init__(self, *, k1: float = 1.5, b: float = 0.75) -> None:
        self.k1 = k1
        self.b = b
        self._frequencies: list[Counter[str]] = []
        self._lengths: list[int] = []
        self._document_counts: Counter[str] = Counter()
        self._total_length = 0

    def __len__(self) -> int:
        return len(self._lengths)

    def add(self, tokens: list[str]) -> int:
        """Add one document; returns its number."""
        counts = Counter(tokens)
        self._frequencies.append(counts)
        self._lengths.append(len(tokens))
        self._document_counts.update(counts.keys())
        self._total_length += len(tokens)
        return len(self._lengths) - 1

    def search(self, query: list[str], k: int, *, limit: int | None = None) -> list[tuple[int, float]]:
        """The ``k`` best documents with a score above zero, best first: ``(number, score)``.

        ``limit`` searches only the first ``limit`` documents. Ties keep the later
        document first (the more recent message or episode).
        """
        count = len(self._lengths) if limit is None else min(limit, len(self._lengths))
        if count == 0 or k <= 0:
            return []
        terms = [t for t in dict.fromkeys(query) if t in self._document_counts]
        if not terms:
            return []
        average = (sum(self._lengths[:count]) / count) or 1.0
        idf = {t: math.log(1.0 + (len(self._lengths) - self._document_counts[t] + 0.5)
                           / (self._document_counts[t] + 0.5)) for t in terms}
        k1, b = self.k1, self.b
        scored: list[tuple[float, int]] = []
        for number in range(count):
            counts = self._frequencies[number]
            score = 0.0
            norm = k1 * (1.0 - b + b * self._lengths[number] / average)
            for term in terms:
                tf = counts.get(term)
                if tf:
                    score += idf[term] * tf * (k1 + 1.0) / (tf + norm)
            if score > 0.0:
                scored.append((score, number))
        scored.sort(key=lambda pair: (-pair[0], -pair[1]))
        return [(number, score) for score, number in scored[:k]]
