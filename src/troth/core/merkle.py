"""An owner's chain as an RFC 6962 Merkle log: roots, inclusion and consistency proofs — pure.

Hashing is RFC 6962 §2.1 (RFC 9162 §2.1.1), SHA-256 throughout::

    leaf hash = SHA-256(0x00 || leaf data)
    node hash = SHA-256(0x01 || left || right)
    MTH({})   = SHA-256()                       the empty tree
    MTH(D[n]) = node(MTH(D[0:k]), MTH(D[k:n]))  k = the largest power of two below n

The leaf data of a troth ledger is an entry's personaxis ``hash`` as its 32 raw bytes
(:func:`entry_leaf`). That hash commits to ``content_hash``, never to the content, so a
redaction (content → ``[redacted]``) changes no leaf, no root and no proof.

Proofs are the RFC's: an inclusion proof is the audit path of RFC 6962 §2.1.1 (RFC 9162
§2.1.3.1), a consistency proof the one of §2.1.2 (RFC 9162 §2.1.4.1); both are lists of
32-byte hashes, nearest the leaves first — exactly ``tlog.RecordProof`` and
``tlog.TreeProof`` of golang.org/x/mod/sumdb/tlog. Verification follows RFC 9162 §2.1.3.2
and §2.1.4.2 and answers True or False: a proof that does not hold is an expected outcome.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence

__all__ = [
    "EMPTY_ROOT",
    "HASH_SIZE",
    "Tree",
    "entry_leaf",
    "leaf_hash",
    "node_hash",
    "verify_consistency",
    "verify_inclusion",
]

HASH_SIZE = 32
EMPTY_ROOT = hashlib.sha256(b"").digest()


def leaf_hash(data: bytes) -> bytes:
    """SHA-256(0x00 || data): the hash of one leaf."""
    return hashlib.sha256(b"\x00" + data).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    """SHA-256(0x01 || left || right): the hash of an interior node."""
    return hashlib.sha256(b"\x01" + left + right).digest()


def entry_leaf(entry_hash: str) -> bytes:
    """The leaf hash of a chain entry, from its personaxis ``hash`` (64 lowercase hex)."""
    return leaf_hash(bytes.fromhex(entry_hash))


def _split(n: int) -> int:
    """The largest power of two strictly below ``n`` (n ≥ 2)."""
    return 1 << ((n - 1).bit_length() - 1)


class Tree:
    """A Merkle tree over leaf hashes in order; any prefix of it is a tree too.

    Roots of complete (power-of-two, aligned) subtrees are remembered, so a root and then
    proofs cost about one pass over the leaves, not one per proof.
    """

    def __init__(self, leaves: Iterable[bytes] = ()) -> None:
        self._leaves: list[bytes] = list(leaves)
        self._complete: dict[tuple[int, int], bytes] = {}
        # Leaves below this index are not held, only the compact range over them
        # (:meth:`from_compact_range`): enough to extend the tree, sign it and prove it
        # consistent with its prefix of that size, not to prove an entry below it.
        self._first = 0

    @classmethod
    def from_compact_range(cls, size: int, nodes: Sequence[bytes]) -> Tree:
        """A tree of ``size`` leaves known only by its compact range (:meth:`compact_range`),
        to which leaves can be appended."""
        spans = _decomposition(size)
        if len(nodes) != len(spans) or not _well_formed(nodes):
            raise ValueError(f"a compact range of {size} leaves holds {len(spans)} hashes")
        tree = cls()
        tree._first = size
        tree._complete = dict(zip(spans, nodes, strict=True))
        return tree

    def compact_range(self, size: int | None = None) -> list[bytes]:
        """The roots of the complete subtrees that make up the first ``size`` leaves, left
        to right (one per binary digit of ``size``): all a later tree needs of them."""
        return [self._hash(lo, hi) for lo, hi in _decomposition(self._size(size))]

    @property
    def first(self) -> int:
        """The first leaf this tree holds (0, or the size of the compact range it began as)."""
        return self._first

    @classmethod
    def of_entries(cls, entry_hashes: Iterable[str]) -> Tree:
        """The tree over chain entries, by their personaxis hashes."""
        return cls(entry_leaf(h) for h in entry_hashes)

    @property
    def size(self) -> int:
        """How many leaves the tree has."""
        return self._first + len(self._leaves)

    def leaf(self, index: int) -> bytes:
        """The leaf hash at ``index`` (0-based)."""
        if index < self._first:
            raise ValueError(f"the tree holds its leaves from {self._first} on, not {index}")
        return self._leaves[index - self._first]

    def append(self, leaf: bytes) -> None:
        """Add a leaf hash at the end."""
        self._leaves.append(leaf)

    def root(self, size: int | None = None) -> bytes:
        """MTH of the first ``size`` leaves (default: all of them)."""
        n = self._size(size)
        return EMPTY_ROOT if n == 0 else self._hash(0, n)

    def inclusion(self, index: int, size: int | None = None) -> list[bytes]:
        """The audit path of leaf ``index`` in the tree of the first ``size`` leaves."""
        n = self._size(size)
        if not 0 <= index < n:
            raise ValueError(f"leaf {index} is not in a tree of {n} leaves")
        return self._path(index, 0, n)

    def consistency(self, old_size: int, size: int | None = None) -> list[bytes]:
        """The proof that the tree of ``old_size`` leaves is a prefix of the one of ``size``.

        Empty when ``old_size`` is 0 or equals ``size`` (there is nothing to prove).
        """
        n = self._size(size)
        if not 0 <= old_size <= n:
            raise ValueError(f"a tree of {old_size} leaves cannot precede one of {n}")
        if old_size in (0, n):
            return []
        return self._subproof(old_size, 0, n, True)

    # -- the RFC's recursions over [lo, hi) ------------------------------------------------

    def _size(self, size: int | None) -> int:
        n = self.size if size is None else size
        if not 0 <= n <= self.size:
            raise ValueError(f"the tree has {self.size} leaves, not {n}")
        return n

    def _hash(self, lo: int, hi: int) -> bytes:
        width = hi - lo
        complete = width & (width - 1) == 0
        if complete and (lo, hi) in self._complete:
            return self._complete[lo, hi]
        if width == 1:
            if lo < self._first:
                raise ValueError(
                    f"the tree keeps only the compact range of its first {self._first} leaves"
                )
            return self._leaves[lo - self._first]
        k = _split(width)
        value = node_hash(self._hash(lo, lo + k), self._hash(lo + k, hi))
        if complete:
            self._complete[lo, hi] = value
        return value

    def _path(self, m: int, lo: int, hi: int) -> list[bytes]:
        if hi - lo == 1:
            return []
        k = _split(hi - lo)
        if m < lo + k:
            return [*self._path(m, lo, lo + k), self._hash(lo + k, hi)]
        return [*self._path(m, lo + k, hi), self._hash(lo, lo + k)]

    def _subproof(self, m: int, lo: int, hi: int, whole: bool) -> list[bytes]:
        if m == hi:
            return [] if whole else [self._hash(lo, hi)]
        k = _split(hi - lo)
        if m <= lo + k:
            return [*self._subproof(m, lo, lo + k, whole), self._hash(lo + k, hi)]
        return [*self._subproof(m, lo + k, hi, False), self._hash(lo, lo + k)]


def _decomposition(size: int) -> list[tuple[int, int]]:
    """The aligned power-of-two spans that make up ``[0, size)``, largest first."""
    spans, lo = [], 0
    for bit in reversed(range(size.bit_length())):
        if size >> bit & 1:
            spans.append((lo, lo + (1 << bit)))
            lo += 1 << bit
    return spans


def _well_formed(hashes: Sequence[bytes]) -> bool:
    return all(isinstance(h, bytes) and len(h) == HASH_SIZE for h in hashes)


def _climb(fn: int, sn: int) -> tuple[int, int]:
    """RFC 9162's step after a left sibling: while ``fn`` is even and not 0, shift both right
    (up past the levels where the node was a right-edge node with no sibling)."""
    while not fn & 1 and fn != 0:
        fn >>= 1
        sn >>= 1
    return fn, sn


def verify_inclusion(
    leaf: bytes, index: int, size: int, proof: Sequence[bytes], root: bytes
) -> bool:
    """True when ``proof`` shows leaf hash ``leaf`` at ``index`` in the tree ``(size, root)``."""
    if not 0 <= index < size or not _well_formed([leaf, root, *proof]):
        return False
    fn, sn, r = index, size - 1, leaf
    for p in proof:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            fn, sn = _climb(fn, sn)
        else:
            r = node_hash(r, p)
        fn >>= 1
        sn >>= 1
    return sn == 0 and r == root


def verify_consistency(
    old_size: int, size: int, old_root: bytes, root: bytes, proof: Sequence[bytes]
) -> bool:
    """True when ``proof`` shows the tree ``(old_size, old_root)`` is a prefix of ``(size, root)``.

    A tree is consistent with itself (same size, same root, empty proof), and the empty tree
    with any tree (empty proof).
    """
    if not 0 <= old_size <= size or not _well_formed([old_root, root, *proof]):
        return False
    if old_size == size:
        return not proof and old_root == root
    if old_size == 0:
        return not proof
    if not proof:
        return False
    path = list(proof)
    if old_size & (old_size - 1) == 0:  # a power of two: the old root is a node of the proof
        path.insert(0, old_root)
    fn, sn = old_size - 1, size - 1
    while fn & 1:
        fn >>= 1
        sn >>= 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            fr = node_hash(c, fr)
            sr = node_hash(c, sr)
            fn, sn = _climb(fn, sn)
        else:
            sr = node_hash(sr, c)
        fn >>= 1
        sn >>= 1
    return fr == old_root and sr == root and sn == 0
