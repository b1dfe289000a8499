"""Export and import through the facade: PCP archives (the export checklist), idempotency,
malformed input leaving the ledger unchanged, foreign formats carrying ``x_import``."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
import zipfile
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import StepClock
from troth.config import load_policy
from troth.core.errors import ConflictError, FormatError, PolicyDeniedError
from troth.formats import archive, pcp, personaxis
from troth.formats.registry import Item
from troth.service import portability
from troth.service.keys import KeyStore
from troth.service.memory import Memory
from troth.service.sealing import Sealer
from troth.storage.base import Store
from troth.storage.postgres import PostgresStore
from troth.storage.sqlite import SQLiteStore

AT = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
GOLDEN = Path(__file__).resolve().parents[1] / "formats" / "golden"
OWNER = "human:alice"


@pytest.fixture
def fresh(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[Callable[[], Memory]]:
    """New, empty ledgers of the test's backend (each its own file or database)."""
    made: list[Memory] = []
    urls: list[str] = []

    def make() -> Memory:
        store: Store
        if backend == "sqlite":
            store = SQLiteStore(tmp_path / f"db{len(made)}" / "troth.db")
        else:
            urls.append(request.getfixturevalue("pg_server").create())
            store = PostgresStore(urls[-1])
        m = Memory(store, policy=load_policy(None), principal=OWNER, clock=StepClock())
        # One key and one ledger name for every ledger of a test: each trusts the others'
        # exports, and their checkpoints name the same origin (byte-identical archives).
        m.seal_exports_with(Sealer(store, KeyStore(tmp_path / "signing.key"), "test.ledger"))
        made.append(m)
        return m

    yield make
    for m in made:
        m.close()
    for url in urls:
        request.getfixturevalue("pg_server").drop(url)


def populate(memory: Memory, *, forgotten: bool = False) -> None:
    memory.remember("I prefer green tea", kind="preference", tags=["tea"], title="Tea")
    proposed = memory.remember(
        "Alice runs marathons", actor="agent:bot", owner=OWNER, channel="synthesis"
    )
    memory.approve(proposed.id, note="yes")
    rejected = memory.remember("Alice likes jazz", actor="agent:bot", owner=OWNER, channel="tool")
    memory.reject(rejected.id)
    memory.remember("Alice may like opera", actor="agent:bot", owner=OWNER, channel="synthesis")
    memory.remember(
        "yes: 2026-01-01 is a date", path="style/voice", sensitivity="sensitive", importance=0.5
    )
    hidden = memory.remember(
        "a hidden memory", relations=[{"rel": "about", "target": "style/voice"}]
    )
    memory.hide(hidden.id)
    if forgotten:
        gone = memory.remember("forget me")
        memory.forget(gone.id)
        erased = memory.remember("erase me")
        memory.redact(erased.id, reason="erasure request")


def files_of(data: bytes) -> dict[str, bytes]:
    return archive.read(data, where="test")


def head(memory: Memory) -> object:
    return memory.store.tip(OWNER)


# -- the PCP export checklist (E1 to E9) ----------------------------------------------------------


@pytest.mark.parametrize("container", ["tar", "zip"])
def test_e1_archive_is_readable_as_tar_or_zip(fresh: Callable[[], Memory], container: str) -> None:
    memory = fresh()
    populate(memory)
    data = memory.parts.portability.export_archive(at=AT, container=container).data
    if container == "zip":
        with zipfile.ZipFile(io.BytesIO(data)) as archive_file:
            assert archive_file.testzip() is None
            assert archive_file.namelist()[0] == "manifest.json"
    else:
        with tarfile.open(fileobj=io.BytesIO(data)) as archive_file:
            assert archive_file.getnames()[0] == "manifest.json"


def test_e2_manifest_validates_and_every_page_validates(fresh: Callable[[], Memory]) -> None:
    memory = fresh()
    populate(memory, forgotten=True)
    files = files_of(memory.parts.portability.export_archive(at=AT).data)
    manifest = json.loads(files["manifest.json"])
    assert not list(archive.manifest_validator().iter_errors(manifest))
    assert manifest["pcp_version"] == "0.3"
    assert not list(archive.profile_validator().iter_errors(json.loads(files[archive.PROFILE])))
    pages = [name for name in files if name.startswith("memory/")]
    for name in pages:
        pcp.decode_page(files[name], where=name)  # raises unless the page schema validates


