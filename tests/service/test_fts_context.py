"""Context expansion: a memory is found by its conversation neighbours' words, and a
forgotten, redacted, hidden or sensitive memory's words find no neighbour (both backends).
"""

from __future__ import annotations

import re
from random import Random

import pytest

from tests.backends import connection, execute, files_holding
from troth.core.query import lexical_terms
from troth.service.drafts import Draft
from troth.service.memory import Memory
from troth.service.recall import Query
from troth.storage.base import MemoryFilter

# Words each held by one memory only: found in a neighbour only through its context.
CANARY = "zqxcontext-5d2e17"
WORD = "quetzalbeard"


def ids_found(memory: Memory, text: str) -> list[str]:
    """The ids recall returns for ``text``, every candidate ranked (no relevance floor)."""
    return [hit.memory.id for hit in memory.recall(Query(text, min_relevance=None))]


def turns(memory: Memory, texts: list[str], *, session: str = "s1", **fields: object) -> list[str]:
    """Write a conversation's turns in order; their ids."""
    draft = Draft(session=session)
    return [memory.remember(text, draft=draft, **fields).id for text in texts]  # type: ignore[arg-type]


def conversation(memory: Memory) -> list[str]:
    return turns(
        memory,
        [
            "Caroline: what do you call your new parrot?",
            f"Melanie: his name is {WORD}, he whistles all morning",
            "Caroline: that sounds like a lovely bird",
            "Melanie: the weather was grey on the coast",
        ],
    )


def test_a_reply_is_found_by_its_neighbours_words(any_memory: Memory) -> None:
    ask, reply, after, far = conversation(any_memory)
    found = ids_found(any_memory, WORD)
    # The turn that holds the word first, then both turns beside it (their context).
    assert found[0] == reply
    assert set(found[:3]) == {ask, reply, after}
    # A turn two away does not hold the word in its context.
    assert far not in lexical_ids(any_memory, WORD)


def test_words_do_not_cross_sessions(any_memory: Memory) -> None:
    ask, reply, after, _ = conversation(any_memory)
    other = turns(any_memory, ["Jon: another conversation"], session="s2")[0]
    assert lexical_ids(any_memory, WORD) == {ask, reply, after}
    assert lexical_ids(any_memory, "whistles") == {ask, reply, after}
    assert other not in lexical_ids(any_memory, "weather")


def lexical_ids(memory: Memory, word: str) -> set[str]:
    """Ids the lexical index alone finds for one word (vectors would find anything)."""
    owner = memory.principal
    hits = memory.store.lexical(owner, lexical_terms(word), 50, MemoryFilter())
    return {hit.memory_id for hit in hits}


def test_forget_rewrites_the_neighbours_rows_in_the_same_transaction(any_memory: Memory) -> None:
    ask, reply, after, _ = conversation(any_memory)
    assert lexical_ids(any_memory, WORD) == {ask, reply, after}
    any_memory.forget(reply, reason="not needed")
    assert lexical_ids(any_memory, WORD) == set()
    # The neighbours now lend each other their words instead.
    assert lexical_ids(any_memory, "parrot") >= {ask, after}


def test_a_redacted_turns_words_are_in_no_neighbour_and_no_file(any_memory: Memory) -> None:
    ask, reply, after, _ = turns(
        any_memory,
        [
            "Caroline: what is the code on the gate?",
            f"Melanie: it is {CANARY}, do not tell anyone",
            "Caroline: thanks, I wrote it down",
            "Melanie: see you on Sunday",
        ],
    )
    assert lexical_ids(any_memory, CANARY) == {ask, reply, after}
    assert files_holding(any_memory.store, CANARY)  # positive control
    any_memory.redact(reply, reason="erasure request")
    assert lexical_ids(any_memory, CANARY) == set()
    assert ids_found(any_memory, CANARY) == [] or reply not in ids_found(any_memory, CANARY)
    for needle in (CANARY, "zqxcontext", "5d2e17"):
        assert files_holding(any_memory.store, needle) == [], needle
    assert all(report.ok for report in any_memory.verify())


def test_hidden_and_sensitive_turns_lend_no_words(any_memory: Memory) -> None:
    _, reply, _, _ = conversation(any_memory)
    any_memory.hide(reply, note="off the record")
    # Only the hidden turn's own row holds its word (recall's filter leaves it out).
    assert lexical_ids(any_memory, WORD) == {reply}
    assert ids_found(any_memory, WORD) == [] or reply not in ids_found(any_memory, WORD)
    secret = turns(
        any_memory,
        ["Melanie: my diagnosis is zqxsecretword"],
        session="s1",
        sensitivity="sensitive",
    )[0]
    plain = turns(any_memory, ["Caroline: I am sorry to hear that"], session="s1")[0]
    found = lexical_ids(any_memory, "zqxsecretword")
    assert plain not in found
    assert found <= {secret}


def _index_instances(db: object) -> set[tuple[str, int, str]]:
    """(term, rowid, column) of every entry of SQLite's full-text index."""
    db.execute(  # type: ignore[attr-defined]
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.ctx_vocab"
        " USING fts5vocab(main, memory_fts, instance)"
    )
    rows = db.execute("SELECT term, doc, col FROM temp.ctx_vocab")  # type: ignore[attr-defined]
    return {(str(t), int(d), str(c)) for t, d, c in rows}


def some_writes(any_memory: Memory) -> None:
    """Writes in batches and one by one, across sessions, then forget, hide, redact and a
    sensitive turn."""
    random = Random(7)
    words = ["apple", "river", "stone", "cloud", "lamp", "violin", "garden", "copper"]
    items = [
        {"text": f"{random.choice(words)} {random.choice(words)} {i}", "session": f"s{i % 3}"}
        for i in range(30)
    ]
    ids = [r.id for r in any_memory.remember_many(items[:20])]  # type: ignore[arg-type]
    ids += [
        any_memory.remember(item["text"], draft=Draft(session=item["session"])).id
        for item in items[20:]
    ]
    turns(any_memory, ["a sensitive turn about lamp"], session="s1", sensitivity="sensitive")
    any_memory.forget(ids[4], reason="x")
    any_memory.hide(ids[9])
    any_memory.redact(ids[13], reason="x")
    any_memory.remember("no session at all, a river")


@pytest.mark.parametrize("backend", ["sqlite"])
def test_the_rows_written_write_by_write_equal_a_migration_backfill(any_memory: Memory) -> None:
    """The index after :func:`some_writes` equals the migration's back-fill of the rows."""
    from troth.storage.sqlite.context import backfill

    some_writes(any_memory)
    db = connection(any_memory.store)
    written = _index_instances(db)
    db.execute("BEGIN IMMEDIATE")
    db.execute("DELETE FROM memory_fts")
    backfill(db)
    filled = _index_instances(db)
    db.execute("ROLLBACK")
    assert written == filled
    assert {c for _, _, c in written} == {"body", "context"}


@pytest.mark.parametrize("backend", ["postgres"])
def test_the_vectors_written_write_by_write_equal_a_migration_backfill_on_postgres(
    any_memory: Memory,
) -> None:
    from troth.storage.postgres.context import ALL

    some_writes(any_memory)
    store = any_memory.store
    select = "SELECT id, body::text FROM memories ORDER BY id"
    written = execute(store, select).fetchall()
    assert any(re.search(r"\d+C\b", body) for _, body in written)  # a context lexeme
    db = connection(store)
    with db.transaction():
        db.execute(ALL)
        filled = execute(store, select).fetchall()
    assert written == filled
