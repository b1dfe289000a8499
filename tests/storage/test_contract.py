"""The storage contract: every backend passes the same tests (SQLite and PostgreSQL).

Each test takes ``any_store``, which is parametrised over both backends, so a behaviour
the embedded store has and the server store lacks fails here.
"""

from __future__ import annotations

import contextlib
import threading
from dataclasses import replace

import pytest

from tests import backends
from tests.backends import stored_files
from tests.conftest import StepClock, vector_facade
from troth.config import load_policy
from troth.core.chain import REDACTED_MARKER, Entry, make_entry, redact_entry, verify
from troth.core.checkpoints import StoredReply
from troth.core.errors import InvalidInputError, StaleTipError, StorageError
from troth.core.events import UNMATCHED_REDACTION, Record, verify_records
from troth.core.query import Term
from troth.core.records import MemoryRecord
from troth.embedding import HashingEmbedder
from troth.service.memory import Memory
from troth.service.recall import fts_match
from troth.storage.base import MemoryFilter, Store, Tip, Transaction

ALICE, BOB = "human:alice", "human:bob"


def facade(store: Store) -> Memory:
    return Memory(store, policy=load_policy(None), principal=ALICE, clock=StepClock())


def append_plain(
    store: Store, owner: str, content: str, texts: dict[str, str] | None = None
) -> int:
    with store.write(owner) as tx:
        seq = tx.tip().length
        append_on(tx, content, texts, tags=("note",))
        return seq


def append_on(
    tx: Transaction,
    content: str,
    texts: dict[str, str] | None = None,
    *,
    tags: tuple[str, ...] = (),
) -> Entry:
    """Append a plain entry on the transaction's tip; returns it."""
    entry = make_entry(
        ts="2026-11-29T10:00:00.000Z", content=content, source="user", tags=tags,
        prev_hash=tx.tip().head,
    )  # fmt: skip
    tx.append(entry, None, texts or {})
    return entry


def test_an_unknown_owner_has_an_empty_chain(any_store: Store) -> None:
    assert any_store.tip("human:nobody") == Tip(0, "")
    assert list(any_store.records("human:nobody")) == []
    assert any_store.owners() == []


def test_appended_rows_come_back_verbatim_in_chain_order(any_store: Store) -> None:
    with any_store.write(ALICE) as tx:
        first = make_entry(
            ts="2026-11-29T10:00:00.000Z", content="héllo ✓", source="user", tags=("a", "b"),
            prev_hash="",
        )  # fmt: skip
        assert tx.append(first, '{"v":1}', {"reason": "why ✓"}) == 0
        second = make_entry(
            ts="2026-11-29T10:00:00.001Z",
            content="two",
            source="tool",
            tags=(),
            prev_hash=first.hash,
        )
        assert tx.append(second, None, {}) == 1
        assert tx.tip() == Tip(2, second.hash)
    assert any_store.tip(ALICE) == Tip(2, second.hash)
    rows = list(any_store.records(ALICE))
    assert rows == [Record(0, first, '{"v":1}', {"reason": "why ✓"}), Record(1, second, None, {})]
    assert [r.seq for r in any_store.records(ALICE, 1)] == [1]
    assert any_store.owners() == [ALICE]


def test_a_write_that_raises_leaves_nothing_behind(any_store: Store) -> None:
    append_plain(any_store, ALICE, "kept")
    before = any_store.tip(ALICE)
    entry = make_entry(
        ts="2026-11-29T10:00:00.000Z", content="lost", source="user", tags=(), prev_hash=before.head
    )

    def failing_write(owner: str) -> None:
        with any_store.write(owner) as tx:
            if owner == ALICE:
                tx.append(entry, None, {})
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        failing_write(ALICE)
    assert any_store.tip(ALICE) == before
    assert [r.entry.content for r in any_store.records(ALICE)] == ["kept"]
    with pytest.raises(RuntimeError):
        failing_write(BOB)
    assert any_store.owners() == [ALICE]


def test_verification_continues_incrementally_from_a_known_head(any_store: Store) -> None:
    for i in range(5):
        append_plain(any_store, ALICE, f"row {i}")
    whole = verify_records(any_store.records(ALICE))
    assert whole.ok
    assert whole.length == 5
    rows = list(any_store.records(ALICE))
    tail = verify_records(any_store.records(ALICE, 3), start_index=3, prev_hash=rows[2].entry.hash)
    assert tail.ok
    assert tail.head == whole.head


