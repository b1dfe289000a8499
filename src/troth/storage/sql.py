"""What both SQL stores do alike, with the few places their dialects differ as hooks.

Each store (``storage.sqlite``, ``storage.postgres``) keeps its own schema, write path and
search; this module holds what they share:

- :class:`SQLReads`, the base both stores extend: the reads answered with the same
  statements (tip, records, owners, get, locate, memories, count, vector model) and the
  bearer tokens;
- :class:`Dialect`, the hooks where they differ (placeholder, a list's encoding), and
  :class:`Filters`, a memory filter as a WHERE clause with the dialect's spellings;
- the ledger row's values and decoding, the checkpoint-reply statements, the projection's
  column-against-document check (:func:`checked_projection`), the recall fields by name;
- :class:`Connections` (one per thread) and :func:`migrations` (the numbered files).
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from importlib import resources
from typing import Any, Final, Generic, TypeVar

from troth.core.access import TokenRecord
from troth.core.chain import Entry, sha256_hex
from troth.core.checkpoints import StoredReply
from troth.core.errors import IntegrityError, InvalidInputError, StorageError
from troth.core.events import Record
from troth.core.records import MemoryRecord
from troth.storage import rows
from troth.storage.base import MemoryFilter, Tip
from troth.storage.erasure import Finisher
from troth.storage.rows import TOKEN_COLUMNS, fts_body, memory_from_doc, stored_json, token_record

C = TypeVar("C")

# Rows are read in bulk when a chain is verified; stored JSON has no surrounding blanks.
_decode = json.JSONDecoder().raw_decode

PROJECTION_COLUMNS = (
    "id", "owner", "status", "retrievable", "kind", "scope", "partition", "sensitivity",
    "seq", "updated_at",
)  # fmt: skip
"""The indexed columns of a projection row both stores keep beside the stored document."""


def held_value(memory: MemoryRecord, name: str) -> Any:
    """What the indexed column ``name`` must hold for this memory (its document's value).

    ``digest`` is the sha256 of the full-text body (PostgreSQL keeps it to tell a changed
    text from an unchanged one); ``tags`` a list, as the column returns it.
    """
    if name == "scope":
        return str(memory.scope)
    if name == "tags":
        return list(memory.tags)
    if name == "digest":
        return sha256_hex(fts_body(memory))
    return getattr(memory, name)


def checked_projection(
    rows: Iterable[Sequence[Any]], columns: Sequence[str]
) -> dict[str, MemoryRecord]:
    """The memories of projection rows ``(doc, *columns)``, each column held against its doc.

    Listings and searches filter on the columns and answer with the document; a column
    changed behind the ledger's back (``UPDATE memories SET status = 'active'`` on a
    forgotten memory) would list it as what it is not. The first column that disagrees
    raises an :class:`IntegrityError` naming the memory and the field, which ``verify``
    reports.
    """
    out: dict[str, MemoryRecord] = {}
    for row in rows:
        memory = memory_from_doc(row[0])
        for name, stored in zip(columns, row[1:], strict=True):
            # (SQLite's 0 and 1 equal False and True; any other number does not)
            held = held_value(memory, name)
            if held != stored:
                raise IntegrityError(
                    f"memory {memory.id}: the {name} column holds {stored!r} but the stored"
                    f" document {held!r}; run `troth rebuild`",
                    memory=memory.id,
                    field=name,
                    stored=stored,
                )
        out[memory.id] = memory
    return out


class Dialect:
    """How one SQL backend spells what both stores say alike: its placeholder, how a list
    of strings (a ledger row's tags, a token's scopes) is written and read back, and how a
    flag is bound (SQLite: ``int``; its driver binds a ``bool`` only after a failed adapter
    look-up, ~7,000 instructions a row).

    Statements here are written with ``?``; :meth:`sql` renders one in the dialect's style
    once, at import, so no statement is rewritten per call.
    """

    def __init__(
        self,
        placeholder: str,
        write_list: Callable[[Sequence[str]], Any],
        read_list: Callable[[Any], Sequence[str]],
        write_flag: Callable[[bool], Any] = bool,
    ) -> None:
        self.placeholder = placeholder
        self.write_list = write_list
        self.read_list = read_list
        self.write_flag = write_flag

    def sql(self, statement: str) -> str:
        """``statement`` (``?`` placeholders) in this dialect's placeholder style."""
        return statement if self.placeholder == "?" else statement.replace("?", self.placeholder)


# -- per-thread connections -------------------------------------------------------------


