"""The wheel works alone: installed into a fresh environment from the runtime lock only."""

from __future__ import annotations

import json
import os
import re
import zipfile
from pathlib import Path

import anyio
import httpx2
from mcp import Client, StdioServerParameters

from tests.install.conftest import Installed
from tests.servers import free_port, serving

ALICE = "human:alice"

OLD = "ledger" + "mind"  # the old name, spelt in two so that this file does not say it


def test_the_wheel_ships_the_model_schemas_page_policy_and_migrations(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    model = "troth/models/minilm-static-128-int8/"
    for part in ("config.json", "embeddings.safetensors", "tokenizer.json"):
        assert model + part in names
    for page in ("index.html", "app.js", "app.css"):
        assert f"troth/adapters/web/{page}" in names
    assert "troth/policy.toml" in names
    assert any(n.startswith("troth/formats/schemas/pcp.") for n in names)
    assert any(n.startswith("troth/formats/uaix/schemas/") for n in names)
    assert any(n.startswith("troth/storage/migrations/postgres/") for n in names)
    assert "troth-0.1.0.dist-info/entry_points.txt" in names


def test_nothing_in_the_wheel_says_the_old_name(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        for name in archive.namelist():
            assert OLD not in name.lower()
            assert OLD.encode() not in archive.read(name).lower(), name


def test_remember_and_recall_from_the_installed_wheel(installed: Installed, tmp_path: Path) -> None:
    env = installed.env(TROTH_HOME=str(tmp_path), TROTH_PRINCIPAL=ALICE)
    kept = json.loads(installed.run("remember", "I prefer green tea", "--json", env=env).stdout)
    assert kept["status"] == "active"
    hits = json.loads(installed.run("recall", "what tea do I like", "--json", env=env).stdout)
    assert [h["id"] for h in hits["hits"]][:1] == [kept["id"]]
    about = json.loads(installed.run("info", "--json", env=env).stdout)
    assert about["embedding_model"]["name"] == "minilm-static-128-int8"
    assert about["database"] == str(tmp_path / "troth.db")
    # The model came from the installed package, not from this checkout.
    assert installed.run("verify", env=env).returncode == 0


def test_serve_from_the_installed_wheel(installed: Installed, tmp_path: Path) -> None:
    port = free_port()
    env = installed.env(TROTH_HOME=str(tmp_path), TROTH_PRINCIPAL=ALICE)
    argv = [str(installed.troth), "serve", "--port", str(port), "--first-token"]
    with serving(argv, env, port) as served:
        assert f"database      {tmp_path / 'troth.db'}" in served.banner
        token = re.search(r"^\s+(troth_t_\S+)$", served.banner, re.MULTILINE)
        assert token is not None, served.banner
        me = httpx2.get(
            f"{served.base}/api/me", headers={"Authorization": f"Bearer {token[1]}"}, timeout=10
        )
        assert me.json()["principal"] == ALICE
        page = httpx2.get(f"{served.base}/", timeout=10)
        assert page.status_code == 200
        assert "<title>" in page.text
        assert OLD not in page.text.lower()
        for asset in ("app.js", "app.css"):
            assert httpx2.get(f"{served.base}/web/{asset}", timeout=10).status_code == 200
        assert OLD not in httpx2.get(f"{served.base}/openapi.json", timeout=10).text


def test_an_mcp_handshake_over_the_installed_troth_mcp(
    installed: Installed, tmp_path: Path
) -> None:
    params = StdioServerParameters(
        command=str(installed.troth),
        args=["--as", "agent:assistant", "mcp", "--on-behalf-of", ALICE],
        env=installed.env(TROTH_HOME=str(tmp_path)),
    )
    seen: dict[str, object] = {}

    async def main() -> None:
        with anyio.fail_after(90):
            async with Client(params) as client:
                tools = await client.list_tools()
                seen["tools"] = {t.name for t in tools.tools}
                wrote = await client.call_tool("memory.write", {"content": "Alice runs"})
                seen["wrote"] = wrote.is_error

    anyio.run(main)
    assert {"memory.search", "memory.write", "context.brief"} <= seen["tools"]  # type: ignore[operator]
    assert seen["wrote"] is False
    assert os.path.exists(tmp_path / "troth.db")