def test_concurrent_appends_from_threads_keep_one_linear_chain(any_store: Store) -> None:
    errors: list[BaseException] = []

    def worker(n: int) -> None:
        try:
            for i in range(8):
                append_plain(any_store, ALICE, f"thread {n} row {i}")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors
    result = verify_records(any_store.records(ALICE))
    assert result.ok
    assert result.length == 32
    assert any_store.tip(ALICE) == Tip(32, result.head)


def test_reads_in_a_snapshot_do_not_see_a_commit_made_meanwhile(any_store: Store) -> None:
    append_plain(any_store, ALICE, "before")
    with any_store.snapshot():
        before = any_store.tip(ALICE)
        other = threading.Thread(target=append_plain, args=(any_store, ALICE, "meanwhile"))
        other.start()
        other.join(timeout=60)
        assert not other.is_alive()
        assert any_store.tip(ALICE) == before
        assert len(list(any_store.records(ALICE))) == 1
    assert any_store.tip(ALICE).length == 2
    with any_store.write(ALICE) as tx, any_store.snapshot():  # inside a write: the write's view
        append_on(tx, "in the write")
    assert any_store.tip(ALICE).length == 3


def test_projection_lists_counts_and_filters(any_store: Store) -> None:
    memory = facade(any_store)
    a = memory.remember("I like green tea", kind="preference", tags=["drinks"])
    b = memory.remember("Project alpha ships in May", scope="project:alpha", partition="work")
    c = memory.remember("My blood type is O", topic="health")
    memory.forget(a.id)
    everything = any_store.memories(ALICE, MemoryFilter())
    by_seq = sorted(any_store.projection(ALICE).values(), key=lambda m: (m.seq, m.id))
    assert [m.id for m in everything] == [m.id for m in reversed(by_seq)]
    assert any_store.count(ALICE, MemoryFilter()) == 3
    assert any_store.count(ALICE, MemoryFilter(statuses=("forgotten",))) == 1
    assert [m.id for m in any_store.memories(ALICE, MemoryFilter(kinds=("preference",)))] == [a.id]
    assert [m.id for m in any_store.memories(ALICE, MemoryFilter(scope="project:alpha"))] == [b.id]
    assert [m.id for m in any_store.memories(ALICE, MemoryFilter(partition="work"))] == [b.id]
    assert [m.id for m in any_store.memories(ALICE, MemoryFilter(tags=("drinks",)))] == [a.id]
    retrievable = any_store.memories(ALICE, MemoryFilter(retrievable_only=True))
    assert c.status == "proposed"  # health asks first
    assert [m.id for m in retrievable] == [b.id]
    no_sensitive = any_store.memories(ALICE, MemoryFilter(include_sensitive=False))
    assert c.id not in {m.id for m in no_sensitive}
    page = any_store.memories(ALICE, MemoryFilter(limit=1, offset=1))
    assert [m.id for m in page] == [everything[1].id]
    got = any_store.get(ALICE, b.id)
    assert got is not None
    assert got.to_dict() == any_store.projection(ALICE)[b.id].to_dict()


def test_replace_projection_swaps_rows_and_index(any_store: Store) -> None:
    memory = facade(any_store)
    kept = memory.remember("The cat is called Miso")
    dropped = memory.remember("The dog is called Pixel")
    projection = any_store.projection(ALICE)
    any_store.replace_projection(ALICE, {kept.id: projection[kept.id]})
    assert set(any_store.projection(ALICE)) == {kept.id}
    assert any_store.get(ALICE, dropped.id) is None
    match = fts_match("pixel miso")
    assert match is not None
    hits = any_store.lexical(ALICE, match, 10, MemoryFilter())
    assert [h.memory_id for h in hits] == [kept.id]