class Connections(Generic[C]):
    """One connection per thread, opened on first use and all closed together.

    A store's reads and writes run on the calling thread's connection: a server's many
    threads read at once, and a transaction never crosses threads.
    """

    def __init__(self, connect: Callable[[], C], is_usable: Callable[[C], bool]) -> None:
        self._connect = connect
        self._is_usable = is_usable
        self._local = threading.local()
        self._opened: list[C] = []
        self._lock = threading.Lock()

    @property
    def local(self) -> threading.local:
        """State of the calling thread (its connection, and what its store keeps there)."""
        return self._local

    def get(self) -> C:
        """The calling thread's connection, opened now if it has none (or a closed one)."""
        db: C | None = getattr(self._local, "db", None)
        if db is None or not self._is_usable(db):
            db = self._connect()
            self._local.db = db
            with self._lock:
                self._opened.append(db)
        return db

    def close(self, close: Callable[[C], None]) -> None:
        """Close every connection opened, on whichever thread; later calls open new ones."""
        with self._lock:
            for db in self._opened:
                close(db)
            self._opened.clear()
        self._local = threading.local()


# -- the ledger ------------------------------------------------------------------------

LEDGER_NAMES = (
    "owner", "seq", "ts", "content", "source", "tags", "content_hash", "prev_hash", "hash",
    "redacted", "meta", "texts",
)  # fmt: skip
"""The ledger's columns, in the order :func:`ledger_values` gives a row's values."""
LEDGER_COLUMNS = ", ".join(LEDGER_NAMES)
INSERT_LEDGER = f"INSERT INTO ledger ({LEDGER_COLUMNS}) VALUES ({', '.join('?' * 12)})"
SELECT_RECORDS = (
    "SELECT seq, ts, content, source, tags, content_hash, prev_hash, hash, redacted, meta,"
    " texts FROM ledger WHERE owner = ? AND seq >= ? ORDER BY seq"
)
SELECT_RECORDS_NAMING = (
    "SELECT seq, ts, content, source, tags, content_hash, prev_hash, hash, redacted, meta,"
    " texts FROM ledger WHERE owner = ? AND seq >= ? AND {contains} ORDER BY seq"
)
"""Rows whose metadata contains a text (``{contains}``: the dialect's substring test on
``meta``, with the third parameter), for :meth:`Transaction.records_naming`."""


def naming(memory_id: str) -> str:
    """What the metadata of a row naming ``memory_id`` contains: the id as a JSON string."""
    return json.dumps(memory_id)


ERASE_ROW = "UPDATE ledger SET content = ?, redacted = ?, texts = ? WHERE owner = ? AND seq = ?"
REWRITE_ROW = (
    "UPDATE ledger SET ts = ?, content = ?, source = ?, tags = ?, content_hash = ?,"
    " prev_hash = ?, hash = ?, redacted = ? WHERE owner = ? AND seq = ?"
)
SELECT_TIP = "SELECT length, head FROM heads WHERE owner = ?"
SELECT_DOC = "SELECT doc FROM memories WHERE owner = ? AND id = ?"
# Ids are unique across owners on both backends (docs/operations.md), so one row at most.
LOCATE = "SELECT owner FROM memories WHERE id = ?"


def stored_texts(texts: Mapping[str, str]) -> str | None:
    """A ledger row's ``texts`` column: the JSON object, or NULL for none."""
    return stored_json(dict(texts)) if texts else None


def ledger_values(
    owner: str,
    seq: int,
    entry: Entry,
    meta: str | None,
    texts: Mapping[str, str],
    dialect: Dialect,
) -> tuple[Any, ...]:
    """A ledger row's values in :data:`LEDGER_NAMES` order (``tags`` as its JSON text)."""
    return (
        owner,
        seq,
        entry.ts,
        entry.content,
        entry.source,
        stored_json(list(entry.tags)),
        entry.content_hash,
        entry.prev_hash,
        entry.hash,
        dialect.write_flag(entry.redacted),
        meta,
        stored_texts(texts),
    )


def check_holder(memory: MemoryRecord, holder: str) -> None:
    """Refuse to keep a memory of another owner than the one whose chain is held."""
    if memory.owner != holder:
        raise InvalidInputError(
            f"memory {memory.id} belongs to {memory.owner}, not {holder}", id=memory.id
        )


def erase_values(
    owner: str, seq: int, entry: Entry, texts: Mapping[str, str], dialect: Dialect
) -> tuple[Any, ...]:
    """The parameters of :data:`ERASE_ROW`: the redacted entry's content and erased texts."""
    return (entry.content, dialect.write_flag(entry.redacted), stored_texts(texts), owner, seq)


