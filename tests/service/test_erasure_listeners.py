"""The ledger announces committed erasures to its listeners; it imports none of them.

Recall's word caches (``service.interaction``) subscribe where the facade is composed
(``service.compose.ERASURE_LISTENERS``): the write path (``service.ledger``,
``service.restoring``) does not reach into recall to empty them.
"""

from __future__ import annotations

import ast
from pathlib import Path

import troth
from tests.conftest import vector_facade
from troth.service.compose import ERASURE_LISTENERS
from troth.service.interaction import forget_words
from troth.storage.sqlite import SQLiteStore

SERVICE = Path(troth.__file__).parent / "service"


def _imported(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def test_the_write_path_imports_no_word_cache() -> None:
    for name in ("ledger.py", "restoring.py"):
        assert "troth.service.interaction" not in _imported(SERVICE / name), name


def test_the_word_caches_listen_where_the_facade_is_composed() -> None:
    assert forget_words in ERASURE_LISTENERS


def test_a_listener_hears_each_committed_forget_and_redaction_not_other_writes(
    tmp_path: Path,
) -> None:
    mind = vector_facade(SQLiteStore(tmp_path / "t.db"))
    heard: list[int] = []
    mind.parts.ledger.add_erasure_listener(lambda: heard.append(1))
    kept = mind.remember("the violin lives in the attic")
    gone = mind.remember("the canary is called pip")
    mind.hide(kept.id)
    assert heard == []
    mind.forget(gone.id, reason="not mine to keep")
    assert heard == [1]
    mind.redact(kept.id, reason="erase it")
    assert heard == [1, 1]