def test_lexical_search_ranks_matches_and_honours_filters(any_store: Store) -> None:
    memory = facade(any_store)
    tea = memory.remember("I drink green tea every morning", tags=["drinks"])
    coffee = memory.remember("Coffee gives me headaches", tags=["drinks"])
    memory.remember("Project alpha ships in May", scope="project:alpha")
    both = memory.remember("Tea or coffee, tea wins", kind="preference")

    def ids(text: str, flt: MemoryFilter | None = None) -> list[str]:
        match = fts_match(text)
        assert match is not None
        return [h.memory_id for h in any_store.lexical(ALICE, match, 10, flt or MemoryFilter())]

    assert set(ids("tea")) == {tea.id, both.id}
    assert ids("tea")[0] == both.id  # two occurrences outrank one
    assert set(ids("tea coffee")) == {tea.id, coffee.id, both.id}
    assert ids("tea", MemoryFilter(kinds=("preference",))) == [both.id]
    assert set(ids("coffee", MemoryFilter(tags=("drinks",)))) == {coffee.id}
    assert ids("zebra") == []
    assert ids('"quoted" AND NEAR(x) * tea') != []  # no syntax reaches the engine
    hits = any_store.lexical(ALICE, fts_match("tea") or (), 1, MemoryFilter())
    assert len(hits) == 1
    assert hits[0].rank == 1
    assert hits[0].score > 0


def test_owners_are_isolated(any_store: Store) -> None:
    memory = facade(any_store)
    mine = memory.remember("Alice likes tea")
    theirs = memory.remember("Bob likes tea", owner=BOB, actor=BOB)
    assert any_store.owners() == [ALICE, BOB]
    assert any_store.get(ALICE, theirs.id) is None
    assert [m.id for m in any_store.memories(BOB, MemoryFilter())] == [theirs.id]
    match = fts_match("tea")
    assert match is not None
    assert [h.memory_id for h in any_store.lexical(ALICE, match, 10, MemoryFilter())] == [mine.id]
    assert any_store.locate(theirs.id) == BOB
    assert any_store.locate("m_nope") is None
    assert any_store.tip(ALICE).length == 1
    assert any_store.tip(BOB).length == 1


def test_erased_text_is_in_no_file_of_the_store_after_compact(any_store: Store) -> None:
    canary = "zqxcanary7f3a91"
    memory = facade(any_store)
    long_text = f"secret {canary} " + " ".join(f"filler{i}" for i in range(300))
    result = memory.remember(long_text[:2000], reason=f"because {canary}", title=f"t {canary}")
    for i in range(20):
        memory.remember(f"an unrelated memory number {i}")
    memory.redact(result.id, reason="erasure request")
    any_store.compact()
    for path in stored_files(any_store):
        assert canary.encode() not in path.read_bytes(), path
    assert all(report.ok for report in memory.verify())
    match = fts_match(canary)
    assert match is not None
    assert any_store.lexical(ALICE, match, 10, MemoryFilter()) == []


def test_erase_rewrites_only_the_content_and_texts(any_store: Store) -> None:
    seq = append_plain(any_store, ALICE, "to be erased", {"reason": "private"})
    record = next(any_store.records(ALICE))
    with any_store.write(ALICE) as tx:
        tx.erase(seq, redact_entry(record.entry), {"reason": REDACTED_MARKER})
    after = next(any_store.records(ALICE))
    assert after.entry.content == REDACTED_MARKER
    assert after.entry.redacted
    assert after.entry.hash == record.entry.hash
    assert after.texts == {"reason": REDACTED_MARKER}
    assert verify(r.entry for r in any_store.records(ALICE)).ok


def test_checkpoint_replies_are_kept_per_owner(any_store: Store) -> None:
    reply = StoredReply(ALICE, "msg-1", "sum", b"\x00{}")
    with any_store.write(ALICE) as tx:
        assert tx.find_reply("msg-1") is None
        tx.save_reply(reply)
    with any_store.write(ALICE) as tx:
        assert tx.find_reply("msg-1") == reply
    with any_store.write(BOB) as tx:
        assert tx.find_reply("msg-1") is None


def test_tokens_are_kept_listed_and_revoked(any_store: Store) -> None:
    from troth.core.access import TokenRecord

    first = TokenRecord("tok_a", "h" * 64, ALICE, ("memory:read",), "2026-11-29T10:00:00.000Z")
    second = TokenRecord(
        "tok_b", "g" * 64, "agent:helper", ("memory:write", "memory:read"),
        "2026-11-29T10:00:01.000Z", on_behalf_of=ALICE, label="helper",
    )  # fmt: skip
    any_store.put_token(first)
    any_store.put_token(second)
    assert any_store.token("tok_b") == second
    assert any_store.token("tok_nope") is None
    assert any_store.tokens() == [first, second]
    assert any_store.tokens(ALICE) == [first]
    assert any_store.revoke_token("tok_a", "2026-11-29T11:00:00.000Z")
    assert not any_store.revoke_token("tok_a", "2026-11-29T12:00:00.000Z")
    revoked = any_store.token("tok_a")
    assert revoked is not None
    assert revoked.revoked_at == "2026-11-29T11:00:00.000Z"