def test_e3_checksums_are_right_both_ways(fresh: Callable[[], Memory]) -> None:
    memory = fresh()
    populate(memory)
    files = files_of(memory.parts.portability.export_archive(at=AT).data)
    manifest = json.loads(files["manifest.json"])
    listed = {f["path"]: f for f in manifest["files"]}
    assert set(listed) == set(files) - {"manifest.json"}
    for path, entry in listed.items():
        assert pcp.sha256_bytes(files[path]) == entry["sha256"]
        assert len(files[path]) == entry["bytes"]


def test_e4_page_count_is_true(fresh: Callable[[], Memory]) -> None:
    memory = fresh()
    populate(memory, forgotten=True)
    files = files_of(memory.parts.portability.export_archive(at=AT).data)
    manifest = json.loads(files["manifest.json"])
    pages = [n for n in files if n.startswith("memory/") and n.endswith(".md")]
    assert manifest["memory"]["page_count"] == len(pages) == 6
    assert manifest["memory"]["sensitive_page_count"] == 1


def test_e5_no_absolute_or_climbing_paths(fresh: Callable[[], Memory]) -> None:
    memory = fresh()
    populate(memory)
    data = memory.parts.portability.export_archive(at=AT).data
    with tarfile.open(fileobj=io.BytesIO(data)) as archive_file:
        names = archive_file.getnames()
    for name in names:
        assert not name.startswith("/")
        assert ".." not in name.split("/")


def test_e6_no_credentials_anywhere(fresh: Callable[[], Memory]) -> None:
    memory = fresh()
    populate(memory)
    memory.remember("my password is hunter2-canary")  # the policy never stores it
    files = files_of(memory.parts.portability.export_archive(at=AT).data)
    manifest = json.loads(files["manifest.json"])
    assert all(c["credentials_included"] is False for c in manifest.get("connections", []))
    assert all(b"hunter2" not in data for data in files.values())


def test_e7_pages_travel_byte_identical(fresh: Callable[[], Memory]) -> None:
    source = fresh()
    populate(source)
    data = source.parts.portability.export_archive(at=AT).data
    first = files_of(data)
    target = fresh()
    target.parts.portability.import_bytes(data, name="a.tar", mode="restore")
    second = files_of(target.parts.portability.export_archive(at=AT).data)
    pages = [n for n in first if n.startswith("memory/")]
    assert pages
    assert all(first[n] == second[n] for n in pages)


def test_e8_omitted_memories_are_declared(fresh: Callable[[], Memory]) -> None:
    memory = fresh()
    populate(memory, forgotten=True)
    memory.remember("my password is hunter2-canary")
    manifest = json.loads(
        files_of(memory.parts.portability.export_archive(at=AT).data)["manifest.json"]
    )
    declared = {o["what"]: o["reason"] for o in manifest["omitted"]}
    assert declared == {
        "1 forgotten memory": "unsupported",
        "1 no_store memory": "unsupported",
        "1 redacted memory": "unsupported",
    }


@pytest.mark.parametrize("container", ["tar", "zip"])
def test_e9_export_restore_export_is_byte_identical(
    fresh: Callable[[], Memory], container: str, tmp_path: Path
) -> None:
    """The archive bytes of export → restore → export are equal.

    Exports are audited, so what is compared is precise: ``first`` is the source's archive,
    taken before the source's own ``export`` event was appended (an archive never holds its
    own export event); the target restores its ledger copy, proven by its checkpoint; the
    second archive is taken from the target before the target's ``export`` event. Each
    export then appends its event to its own ledger, after its bytes.
    """
    source = fresh()
    populate(source)
    first = source.parts.portability.export_archive(at=AT, container=container).data
    assert events(source)[-1] == "export"
    target = fresh()
    path = tmp_path / f"a.{container}"
    path.write_bytes(first)
    report = target.import_path(path, mode="restore")
    assert (report.mode, report.as_import) == ("restore", None)
    assert len(report.created) == 6
    assert not report.refused
    assert "export" not in events(target)
    assert target.parts.portability.export_archive(at=AT, container=container).data == first
    assert events(target)[-1] == "export"
    assert all(r.ok for r in target.verify())


def test_e9_own_export_is_imported_with_x_import(fresh: Callable[[], Memory]) -> None:
    source = fresh()
    populate(source)
    data = source.parts.portability.export_archive(at=AT).data
    target = fresh()
    report = target.parts.portability.import_bytes(data, name="a.tar", at=AT)
    assert len(report.created) == 5  # the rejected page is refused, not resurrected
    assert [r.reason for r in report.refused] == ["rejected in the source; not imported"]
    by_title = {m.title: m for m in target.memories(OWNER)}
    tea = by_title["Tea"]
    assert tea.status == "active"
    assert tea.extra["x_import"]["format"] == "pcp"
    assert tea.extra["x_import"]["exporter"] == "troth"
    assert tea.recorded_at == tea.extra["x_import"]["at"] == "2026-11-29T12:00:00.000Z"
    assert by_title["Alice may like opera"].status == "proposed"  # agent-made: proposed
    assert by_title["yes: 2026-01-01 is a date"].sensitivity == "sensitive"