def rewrite_values(owner: str, seq: int, entry: Entry, dialect: Dialect) -> tuple[Any, ...]:
    """The parameters of :data:`REWRITE_ROW`: every field of the new entry."""
    return (*ledger_values(owner, seq, entry, None, {}, dialect)[2:10], owner, seq)


def records_of(rows: Iterable[Sequence[Any]], dialect: Dialect) -> Iterator[Record]:
    """Stored rows (:data:`SELECT_RECORDS`) as records."""
    decode = _decode
    for row in rows:
        entry = Entry(
            ts=row[1],
            content=row[2],
            source=row[3],
            tags=tuple(dialect.read_list(row[4])),
            content_hash=row[5],
            prev_hash=row[6],
            hash=row[7],
            redacted=bool(row[8]),
        )
        yield Record(int(row[0]), entry, row[9], decode(row[10])[0] if row[10] else {})


def tip_of(row: Sequence[Any] | None) -> Tip:
    """The tip a heads row holds (:data:`SELECT_TIP`), or the empty chain's."""
    return Tip(0, "") if row is None else Tip(int(row[0]), str(row[1]))


def memory_of(row: Sequence[Any] | None) -> MemoryRecord | None:
    """The memory of a ``doc`` row (:data:`SELECT_DOC`), if there was one."""
    return None if row is None else memory_from_doc(row[0])


# -- checkpoint replies ---------------------------------------------------------------

FIND_REPLY = (
    "SELECT request_checksum, response FROM checkpoint_replies WHERE owner = ? AND message_id = ?"
)
SAVE_REPLY = (
    "INSERT INTO checkpoint_replies (owner, message_id, request_checksum, response)"
    " VALUES (?, ?, ?, ?)"
)


def reply_of(owner: str, message_id: str, row: Sequence[Any] | None) -> StoredReply | None:
    """The stored reply a :data:`FIND_REPLY` row holds, if any."""
    return None if row is None else StoredReply(owner, message_id, row[0], bytes(row[1]))


def reply_values(holder: str, reply: StoredReply) -> tuple[Any, ...]:
    """The parameters of :data:`SAVE_REPLY`; a reply of another owner is refused."""
    if reply.owner != holder:
        raise StorageError(
            f"a reply for {reply.owner} cannot be kept while holding {holder}'s chain",
            owner=reply.owner,
        )
    return (reply.owner, reply.message_id, reply.request_checksum, reply.response)


# -- bearer tokens ---------------------------------------------------------------------


class TokenStatements:
    """The ``tokens`` table's statements in one dialect (see ``storage.base.TokenStore``).

    ``text_order`` is how a text column sorts bytewise (PostgreSQL's default collation
    would sort by locale).
    """

    def __init__(self, dialect: Dialect, text_order: str = "") -> None:
        self.dialect = dialect
        select = f"SELECT {TOKEN_COLUMNS} FROM tokens"
        order = f" ORDER BY created_at{text_order}, id{text_order}"
        self.insert = dialect.sql(
            f"INSERT INTO tokens ({TOKEN_COLUMNS}) VALUES ({', '.join('?' * 10)})"
        )
        self.by_id = dialect.sql(f"{select} WHERE id = ?")
        self.every = select + order
        self.of_principal = dialect.sql(f"{select} WHERE principal = ?{order}")
        self.revoke = dialect.sql(
            "UPDATE tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL"
        )

    def values(self, record: TokenRecord) -> tuple[Any, ...]:
        """The parameters of :attr:`insert` for a new token record."""
        return (
            record.token_id,
            record.secret_hash,
            record.principal,
            record.on_behalf_of,
            self.dialect.write_list(record.scopes),
            record.created_at,
            record.expires_at,
            record.revoked_at,
            record.label,
            record.channel,
        )

    def record(self, row: Sequence[Any]) -> TokenRecord:
        """A token record from a row of ``TOKEN_COLUMNS``."""
        return token_record(row, self.dialect.read_list(row[4]))

    def listing(self, principal: str | None) -> tuple[str, tuple[str, ...]]:
        """The statement and parameters listing tokens, oldest first (of one principal)."""
        if principal is None:
            return self.every, ()
        return self.of_principal, (principal,)


# -- recall fields ---------------------------------------------------------------------

RECALL_FIELDS = rows.RECALL_FIELDS
"""The recall fields by name (see :data:`troth.storage.rows.RECALL_FIELDS`)."""


