"""The PostgreSQL backend: :class:`PostgresStore`, split by concern.

``schema`` (migrations, advisory locks, the vector index), ``transaction`` (the write
path), ``search`` (full text and vectors), ``store`` (the ``Store`` itself). What both
SQL backends share is in ``storage.sql``.
"""

from troth.storage.postgres.schema import ERASABLE_TABLES, TEXT_SEARCH_CONFIG
from troth.storage.postgres.store import PostgresStore

__all__ = ["ERASABLE_TABLES", "TEXT_SEARCH_CONFIG", "PostgresStore"]