def test_archive_with_forgotten_memories_restores_them_too(
    fresh: Callable[[], Memory], tmp_path: Path
) -> None:
    """The restore copy is the ledger: forgotten and redacted memories come back as they
    were (their trail, not their pages), so the second archive equals the first."""
    source = fresh()
    populate(source, forgotten=True)
    data = source.parts.portability.export_archive(at=AT).data
    path = tmp_path / "a.tar"
    path.write_bytes(data)
    target = fresh()
    target.import_path(path, mode="restore")
    assert target.parts.portability.export_archive(at=AT).data == data
    assert sorted(target.store.projection(OWNER)) == sorted(source.store.projection(OWNER))


# -- idempotency ---------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["import", "restore"])
def test_importing_the_same_archive_twice_leaves_the_head_unchanged(
    fresh: Callable[[], Memory], mode: str
) -> None:
    source = fresh()
    populate(source)
    data = source.parts.portability.export_archive(at=AT).data
    target = fresh()
    target.parts.portability.import_bytes(data, name="a.tar", mode=mode)
    before = head(target)
    again = target.parts.portability.import_bytes(data, name="a.tar", mode=mode)
    assert head(target) == before
    assert again.created == []
    assert again.unchanged >= 5


def test_importing_mem0_twice_creates_nothing_new(fresh: Callable[[], Memory]) -> None:
    memory = fresh()
    data = (GOLDEN / "mem0_get_all.json").read_bytes()
    first = memory.parts.portability.import_bytes(data, name="mem0.json", at=AT)
    assert len(first.created) == 6
    before = head(memory)
    assert memory.parts.portability.import_bytes(data, name="mem0.json").unchanged == 6
    assert head(memory) == before


# -- malformed input -----------------------------------------------------------------------------


