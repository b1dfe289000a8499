"""Whether a token check may run in a server's event loop is the backend's word.

``service.tokens`` must not test for a concrete backend class (a service module naming a
storage implementation crosses a layer): ``TokenStore.local`` says it.
"""

from __future__ import annotations

import ast
from pathlib import Path

from troth.core.access import TokenRecord
from troth.service.tokens import Tokens
from troth.storage.postgres.store import PostgresStore
from troth.storage.sqlite import SQLiteStore

SOURCE = Path(__file__).resolve().parents[2] / "src" / "troth" / "service" / "tokens.py"


class LocalTokens:
    """A token table another embedded backend might keep: local, and not SQLite."""

    local = True

    def __init__(self) -> None:
        self.kept: dict[str, TokenRecord] = {}

    def put_token(self, record: TokenRecord) -> None:
        self.kept[record.token_id] = record

    def token(self, token_id: str) -> TokenRecord | None:
        return self.kept.get(token_id)

    def tokens(self, principal: str | None = None) -> list[TokenRecord]:
        return [t for t in self.kept.values() if principal in (None, t.principal)]

    def revoke_token(self, token_id: str, at: str) -> bool:
        return False


def test_the_backend_says_whether_its_token_reads_are_local(tmp_path: Path) -> None:
    assert Tokens(LocalTokens()).local is True
    assert Tokens(SQLiteStore(tmp_path / "t.db")).local is True
    assert PostgresStore.local is False


def test_the_token_service_names_no_storage_backend() -> None:
    imported = {
        node.module
        for node in ast.walk(ast.parse(SOURCE.read_text()))
        if isinstance(node, ast.ImportFrom) and node.module
    }
    assert not {
        m for m in imported if m.startswith(("troth.storage.sqlite", "troth.storage.postgres"))
    }