def test_vector_search_finds_the_nearest_and_honours_filters(any_store: Store) -> None:
    memory = vector_facade(any_store)
    tea = memory.remember("green tea in the morning", kind="preference")
    dog = memory.remember("the dog is called Pixel")
    assert any_store.vector_model() == ("hashing-64", 64)
    query = HashingEmbedder().embed(["green tea in the morning"])[0]
    hits = any_store.vector(ALICE, query, 10, MemoryFilter(retrievable_only=True))
    assert [h.memory_id for h in hits][:1] == [tea.id]
    assert hits[0].rank == 1
    assert hits[0].score == pytest.approx(1.0, abs=1e-4)
    assert {h.memory_id for h in hits} == {tea.id, dog.id}
    only = any_store.vector(ALICE, query, 10, MemoryFilter(kinds=("fact",)))
    assert [h.memory_id for h in only] == [dog.id]
    rows = any_store.recall_rows(ALICE, [tea.id, "m_missing"])
    assert set(rows) == {tea.id}
    assert rows[tea.id].text == "green tea in the morning"
    assert rows[tea.id].seq == 0


def test_the_vector_row_disappears_on_forget_and_redact(any_store: Store) -> None:
    memory = vector_facade(any_store)
    forgotten = memory.remember("zebra one")
    redacted = memory.remember("zebra two")
    kept = memory.remember("zebra three")
    assert any_store.vector_ids(ALICE) == {forgotten.id, redacted.id, kept.id}
    memory.forget(forgotten.id)
    memory.redact(redacted.id, reason="erase it")
    assert any_store.vector_ids(ALICE) == {kept.id}
    query = HashingEmbedder().embed(["zebra two"])[0]
    assert [h.memory_id for h in any_store.vector(ALICE, query, 10, MemoryFilter())] == [kept.id]


def test_vector_search_keeps_owners_apart(any_store: Store) -> None:
    memory = vector_facade(any_store)
    mine = memory.remember("Alice likes tea")
    theirs = memory.remember("Bob likes tea", owner=BOB, actor=BOB)
    query = HashingEmbedder().embed(["likes tea"])[0]
    assert [h.memory_id for h in any_store.vector(ALICE, query, 10, MemoryFilter())] == [mine.id]
    assert [h.memory_id for h in any_store.vector(BOB, query, 10, MemoryFilter())] == [theirs.id]
    assert any_store.vector_ids(BOB) == {theirs.id}
    assert any_store.recall_rows(ALICE, [theirs.id]) == {}


def test_a_new_vector_model_drops_every_vector(any_store: Store) -> None:
    memory = vector_facade(any_store)
    memory.remember("the cat is called Miso")
    any_store.set_vector_model("other", 32)
    assert any_store.vector_model() == ("other", 32)
    assert any_store.vector_ids(ALICE) == set()


def test_reads_inside_a_write_see_the_rows_it_wrote(any_store: Store) -> None:
    # PostgreSQL buffers a write's rows and sends them in bulk: what the transaction reads
    # back (tip, records, get) must still be what it wrote, and all of it must commit.
    memory = vector_facade(any_store)
    made = memory.remember("zebra crossing at noon")
    stored = any_store.get(ALICE, made.id)
    assert stored is not None
    start = any_store.tip(ALICE)
    entry = make_entry(
        ts="2026-11-29T10:00:00.000Z", content="touch", source="user", tags=(), prev_hash=start.head
    )
    changed = replace(stored, updated_at="2026-11-29T10:00:00.000Z", seq=start.length)
    with any_store.write(ALICE) as tx:
        assert tx.append(entry, None, {"reason": "why"}) == start.length
        assert tx.tip() == Tip(start.length + 1, entry.hash)
        tx.put(changed)  # same text, no new vector: the stored one is kept
        assert tx.get(made.id) == changed
        assert [r.entry for r in tx.records(start.length)] == [entry]
        tx.put(changed)
        assert tx.get(made.id) == changed
        redacted = redact_entry(entry)
        tx.erase(start.length, redacted, {})
        assert [r.entry for r in tx.records(start.length)] == [redacted]
    assert any_store.tip(ALICE) == Tip(start.length + 1, entry.hash)
    assert any_store.get(ALICE, made.id) == changed
    assert any_store.vector_ids(ALICE) == {made.id}
    # Every row committed, each verifying; the last was erased here with no redact event,
    # which whole-chain verification reports (docs/ledger.md, section 13).
    result = verify_records(any_store.records(ALICE))
    assert result.length == start.length + 1
    assert (result.broken_at, result.reason) == (start.length, UNMATCHED_REDACTION)
    assert verify_records(
        any_store.records(ALICE, 1), start_index=1, prev_hash=made.memory.entry_hash
    ).ok


