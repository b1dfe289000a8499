"""The RFC 6962 Merkle log: the RFC's test vectors, properties over random trees, redaction."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from troth.core import chain, merkle

# The RFC 6962 test data that certificate-transparency and transparency-dev/merkle share:
# eight leaves, the root of every prefix, and known inclusion and consistency proofs.
LEAVES = [
    bytes.fromhex(h)
    for h in (
        "",
        "00",
        "10",
        "2021",
        "3031",
        "40414243",
        "5051525354555657",
        "606162636465666768696a6b6c6d6e6f",
    )
]
ROOTS = [
    bytes.fromhex(h)
    for h in (
        "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
        "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
        "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
        "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
        "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
        "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
        "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
        "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
    )
]
H = {
    "96a2": "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
    "5f08": "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
    "6b47": "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
    "bc1a": "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
    "ca85": "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
    "d37e": "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    "fac5": "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
    "6e34": "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
    "0ebc": "0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
    "b086": "b08693ec2e721597130641e8211e7eedccb4c26413963eee6c1e2ed16ffb1a5f",
}
# (leaf index, tree size, proof)
INCLUSION = [
    (0, 8, ["96a2", "5f08", "6b47"]),
    (5, 8, ["bc1a", "ca85", "d37e"]),
    (2, 3, ["fac5"]),
    (1, 5, ["6e34", "5f08", "bc1a"]),
]
# (old size, new size, proof)
CONSISTENCY = [
    (1, 8, ["96a2", "5f08", "6b47"]),
    (6, 8, ["0ebc", "ca85", "d37e"]),
    (2, 5, ["5f08", "bc1a"]),
    (6, 7, ["0ebc", "b086", "d37e"]),
]


def vector_tree() -> merkle.Tree:
    return merkle.Tree(merkle.leaf_hash(d) for d in LEAVES)


def proof(names: list[str]) -> list[bytes]:
    return [bytes.fromhex(H[n]) for n in names]


def test_roots_of_every_prefix_match_the_rfc_vectors() -> None:
    tree = vector_tree()
    assert tree.root(0) == merkle.EMPTY_ROOT == hashlib.sha256().digest()
    assert [tree.root(n) for n in range(1, 9)] == ROOTS


def test_inclusion_proofs_match_the_vectors_and_verify() -> None:
    tree = vector_tree()
    for index, size, names in INCLUSION:
        assert tree.inclusion(index, size) == proof(names)
        leaf = merkle.leaf_hash(LEAVES[index])
        assert merkle.verify_inclusion(leaf, index, size, proof(names), ROOTS[size - 1])
        assert not merkle.verify_inclusion(leaf, index ^ 1, size, proof(names), ROOTS[size - 1])
        assert not merkle.verify_inclusion(leaf, index, size, proof(names)[:-1], ROOTS[size - 1])


def test_consistency_proofs_match_the_vectors_and_verify() -> None:
    tree = vector_tree()
    for old, new, names in CONSISTENCY:
        assert tree.consistency(old, new) == proof(names)
        assert merkle.verify_consistency(old, new, ROOTS[old - 1], ROOTS[new - 1], proof(names))
        assert not merkle.verify_consistency(old, new, ROOTS[new - 1], ROOTS[old - 1], proof(names))
        assert not merkle.verify_consistency(old, new, ROOTS[old - 1], ROOTS[new - 1], [])


def test_trivial_consistency_holds_and_time_travel_does_not() -> None:
    root = ROOTS[0]
    assert merkle.verify_consistency(0, 0, merkle.EMPTY_ROOT, merkle.EMPTY_ROOT, [])
    assert merkle.verify_consistency(0, 5, merkle.EMPTY_ROOT, ROOTS[4], [])
    assert merkle.verify_consistency(1, 1, root, root, [])
    assert not merkle.verify_consistency(1, 1, root, ROOTS[1], [])
    assert not merkle.verify_consistency(2, 1, ROOTS[1], root, [])
    assert not merkle.verify_consistency(1, 1, root, root, [root])


def reference_root(leaves: list[bytes]) -> bytes:
    """MTH written straight from RFC 6962 §2.1, over slices."""
    if not leaves:
        return hashlib.sha256().digest()
    if len(leaves) == 1:
        return leaves[0]
    k = 1
    while k * 2 < len(leaves):
        k *= 2
    return merkle.node_hash(reference_root(leaves[:k]), reference_root(leaves[k:]))


trees = st.lists(st.binary(max_size=8), min_size=1, max_size=70).map(
    lambda data: [merkle.leaf_hash(d) for d in data]
)


@given(trees, st.data())
def test_every_inclusion_proof_verifies_and_a_changed_one_does_not(
    leaves: list[bytes], data: st.DataObject
) -> None:
    tree = merkle.Tree(leaves)
    size = data.draw(st.integers(1, len(leaves)))
    index = data.draw(st.integers(0, size - 1))
    root = tree.root(size)
    assert root == reference_root(leaves[:size])
    path = tree.inclusion(index, size)
    assert merkle.verify_inclusion(leaves[index], index, size, path, root)
    assert not merkle.verify_inclusion(merkle.leaf_hash(b"other"), index, size, path, root)
    if size > 1:
        assert not merkle.verify_inclusion(leaves[index], (index + 1) % size, size, path, root) or (
            leaves[(index + 1) % size] == leaves[index]
        )
    if path:
        at = data.draw(st.integers(0, len(path) - 1))
        bent = [*path]
        bent[at] = bytes([bent[at][0] ^ 1]) + bent[at][1:]
        assert not merkle.verify_inclusion(leaves[index], index, size, bent, root)
        assert not merkle.verify_inclusion(leaves[index], index, size, [*path, root], root)


@given(trees, st.data())
def test_every_consistency_proof_verifies_and_a_changed_one_does_not(
    leaves: list[bytes], data: st.DataObject
) -> None:
    tree = merkle.Tree(leaves)
    size = data.draw(st.integers(1, len(leaves)))
    old = data.draw(st.integers(0, size))
    path = tree.consistency(old, size)
    assert merkle.verify_consistency(old, size, tree.root(old), tree.root(size), path)
    if 0 < old < size:
        other = merkle.Tree([merkle.leaf_hash(b"forged"), *leaves[1:]])
        assert not merkle.verify_consistency(old, size, other.root(old), tree.root(size), path)
        at = data.draw(st.integers(0, len(path) - 1))
        bent = [*path]
        bent[at] = bytes([bent[at][0] ^ 16]) + bent[at][1:]
        assert not merkle.verify_consistency(old, size, tree.root(old), tree.root(size), bent)
        assert not merkle.verify_consistency(old, size, tree.root(old), tree.root(size), path[:-1])


def test_proofs_out_of_range_are_refused() -> None:
    tree = vector_tree()
    with pytest.raises(ValueError, match="not in a tree of 8"):
        tree.inclusion(8)
    with pytest.raises(ValueError, match="has 8 leaves, not 9"):
        tree.root(9)
    with pytest.raises(ValueError, match="cannot precede"):
        tree.consistency(5, 4)


def test_redaction_changes_no_leaf_root_or_proof() -> None:
    entries, prev = [], ""
    for i, text in enumerate(["the canary is 7731", "second", "third"]):
        entry = chain.make_entry(
            ts=f"2026-01-01T00:00:0{i}.000Z", content=text, source="user", tags=(), prev_hash=prev
        )
        entries.append(entry)
        prev = entry.hash
    before = merkle.Tree.of_entries(e.hash for e in entries)
    redacted = [chain.redact_entry(entries[0]), *entries[1:]]
    assert redacted[0].content == chain.REDACTED_MARKER
    assert chain.verify(redacted).ok
    after = merkle.Tree.of_entries(e.hash for e in redacted)
    assert after.root() == before.root()
    path = before.inclusion(0)
    assert merkle.verify_inclusion(merkle.entry_leaf(redacted[0].hash), 0, 3, path, after.root())
