"""The embedded SQLite backend: :class:`SQLiteStore`, split by concern.

``schema`` (the driver, connection settings, numbered migrations), ``transaction`` (the
write path), ``search`` (FTS5 and vectors), ``store`` (the ``Store`` itself). What both
SQL backends share is in ``storage.sql``.
"""

from troth.storage.sqlite.schema import SCHEMA_VERSION, sqlite3
from troth.storage.sqlite.store import SQLiteStore

__all__ = ["SCHEMA_VERSION", "SQLiteStore", "sqlite3"]