def test_a_bulk_load_keeps_reads_and_writes_correct_and_ends_with_an_index(
    any_store: Store,
) -> None:
    memory = vector_facade(any_store)
    before = memory.remember("the kettle whistles at seven")
    with memory.bulk_load():
        loaded = memory.remember_many([f"bulk note {i} about zebras" for i in range(40)])
        # Inside the span searches are exact, so they find what was just written.
        query = HashingEmbedder().embed(["bulk note 7 about zebras"])[0]
        inside = any_store.vector(ALICE, query, 3, MemoryFilter(retrievable_only=True))
        assert inside[0].memory_id == loaded[7].memory.id
    after = any_store.vector(ALICE, query, 50, MemoryFilter(retrievable_only=True))
    assert after[0].memory_id == loaded[7].memory.id
    assert {h.memory_id for h in after} == {before.id, *(r.memory.id for r in loaded)}
    assert verify_records(any_store.records(ALICE)).ok


def test_a_failed_bulk_load_still_rebuilds_what_it_deferred(any_store: Store) -> None:
    memory = vector_facade(any_store)
    memory.remember("zebra crossing")
    head = any_store.tip(ALICE)
    with pytest.raises(InvalidInputError), memory.bulk_load():
        memory.remember_many(["fine", ""])  # the empty item fails the whole batch
    assert any_store.tip(ALICE) == head
    query = HashingEmbedder().embed(["zebra crossing"])[0]
    assert len(any_store.vector(ALICE, query, 5, MemoryFilter())) == 1


def test_a_write_the_database_refuses_leaves_the_chain_and_the_next_write_works(
    any_store: Store,
) -> None:
    memory = vector_facade(any_store)
    kept = memory.remember("the kettle whistles")
    before = any_store.tip(ALICE)
    entry = make_entry(
        ts="2026-11-29T10:00:00.000Z", content="lost", source="user", tags=(), prev_hash=before.head
    )
    stored = any_store.get(ALICE, kept.id)
    assert stored is not None

    def refused_write() -> None:
        with any_store.write(ALICE) as tx:
            tx.append(entry, None, {})
            tx.put(stored, [0.5] * 3)  # a vector of the wrong dimension: refused on commit

    with pytest.raises((StorageError, InvalidInputError)):
        refused_write()
    assert any_store.tip(ALICE) == before
    assert any_store.vector_ids(ALICE) == {kept.id}
    after = memory.remember("the next write lands")
    assert any_store.tip(ALICE).length == before.length + 1
    assert verify_records(any_store.records(ALICE)).ok
    assert any_store.get(ALICE, after.id) is not None


def test_a_read_that_opens_its_own_transaction_inside_a_write_does_not_commit_it(
    any_store: Store,
) -> None:
    memory = vector_facade(any_store)
    memory.remember("the kettle whistles")
    before = any_store.tip(ALICE)
    entry = make_entry(
        ts="2026-11-29T10:00:00.000Z", content="lost", source="user", tags=(), prev_hash=before.head
    )
    query = HashingEmbedder().embed(["kettle"])[0]

    def failing_write() -> None:
        with any_store.write(ALICE) as tx:
            tx.append(entry, None, {})
            assert len(list(tx.records(0))) == before.length + 1
            # PostgreSQL's vector search runs in a transaction of its own (SET LOCAL).
            assert any_store.vector(ALICE, query, 5, MemoryFilter())
            raise InvalidInputError("refused after reading")

    with pytest.raises(InvalidInputError):
        failing_write()
    assert any_store.tip(ALICE) == before
    assert verify_records(any_store.records(ALICE)).ok