def tar_of(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def exported_files(memory: Memory) -> dict[str, bytes]:
    populate(memory)
    return files_of(memory.parts.portability.export_archive(at=AT).data)


def rebuilt(files: dict[str, bytes], **changes: bytes) -> bytes:
    """An archive with some files replaced and the manifest's checksums fixed up."""
    files = {**files, **changes}
    manifest = json.loads(files["manifest.json"])
    for entry in manifest["files"]:
        entry["sha256"] = pcp.sha256_bytes(files[entry["path"]])
        entry["bytes"] = len(files[entry["path"]])
    files["manifest.json"] = json.dumps(manifest).encode()
    return tar_of(files)


def assert_refused(memory: Memory, data: bytes, match: str, name: str = "bad.tar") -> None:
    before = head(memory)
    with pytest.raises(FormatError, match=match):
        memory.parts.portability.import_bytes(data, name=name)
    assert head(memory) == before


def test_bad_yaml_names_the_file_and_line(fresh: Callable[[], Memory]) -> None:
    files = exported_files(fresh())
    page = next(n for n in files if n.startswith("memory/"))
    broken = files[page].replace(b"sensitivity: normal", b"sensitivity: [normal", 1)
    assert_refused(fresh(), rebuilt(files, **{page: broken}), rf"{page}:\d+: bad YAML")


def test_wrong_types_in_frontmatter_are_refused(fresh: Callable[[], Memory]) -> None:
    files = exported_files(fresh())
    page = next(n for n in files if n.startswith("memory/"))
    broken = files[page].replace(b"sensitivity: normal", b"sensitivity: 3", 1)
    assert_refused(
        fresh(), rebuilt(files, **{page: broken}), rf"{page}:\d+: frontmatter sensitivity"
    )


def test_a_path_that_climbs_out_is_refused(fresh: Callable[[], Memory]) -> None:
    files = exported_files(fresh())
    assert_refused(fresh(), tar_of({**files, "../evil.md": b"x"}), "climbs out")


def test_a_checksum_mismatch_is_refused(fresh: Callable[[], Memory]) -> None:
    files = exported_files(fresh())
    page = next(n for n in files if n.startswith("memory/"))
    assert_refused(fresh(), tar_of({**files, page: files[page] + b"x"}), "checksum")


def test_an_unlisted_file_is_refused(fresh: Callable[[], Memory]) -> None:
    files = exported_files(fresh())
    assert_refused(fresh(), tar_of({**files, "memory/extra.md": b"---\n"}), "not in the manifest")


def test_truncated_archive_is_refused(fresh: Callable[[], Memory]) -> None:
    source = fresh()
    populate(source)
    data = source.parts.portability.export_archive(at=AT, container="zip").data
    assert_refused(fresh(), data[: len(data) // 2], "not a readable", name="cut.zip")


def test_a_zip_bomb_is_refused(fresh: Callable[[], Memory]) -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as bomb:
        bomb.writestr("memory/bomb.md", b"0" * (8 << 20))
    assert_refused(fresh(), buffer.getvalue(), "zip bomb", name="bomb.zip")


def test_an_oversize_member_is_refused(fresh: Callable[[], Memory]) -> None:
    limits = archive.Limits(max_file_bytes=100)
    with pytest.raises(FormatError, match="per-file limit"):
        archive.read(tar_of({"memory/a.md": b"x" * 101}), where="big.tar", limits=limits)


def test_too_many_members_are_refused() -> None:
    limits = archive.Limits(max_members=2)
    data = tar_of({f"memory/{i}.md": b"x" for i in range(3)})
    with pytest.raises(FormatError, match="more than 2 members"):
        archive.read(data, where="many.tar", limits=limits)


def test_truncated_json_names_the_line(fresh: Callable[[], Memory]) -> None:
    data = (GOLDEN / "mem0_get_all.json").read_bytes()[:300]
    assert_refused(fresh(), data, r"mem0.json:\d+: not valid JSON", name="mem0.json")


def test_a_broken_chain_names_the_first_broken_line(fresh: Callable[[], Memory]) -> None:
    source = fresh()
    source.remember("one")
    source.remember("two")
    log = source.export("personaxis")[0].decode().split("\n")
    log[1] = log[1].replace("two", "tw0")
    target = fresh()
    assert_refused(
        target,
        "\n".join(log).encode(),
        r"episodic.jsonl:2: the chain is broken at entry #1",
        name="episodic.jsonl",
    )


def test_wrong_types_in_a_mem0_record_are_refused(fresh: Callable[[], Memory]) -> None:
    data = json.dumps({"results": [{"id": "x", "memory": 3}]}).encode()
    assert_refused(fresh(), data, r"results\[0\]: 'memory' must be str", name="mem0.json")


# -- batched writing ------------------------------------------------------------------------------


def item(text: str, key: str, **fields: object) -> Item:
    return Item(content=text, where=f"in:{key}", key=(key, "0" * 64), fields=fields)


def test_a_refused_item_in_a_batch_leaves_the_others_written(fresh: Callable[[], Memory]) -> None:
    memory = fresh()
    items = [
        item("one", "a"),
        item("x" * 2001, "b"),  # over the 2,000-character limit
        item("my password is hunter2", "c"),  # the policy never stores credentials
        item("four", "d"),
        item("five", "e", kind="no-such-kind"),
        item("six", "f"),
    ]
    report = portability.ImportReport("test", "import", OWNER)
    memory.parts.portability.write_items(items, owner=OWNER, restore=False, report=report, batch=2)
    assert sorted(memory.get(i).content for i in report.created) == ["four", "one", "six"]
    assert [r.where for r in report.refused] == ["in:b", "in:c", "in:e"]
    assert memory.store.tip(OWNER).length == 3
    assert all(r.ok for r in memory.verify())


def test_a_batch_the_store_refuses_is_written_again_item_by_item(
    fresh: Callable[[], Memory], monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = fresh()
    ledger = memory.parts.ledger
    real = ledger.write_plan

    def refuse_two(tx: Any, plan: Any, vectors: Any = None) -> Any:
        if plan.content == "two":
            raise ConflictError("refused by the store")
        return real(tx, plan, vectors)

    monkeypatch.setattr(ledger, "write_plan", refuse_two)
    report = portability.ImportReport("test", "import", OWNER)
    items = [item(t, t) for t in ("one", "two", "three")]
    memory.parts.portability.write_items(items, owner=OWNER, restore=False, report=report)
    assert sorted(memory.get(i).content for i in report.created) == ["one", "three"]
    assert report.refused == [portability.Refusal("in:two", "refused by the store")]
    assert memory.store.tip(OWNER).length == 2  # the rolled-back batch left nothing behind


def test_a_restore_in_batches_equals_the_source(fresh: Callable[[], Memory]) -> None:
    source = fresh()
    populate(source)
    data = source.parts.portability.export_archive(at=AT).data
    items, _ = archive.decode(data, name="a.tar", restore=True)
    target = fresh()
    report = portability.ImportReport("pcp", "restore", OWNER)
    target.parts.portability.write_items(items, owner=OWNER, restore=True, report=report, batch=4)
    assert len(report.created) == 6
    # The pages and their audit are the source's (the ledger copy is the target's own rows).
    again = files_of(target.parts.portability.export_archive(at=AT).data)
    first = files_of(data)
    assert {n: first[n] for n in first if n.startswith(("memory/", "audit/"))} == {
        n: again[n] for n in again if n.startswith(("memory/", "audit/"))
    }


def test_a_reimport_does_not_parse_known_pages(
    fresh: Callable[[], Memory], monkeypatch: pytest.MonkeyPatch
) -> None:
    source = fresh()
    populate(source)
    data = source.parts.portability.export_archive(at=AT).data
    target = fresh()
    target.parts.portability.import_bytes(data, name="a.tar", mode="restore")

    def parsed(*_: object, **__: object) -> None:
        raise AssertionError("a known page was parsed")

    monkeypatch.setattr(pcp, "decode_page", parsed)
    before = head(target)
    for mode in ("restore", "import"):  # the key is (path, sha256) whichever the mode
        again = target.parts.portability.import_bytes(data, name="a.tar", mode=mode)
        assert (again.created, again.unchanged, head(target)) == ([], 6, before)


def test_a_principal_who_may_not_import_is_refused_before_anything(
    fresh: Callable[[], Memory],
) -> None:
    source = fresh()
    populate(source)
    data = source.parts.portability.export_archive(at=AT).data
    target = fresh()
    stranger = Memory(target.store, policy=target.policy, principal="human:bob")
    with pytest.raises(PolicyDeniedError, match="only human:alice"):
        stranger.parts.portability.import_bytes(data, name="a.tar", owner=OWNER)
    assert target.store.tip(OWNER).length == 0


# -- exports are audited ---------------------------------------------------------------------------


def events(memory: Memory) -> list[str]:
    return [r.decode().event for r in memory.log(OWNER) if r.decode() is not None]  # type: ignore[union-attr]


def test_an_export_appends_one_export_event_after_its_bytes(fresh: Callable[[], Memory]) -> None:
    memory = fresh()
    populate(memory, forgotten=True)
    length = memory.store.tip(OWNER).length
    result = memory.parts.portability.export_archive(at=AT)
    assert memory.store.tip(OWNER).length == length + 1
    last = list(memory.log(OWNER))[-1]
    event = last.decode()
    assert event is not None
    assert event.event == "export"
    assert event.actor == OWNER
    assert event.fields["sha256"] == hashlib.sha256(result.data).hexdigest()
    assert (event.fields["format"], event.fields["items"]) == ("pcp", 6)
    assert len(event.memories) == 6  # the exported pages, not the omitted memories
    for memory_id in event.memories:
        trail = memory.get(memory_id).audit
        assert (trail[-1].action, trail[-1].actor) == ("exported", OWNER)
    assert b'"action":"exported"' not in files_of(result.data)[archive.AUDIT]
    again = files_of(memory.parts.portability.export_archive(at=AT).data)[archive.AUDIT]
    assert again.count(b'"action":"exported"') == 6  # the first export is in the second's log
    assert all(r.ok for r in memory.verify())


@pytest.mark.parametrize("fmt", ["personaxis", "hux"])
def test_exporting_to_a_file_is_audited(
    fresh: Callable[[], Memory], tmp_path: Path, fmt: str
) -> None:
    memory = fresh()
    populate(memory)
    ledger_before = personaxis.encode([r.entry for r in memory.log(OWNER)])
    result = memory.parts.exports.export_to(fmt, tmp_path / f"out.{fmt}", owner=OWNER)
    assert (tmp_path / f"out.{fmt}").read_bytes() == result.data
    if fmt == "personaxis":
        assert result.data == ledger_before  # the file never holds its own export event
    assert events(memory)[-1] == "export"
    assert len(list(memory.log(OWNER))[-1].decode().memories) == 6  # type: ignore[union-attr]


def test_an_export_leaves_a_restored_page_unchanged(fresh: Callable[[], Memory]) -> None:
    source = fresh()
    populate(source)
    data = source.parts.portability.export_archive(at=AT).data
    target = fresh()
    target.parts.portability.import_bytes(data, name="a.tar", mode="restore")
    second = files_of(target.parts.portability.export_archive(at=AT).data)
    third = files_of(target.parts.portability.export_archive(at=AT).data)
    pages = [n for n in second if n.startswith("memory/")]
    assert all(second[n] == third[n] for n in pages)  # `updated` and `review` still stamped
    assert third[archive.AUDIT].count(b'"action":"exported"') == 6