# -- filters ---------------------------------------------------------------------------


class Filters:
    """A :class:`MemoryFilter` as a WHERE clause, with the dialect's own spellings as hooks:
    ``any_of(column, values)`` (a clause and its parameters), ``true`` (what follows a
    boolean column for it to hold), ``has_tags(prefix, tags)`` (a clause and its
    parameters) and ``text_order`` (what makes a text column sort bytewise: PostgreSQL's
    default collation sorts by locale). Listings and owners come out in one order on
    every backend."""

    def __init__(
        self,
        dialect: Dialect,
        any_of: Callable[[str, Sequence[str]], tuple[str, list[Any]]],
        true: str,
        has_tags: Callable[[str, Sequence[str]], tuple[str, list[Any]]],
        text_order: str = "",
    ) -> None:
        self.placeholder = dialect.placeholder
        self.any_of = any_of
        self.true = true
        self.has_tags = has_tags
        self.text_order = text_order
        self.owners = f"SELECT owner FROM heads WHERE length > 0 ORDER BY owner{text_order}"

    def listing(self, owner: str, query: MemoryFilter) -> tuple[str, list[Any]]:
        """The statement and parameters of a listing: documents, newest first.

        Newest is the highest ``seq`` (the entry that last changed the memory); memories
        changed by one entry follow by id, descending and bytewise, on both backends.
        """
        where, params = self.where(owner, query)
        statement = (
            f"SELECT doc FROM memories WHERE {where} ORDER BY seq DESC, id{self.text_order} DESC"
        )
        if query.limit is not None:
            statement += f" LIMIT {self.placeholder} OFFSET {self.placeholder}"
            params += [query.limit, query.offset]
        return statement, params

    def counting(self, owner: str, query: MemoryFilter) -> tuple[str, list[Any]]:
        """The statement and parameters counting what a filter matches."""
        where, params = self.where(owner, query)
        return f"SELECT count(*) FROM memories WHERE {where}", params

    def census(
        self, owner: str, queries: Sequence[MemoryFilter]
    ) -> tuple[str, list[Any], list[int]]:
        """One statement for :meth:`tally`: the owner's rows grouped by status (the owner
        index's order, so one pass and no sort), with per group ``count(*)`` and, for each
        filter's other conditions, ``count(*) FILTER (WHERE ...)`` (the clause
        :meth:`counting` uses, less the owner and statuses); with its parameters and each
        filter's column, for :meth:`tally`."""
        rests = self._rests(queries)
        distinct = _distinct(rests)
        columns = ["status", "count(*)"]
        params: list[Any] = []
        for clause, values in distinct:
            columns.append(f"count(*) FILTER (WHERE {clause})")
            params += values
        statement = (
            f"SELECT {', '.join(columns)} FROM memories"
            f" WHERE owner = {self.placeholder} GROUP BY status"
        )
        # The column of each filter: 1 (the group's count) when nothing but owner and
        # statuses filters it, else that of its conditions.
        at = [2 + distinct.index(rest) if rest[0] else 1 for rest in rests]
        return statement, [*params, owner], at

    @staticmethod
    def tally(
        queries: Sequence[MemoryFilter], at: Sequence[int], groups: Iterable[Sequence[Any]]
    ) -> list[int]:
        """How many rows each filter matches, from the groups :meth:`census` selected:
        the groups whose status it admits, each by its own conditions' column (``at``)."""
        counts = [0] * len(queries)
        for group in groups:
            status = str(group[0])
            for index, query in enumerate(queries):
                if query.statuses is None or status in query.statuses:
                    counts[index] += int(group[at[index]])
        return counts

    def _rests(self, queries: Sequence[MemoryFilter]) -> list[tuple[str, list[Any]]]:
        """Each filter's conditions besides owner and statuses: (clause, parameters)."""
        out = []
        for query in queries:
            clauses, params = self.conditions(replace(query, statuses=None))
            out.append((" AND ".join(clauses), params))
        return out

    def where(self, owner: str, query: MemoryFilter, alias: str = "") -> tuple[str, list[Any]]:
        """The clause (columns prefixed by ``alias.`` when given) and its parameters."""
        clauses, params = self.conditions(query, alias)
        owned = f"{alias}.owner" if alias else "owner"
        return " AND ".join([f"{owned} = {self.placeholder}", *clauses]), [owner, *params]

    def conditions(self, query: MemoryFilter, alias: str = "") -> tuple[list[str], list[Any]]:
        """The filter's clauses besides the owner's, and their parameters."""
        p, ph = f"{alias}." if alias else "", self.placeholder
        clauses: list[str] = []
        params: list[Any] = []

        def add(clause: str, values: list[Any]) -> None:
            clauses.append(clause)
            params.extend(values)

        if query.statuses is not None:
            add(*self.any_of(f"{p}status", query.statuses))
        if query.retrievable_only:
            clauses.append(f"{p}retrievable{self.true} AND {p}status = 'active'")
        if query.kinds is not None:
            add(*self.any_of(f"{p}kind", query.kinds))
        if query.scope is not None:
            add(f"{p}scope = {ph}", [query.scope])
        if query.partition is not None:
            add(f"{p}partition = {ph}", [query.partition])
        if not query.include_sensitive:
            clauses.append(f"{p}sensitivity <> 'sensitive'")
        if query.tags:
            add(*self.has_tags(p, query.tags))
        return clauses, params


