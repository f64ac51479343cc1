"""Action atoms and the similarity of two programs (the SR and AC of :mod:`mindhelper_env.metrics`).

A program's acting lines become *atoms* ``(verb, (object_class, ...))`` with normalized class
names (movement lines are dropped); :func:`sequence_similarity` is SR = (2·R1 + 3·R2 + 5·RL)
/ 10 from unigram, bigram and longest-common-subsequence F1 with soft matching
(:func:`atom_similarity`), and :func:`action_correctness` is AC. docs/metrics.md defines them.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence

from mindhelper_env.world.script import is_silence, normalize_class, parse_program

__all__ = ["Atom", "atoms_from_lines", "atom_similarity", "unigram_f1", "bigram_f1", "lcs_f1",
           "sequence_similarity", "action_correctness"]

#: An action atom: ``(verb, (object_class, target_class, ...))`` with normalized class names.
Atom = tuple[str, tuple[str, ...]]

# Weights of SR = (2*R1 + 3*R2 + 5*RL) / 10.
_W_R1, _W_R2, _W_RL = 0.2, 0.3, 0.5

# --------------------------------------------------------------------------------------
# Action atoms and sequence similarity
# --------------------------------------------------------------------------------------


def atoms_from_lines(lines: Iterable[str]) -> list[Atom]:
    """Action atoms ``verb(class[, class...])`` from script lines, in order.

    Every verb is kept (including ``walk`` and ``find``); an atom is exactly the verb and
    its argument class names, normalized with :func:`normalize_class` (node ids are
    dropped). Each item may itself be a small program (lines separated by newlines or
    ``;``). Lines that do not parse, ``none``, and non-string items are skipped.
    """
    atoms: list[Atom] = []
    for item in lines:
        if not isinstance(item, str) or is_silence(item):
            continue
        parsed, _errors = parse_program(item)
        for line in parsed:
            atoms.append((line.verb, tuple(normalize_class(c) for c in line.classes)))
    return atoms


def atom_similarity(a: Atom, b: Atom) -> float:
    """Soft match score of two atoms, in ``[0, 1]``.

    Different verbs score 0. Equal verbs score ``0.2 + 0.8 * k / max(len(a), len(b))``
    where ``k`` is the number of positionally equal arguments; two argument-less atoms
    with the same verb score 1.0.
    """
    verb_a, args_a = a
    verb_b, args_b = b
    if verb_a != verb_b:
        return 0.0
    longest = max(len(args_a), len(args_b))
    if longest == 0:
        return 1.0
    equal = sum(1 for x, y in zip(args_a, args_b, strict=False) if x == y)
    return 0.2 + 0.8 * equal / longest


def _f1(matched: float, n_pred: int, n_ref: int) -> float:
    """F1 of a soft match total: precision ``matched/n_pred``, recall ``matched/n_ref``."""
    if n_pred == 0 or n_ref == 0 or matched <= 0.0:
        return 0.0
    precision = matched / n_pred
    recall = matched / n_ref
    return min(1.0, 2.0 * precision * recall / (precision + recall))


def _greedy_match_total(scores: list[list[float]]) -> float:
    """Sum of a greedy one-to-one matching on a score matrix (rows: pred, cols: ref).

    Pairs are taken best score first (ties broken by row, then column index, so the
    result is deterministic); each row and each column is used at most once.
    """
    pairs = sorted(
        ((s, i, j) for i, row in enumerate(scores) for j, s in enumerate(row) if s > 0.0),
        key=lambda p: (-p[0], p[1], p[2]),
    )
    used_rows: set[int] = set()
    used_cols: set[int] = set()
    total = 0.0
    for s, i, j in pairs:
        if i in used_rows or j in used_cols:
            continue
        used_rows.add(i)
        used_cols.add(j)
        total += s
    return total


def unigram_f1(pred: Sequence[Atom], ref: Sequence[Atom]) -> float:
    """R1: soft unigram F1 with greedy one-to-one matching under :func:`atom_similarity`."""
    if not pred or not ref:
        return 0.0
    scores = [[atom_similarity(p, r) for r in ref] for p in pred]
    return _f1(_greedy_match_total(scores), len(pred), len(ref))


def bigram_f1(pred: Sequence[Atom], ref: Sequence[Atom]) -> float:
    """R2: soft bigram F1.

    Bigrams are consecutive atom pairs; a bigram pair scores the mean of its two atom
    similarities, and matching is greedy one-to-one as for :func:`unigram_f1`.

    If either sequence has fewer than two atoms there are no bigrams to compare and
    order carries no information, so R2 falls back to R1 (a one-atom reference answered
    with the right atom is then not capped below 1.0). Empty sequences give 0.
    """
    if not pred or not ref:
        return 0.0
    if len(pred) < 2 or len(ref) < 2:
        return unigram_f1(pred, ref)
    sim = [[atom_similarity(p, r) for r in ref] for p in pred]
    scores = [
        [(sim[i][j] + sim[i + 1][j + 1]) / 2.0 for j in range(len(ref) - 1)]
        for i in range(len(pred) - 1)
    ]
    return _f1(_greedy_match_total(scores), len(pred) - 1, len(ref) - 1)


def lcs_f1(pred: Sequence[Atom], ref: Sequence[Atom]) -> float:
    """RL: longest-common-subsequence F1 with soft atom matches.

    The "LCS length" is the maximum total :func:`atom_similarity` over order-preserving
    one-to-one alignments (dynamic programming); precision divides it by ``len(pred)``,
    recall by ``len(ref)``. Empty sequences give 0.
    """
    if not pred or not ref:
        return 0.0
    n_ref = len(ref)
    prev = [0.0] * (n_ref + 1)
    for p in pred:
        cur = [0.0] * (n_ref + 1)
        for j, r in enumerate(ref, start=1):
            cur[j] = max(prev[j], cur[j - 1], prev[j - 1] + atom_similarity(p, r))
        prev = cur
    return _f1(prev[n_ref], len(pred), n_ref)


def sequence_similarity(pred_atoms: Sequence[Atom], ref_atoms: Sequence[Atom]) -> float:
    """SR for one episode: ``(2*R1 + 3*R2 + 5*RL) / 10``, in ``[0, 1]``.

    See :func:`unigram_f1`, :func:`bigram_f1` and :func:`lcs_f1` for the three terms.
    An empty prediction scores 0. An empty reference also scores 0 here, but SR is only
    aggregated over episodes whose reference is non-empty (see :func:`episode_outcome`).
    Identical non-empty sequences score exactly 1.0.
    """
    if not pred_atoms or not ref_atoms:
        return 0.0
    r1 = unigram_f1(pred_atoms, ref_atoms)
    r2 = bigram_f1(pred_atoms, ref_atoms)
    rl = lcs_f1(pred_atoms, ref_atoms)
    value = _W_R1 * r1 + _W_R2 * r2 + _W_RL * rl
    if math.isclose(value, 1.0, rel_tol=0.0, abs_tol=1e-12):
        return 1.0
    return min(1.0, max(0.0, value))


def action_correctness(pred_atoms: Sequence[Atom], ref_atoms: Sequence[Atom]) -> float:
    """AC = |A* ∩ Â| / |A*|: share of reference atoms that were predicted.

    The intersection is a multiset (``Counter``) intersection of exact atoms, so a
    reference atom that occurs twice must be predicted twice to count twice. An empty
    reference gives 0 (such episodes are excluded from the AC average).
    """
    if not ref_atoms:
        return 0.0
    common = Counter(pred_atoms) & Counter(ref_atoms)
    return sum(common.values()) / len(ref_atoms)


# --------------------------------------------------------------------------------------
# Input validation helpers