def test_dropping_no_checkpoint_reply_reports_none(any_store: Store) -> None:
    append_plain(any_store, ALICE, "kept")
    with any_store.write(ALICE) as tx:
        assert tx.drop_replies(b"nothing-matches-this") == 0


def _create(store: Store, expect: Tip | None, template: MemoryRecord, memory_id: str) -> Entry:
    """One entry creating one memory under a minted id, as ``remember`` writes it."""
    with store.write(ALICE, expect) as tx:
        seq = tx.tip().length
        entry = append_on(tx, memory_id)
        tx.put(replace(template, id=memory_id, seq=seq), new=True)
    return entry


def test_a_write_on_the_expected_tip_commits_and_one_on_a_moved_tip_writes_nothing(
    any_store: Store,
) -> None:
    memory = vector_facade(any_store)
    template = any_store.get(ALICE, memory.remember("the kettle whistles").id)
    assert template is not None
    seen = any_store.tip(ALICE)
    entry = _create(any_store, seen, template, "m_000000000000000000001")
    moved = Tip(seen.length + 1, entry.hash)
    assert any_store.tip(ALICE) == moved
    assert any_store.get(ALICE, "m_000000000000000000001") is not None
    # The same tip again is stale now: the one-statement write and a multi-row one alike.
    with pytest.raises(StaleTipError):
        _create(any_store, seen, template, "m_000000000000000000002")

    def two_entries() -> None:
        with any_store.write(ALICE, seen) as tx:
            for n in range(2):
                append_on(tx, f"lost {n}")

    with pytest.raises(StaleTipError):
        two_entries()

    def read_first() -> None:
        with any_store.write(ALICE, seen) as tx:
            tx.get(template.id)  # a read needs the real tip first

    with pytest.raises(StaleTipError):
        read_first()
    assert any_store.tip(ALICE) == moved
    assert any_store.get(ALICE, "m_000000000000000000002") is None
    assert verify_records(any_store.records(ALICE)).ok

    # A caller that catches the error cannot go on to commit on the old tip.
    def caught_then_appended() -> None:
        with any_store.write(ALICE, seen) as tx:
            with contextlib.suppress(StaleTipError):
                tx.get(template.id)
            append_on(tx, "on the old head")

    with pytest.raises(StaleTipError):
        caught_then_appended()
    assert any_store.tip(ALICE) == moved
    # On the current tip a write may read, and then commits as usual.
    with any_store.write(ALICE, moved) as tx:
        assert tx.get(template.id) == template
    _create(any_store, moved, template, "m_000000000000000000003")
    assert any_store.tip(ALICE).length == moved.length + 1
    assert verify_records(any_store.records(ALICE)).ok


def test_a_minted_id_that_is_already_taken_fails_the_write(any_store: Store) -> None:
    memory = vector_facade(any_store)
    made = memory.remember("the kettle whistles")
    template = any_store.get(ALICE, made.id)
    assert template is not None
    before = any_store.tip(ALICE)
    for expect in (before, None):
        with pytest.raises(StorageError, match=r"already taken|duplicate key"):
            _create(any_store, expect, replace(template, content="other"), made.id)
        assert any_store.tip(ALICE) == before
        assert any_store.get(ALICE, made.id) == template
    assert verify_records(any_store.records(ALICE)).ok


def test_get_many_reads_one_owners_memories_by_id(any_store: Store) -> None:
    memory = vector_facade(any_store)
    tea = memory.remember("green tea in the morning")
    dog = memory.remember("the dog is called Pixel")
    theirs = memory.remember("Bob likes tea", owner=BOB, actor=BOB)
    found = any_store.get_many(ALICE, [dog.id, tea.id, "m_missing", theirs.id, tea.id])
    assert found == {tea.id: any_store.get(ALICE, tea.id), dog.id: any_store.get(ALICE, dog.id)}
    assert found[tea.id].content == "green tea in the morning"
    assert any_store.get_many(ALICE, []) == {}
    assert set(any_store.get_many(BOB, [theirs.id, tea.id])) == {theirs.id}