def _distinct(rests: Sequence[tuple[str, list[Any]]]) -> list[tuple[str, list[Any]]]:
    """The non-empty conditions, each once, in order (parameters may be lists: no hashing)."""
    out: list[tuple[str, list[Any]]] = []
    for rest in rests:
        if rest[0] and rest not in out:
            out.append(rest)
    return out


# -- migrations ------------------------------------------------------------------------

_MIGRATION_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")


def migrations(backend: str) -> list[tuple[int, str, str]]:
    """The numbered schema migrations of one backend shipped in the package, in order:
    (version, file name, SQL) from ``storage/migrations/<backend>/NNNN_name.sql``."""
    folder = resources.files("troth.storage").joinpath(f"migrations/{backend}")
    out = []
    for item in folder.iterdir():
        found = _MIGRATION_NAME.match(item.name)
        if found:
            out.append((int(found.group(1)), item.name, item.read_text(encoding="utf-8")))
    return sorted(out)


# -- context expansion ---------------------------------------------------------------------


def lends_context_sql(prefix: str, true: str, *, unindexed: Iterable[str] = ()) -> str:
    """:data:`rows.LENDING` as a WHERE condition on the columns of ``prefix`` (a table
    alias with its dot, or ``""``): what ``rows.lends_context`` says of a memory, said of
    its row. ``true`` follows a flag column as in :class:`Filters` (SQLite ``" = 1"``).
    A column in ``unindexed`` is tested as ``(…) IS TRUE``, an expression no index holds,
    so the planner does not choose an index by it (``storage.postgres.context``)."""
    hidden = set(unindexed)
    terms = []
    for column, value in rows.LENDING:
        name = prefix + column
        term = f"{name}{true}" if value is True else f"{name} = '{value}'"
        terms.append(f"({term}) IS TRUE" if column in hidden else term)
    return " AND ".join(terms)


# -- the erasure epoch --------------------------------------------------------------------

ERASURE_EPOCH: Final = "erasure_epoch"
"""The store-wide setting (each store's ``meta_table``) counting the committed transactions
that erased a text or forgot a memory (migrations sqlite/0009, postgres/0012)."""


def move_erasure_epoch(meta_table: str) -> str:
    """The statement an erasing transaction moves the epoch by: it commits, or rolls back,
    with the erasure (one statement for both dialects; the value is kept as text)."""
    return (
        f"UPDATE {meta_table} SET value = CAST(CAST(value AS BIGINT) + 1 AS TEXT)"
        f" WHERE key = '{ERASURE_EPOCH}'"
    )


# -- the reads both stores answer alike ---------------------------------------------------


