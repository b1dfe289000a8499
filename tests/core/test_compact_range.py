"""A tree known by the compact range of its first leaves extends, roots and proves as the
whole tree does (what lets a new process seal without reading the chain again)."""

from __future__ import annotations

import pytest

from troth.core import merkle

LEAVES = [merkle.leaf_hash(i.to_bytes(2, "big")) for i in range(70)]
FULL = merkle.Tree(LEAVES)


def test_roots_and_consistency_proofs_match_the_whole_tree() -> None:
    for m in range(70):
        nodes = FULL.compact_range(m)
        assert len(nodes) == bin(m).count("1")  # one hash per binary digit of the size
        tree = merkle.Tree.from_compact_range(m, nodes)
        assert tree.root() == FULL.root(m)
        for leaf in LEAVES[m:]:
            tree.append(leaf)
        assert tree.compact_range() == FULL.compact_range()
        for n in range(m, 71):
            assert tree.root(n) == FULL.root(n), (m, n)
            assert tree.consistency(m, n) == FULL.consistency(m, n), (m, n)
            assert merkle.verify_consistency(
                m, n, FULL.root(m), FULL.root(n), tree.consistency(m, n)
            )


def test_what_lies_below_the_compact_range_is_refused_not_guessed() -> None:
    tree = merkle.Tree.from_compact_range(6, FULL.compact_range(6))
    tree.append(LEAVES[6])
    with pytest.raises(ValueError, match="holds its leaves from 6"):
        tree.leaf(3)
    with pytest.raises(ValueError, match="compact range"):
        tree.inclusion(2)
    with pytest.raises(ValueError, match="compact range"):
        tree.root(5)  # [4, 5) is a leaf the range does not keep
    with pytest.raises(ValueError, match="holds 2 hashes"):
        merkle.Tree.from_compact_range(6, FULL.compact_range(7))