def test_a_projection_column_changed_behind_the_ledger_is_named_by_verify(
    any_store: Store,
) -> None:
    # A forgotten memory whose indexed columns were set back to active and retrievable
    # would be listed and recalled again: both backends must name the column.
    memory = facade(any_store)
    made = memory.remember("I owe Bob 10 euros")
    memory.forget(made.id, reason="paid")
    true = "true" if backends.is_postgres(any_store) else "1"
    backends.execute(
        any_store,
        f"UPDATE memories SET status = 'active', retrievable = {true} WHERE id = ?",
        (made.id,),
    )
    [report] = memory.verify()
    assert report.chain.ok
    assert not report.ok
    assert report.mismatch is not None
    assert report.mismatch["memory"] == made.id
    assert report.mismatch["field"] in ("status", "retrievable")


def test_lexical_terms_match_as_words_or_prefixes_and_never_as_syntax(any_store: Store) -> None:
    memory = facade(any_store)
    harbour = memory.remember("a lighthouse by the harbour")
    harness = memory.remember("the harness broke")

    def ids(*terms: Term) -> set[str]:
        return {h.memory_id for h in any_store.lexical(ALICE, terms, 10, MemoryFilter())}

    assert ids(Term("harbour")) == {harbour.id}
    assert ids(Term("harb")) == set()
    assert ids(Term("harbo", prefix=True)) == {harbour.id}
    assert ids(Term("har", prefix=True)) == {harbour.id, harness.id}
    assert ids(Term("harbour"), Term("harness")) == {harbour.id, harness.id}
    for hostile in ('"', "'", "NEAR(a b)", "a OR b", "x*", "\\", "body:paint", "!", "&|"):
        assert ids(Term(hostile), Term("harbour")) == {harbour.id}, hostile
        assert ids(Term(hostile, prefix=True)) <= {harbour.id, harness.id}, hostile
    assert any_store.lexical(ALICE, (), 10, MemoryFilter()) == []


def test_memory_ids_are_unique_across_owners(any_store: Store) -> None:
    # An id is what an agent keeps and hands back: it names one memory in the whole store.
    memory = facade(any_store)
    mine = memory.remember("Alice likes tea")
    stored = any_store.get(ALICE, mine.id)
    assert stored is not None
    memory.remember("Bob likes coffee", owner=BOB, actor=BOB)
    before = any_store.tip(BOB)

    def take(new: bool, expect: Tip | None) -> None:
        with any_store.write(BOB, expect) as tx:
            seq = tx.tip().length
            append_on(tx, "a memory under a taken id")
            tx.put(replace(stored, owner=BOB, seq=seq, content="Bob's"), new=new)

    for new, expect in ((True, None), (False, None), (True, before), (False, before)):
        with pytest.raises(StorageError, match="already taken"):
            take(new, expect)
        assert any_store.tip(BOB) == before
        assert any_store.get(ALICE, mine.id) == stored
        assert any_store.get(BOB, mine.id) is None
        assert any_store.locate(mine.id) == ALICE
    with pytest.raises(InvalidInputError, match="belongs to"), any_store.write(ALICE) as tx:
        tx.put(replace(stored, owner=BOB))
    assert all(report.ok for report in memory.verify())


def test_listings_and_owners_come_in_one_order_on_every_backend(any_store: Store) -> None:
    memory = facade(any_store)
    for owner in ("human:zoe", "human:Bob", "human:alice", "human:_al", "human:0"):
        memory.remember(f"note of {owner}", owner=owner, actor=owner)
    assert any_store.owners() == sorted(
        ["human:zoe", "human:Bob", "human:alice", "human:_al", "human:0"],
        key=lambda owner: owner.encode(),
    )
    # One entry changing several memories gives them one seq: they follow by id, descending.
    made = [memory.remember(f"note {i}").id for i in range(4)]
    template = any_store.get(ALICE, made[0])
    assert template is not None
    ids = ["m_b", "m_A", "m_a", "m_B"]
    with any_store.write(ALICE) as tx:
        seq = tx.tip().length
        append_on(tx, "several at once")
        for memory_id in ids:
            tx.put(replace(template, id=memory_id, seq=seq), new=True)
    listed = [m.id for m in any_store.memories(ALICE, MemoryFilter())]
    assert listed[:4] == sorted(ids, reverse=True)  # bytewise: lower case after upper
    assert listed[4:8] == list(reversed(made))
    page = any_store.memories(ALICE, MemoryFilter(limit=3, offset=2))
    assert [m.id for m in page] == listed[2:5]
    assert any_store.count(ALICE, MemoryFilter()) == len(listed)