class SQLReads:
    """The ``Store`` reads both SQL stores answer with the same statements in their own
    dialect, over the calling thread's connection (``_connection``, which each defines).

    The bearer tokens (``TokenStore``) are kept here too. A store sets ``dialect``,
    ``filters`` and ``meta_table`` (its store-wide settings) and defines ``_write_one``;
    what its engine answers differently (a search, ``get_many``'s id list) it defines
    itself.
    """

    dialect: Dialect
    filters: Filters
    meta_table: str

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        render = cls.dialect.sql
        cls._tip_sql = render(SELECT_TIP)
        cls._records_sql = render(SELECT_RECORDS)
        cls._doc_sql = render(SELECT_DOC)
        cls._locate_sql = render(LOCATE)
        cls._tokens = TokenStatements(cls.dialect, cls.filters.text_order)
        cls._model_sql = (
            f"SELECT key, value FROM {cls.meta_table}"
            " WHERE key IN ('embedding_model', 'embedding_dim')"
        )
        cls._epoch_sql = f"SELECT value FROM {cls.meta_table} WHERE key = '{ERASURE_EPOCH}'"

    _tip_sql: str
    _records_sql: str
    _doc_sql: str
    _locate_sql: str
    _model_sql: str
    _epoch_sql: str
    _tokens: TokenStatements
    _erasures: Finisher  # each store's own ``_finish_erasures``, tried until it is done

    def _connection(self) -> Any:  # pragma: no cover - every store defines it
        raise NotImplementedError

    def _write_one(self, statement: str, params: Sequence[Any]) -> Any:  # pragma: no cover
        """Run one statement as a write transaction of its own; the cursor."""
        raise NotImplementedError

    def tip(self, owner: str) -> Tip:
        """An owner's chain length and head."""
        return tip_of(self._connection().execute(self._tip_sql, (owner,)).fetchone())

    def records(self, owner: str, start: int = 0) -> Iterator[Record]:
        """An owner's stored rows in chain order."""
        rows = self._connection().execute(self._records_sql, (owner, start))
        return records_of(rows, self.dialect)

    def owners(self) -> list[str]:
        """Every owner with a non-empty chain, bytewise in order."""
        return [str(r[0]) for r in self._connection().execute(self.filters.owners)]

    def get(self, owner: str, memory_id: str) -> MemoryRecord | None:
        """One projected memory."""
        return memory_of(self._connection().execute(self._doc_sql, (owner, memory_id)).fetchone())

    def locate(self, memory_id: str) -> str | None:
        """The owner of a memory id — the one query that crosses owners (a cold path)."""
        row = self._connection().execute(self._locate_sql, (memory_id,)).fetchone()
        return None if row is None else str(row[0])

    def memories(self, owner: str, query: MemoryFilter) -> list[MemoryRecord]:
        """Projected memories of one owner, newest first (see ``Filters.listing``)."""
        rows = self._connection().execute(*self.filters.listing(owner, query))
        return [memory_from_doc(r[0]) for r in rows]

    def count(self, owner: str, query: MemoryFilter) -> int:
        """How many memories a filter matches."""
        row = self._connection().execute(*self.filters.counting(owner, query)).fetchone()
        return int(row[0]) if row else 0

    def counts(self, owner: str, queries: Sequence[MemoryFilter]) -> list[int]:
        """How many memories each filter matches, in one statement (``Filters.census``)."""
        statement, params, at = self.filters.census(owner, queries)
        groups = self._connection().execute(statement, params).fetchall()
        return self.filters.tally(queries, at, groups)

    def pending_erasures(self) -> int:
        """Erasures committed but not yet compacted out of every file."""
        row = self._connection().execute("SELECT count(*) FROM pending_erasures").fetchone()
        return int(row[0]) if row else 0

    def finish_erasures(self, wait: float = 0.0) -> bool:
        """Finish pending erasures, waiting up to ``wait`` seconds for readers of older
        snapshots; True when none is left (else a background thread goes on while the
        store is open)."""
        return self._erasures.finish(wait)

    def erasure_epoch(self) -> int:
        """How many transactions that erased a text or forgot a memory have committed, in
        any process (one primary-key read of the store's settings)."""
        row = self._connection().execute(self._epoch_sql).fetchone()
        return int(row[0]) if row else 0

    def vector_model(self) -> tuple[str, int] | None:
        """The embedding model (name, dimension) the stored vectors were made with, if any."""
        rows = dict(self._connection().execute(self._model_sql))
        if "embedding_model" not in rows:
            return None
        return str(rows["embedding_model"]), int(rows["embedding_dim"])

    # -- bearer tokens (hashed; see core.access) --------------------------------------

    def put_token(self, record: TokenRecord) -> None:
        """Keep a new token record (hash only)."""
        self._write_one(self._tokens.insert, self._tokens.values(record))

    def token(self, token_id: str) -> TokenRecord | None:
        """One token record by id."""
        row = self._connection().execute(self._tokens.by_id, (token_id,)).fetchone()
        return None if row is None else self._tokens.record(row)

    def tokens(self, principal: str | None = None) -> list[TokenRecord]:
        """Token records, oldest first."""
        rows = self._connection().execute(*self._tokens.listing(principal))
        return [self._tokens.record(row) for row in rows]

    def revoke_token(self, token_id: str, at: str) -> bool:
        """Mark a token revoked; False when there is no unrevoked token with that id."""
        return bool(self._write_one(self._tokens.revoke, (at, token_id)).rowcount)
