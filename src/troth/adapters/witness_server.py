"""``troth witness``: troth serving as a C2SP tlog-witness for other ledgers.

- ``troth witness key`` prints the witness's verifier key (cosignature/v1, type 0x04): what
  a ledger lists beside the witness's URL in its ``sealing.toml``;
- ``troth witness trust LEDGER VERIFIER_KEY`` adds a ledger (its name, the prefix of its
  owners' origins, and the key ``troth seal --verifier-key`` prints there) to the logs file;
- ``troth witness serve`` answers ``POST /add-checkpoint`` and
  ``GET /<SHA-256 of the origin>/checkpoint`` (:mod:`troth.service.cosigning`).

Everything lives in the witness home (``--home``, ``TROTH_WITNESS_HOME``; default
``witness-server`` in the user configuration directory): ``cosigner.key`` (0600),
``logs`` (one ``<ledger> <verifier key>`` a line, read for each request) and ``state/`` (the newest cosigned
checkpoint of each origin). See docs/operations.md, "Serving as a witness".
"""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import click
import platformdirs
from fastapi import FastAPI, Request, Response

from troth.adapters.console import (
    Context,
    emit,
    err_console,
    handled,
    json_option,
    styled,
    with_json,
)
from troth.core.errors import FormatError, InvalidInputError, TrothError
from troth.formats.note import Verifier
from troth.service.cosigning import MAX_BODY, CosigningWitness, TrustedLog
from troth.service.keys import CosignerKey

__all__ = ["create_witness_app", "witness"]

DEFAULT_WITNESS_PORT = 8790
LOGS_FILE = "logs"


def create_witness_app(cosigning: CosigningWitness) -> FastAPI:
    """The witness's HTTP interface (c2sp.org/tlog-witness), no documentation routes."""
    app = FastAPI(title="troth witness", docs_url=None, redoc_url=None, openapi_url=None)

    @app.post("/add-checkpoint")
    async def add_checkpoint(request: Request) -> Response:
        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_BODY:
                return Response(f"a request body is at most {MAX_BODY} bytes\n", 413)
        reply = await anyio.to_thread.run_sync(cosigning.add_checkpoint, body)
        return Response(reply.body, reply.status, media_type=reply.content_type)

    @app.get("/{hashed}/checkpoint")
    async def checkpoint(hashed: str) -> Response:
        reply = await anyio.to_thread.run_sync(cosigning.checkpoint, hashed)
        return Response(reply.body, reply.status, media_type=reply.content_type)

    return app


def read_logs(path: Path) -> list[TrustedLog]:
    """The ledgers a witness home trusts: ``<ledger or origin> <verifier key>`` a line."""
    if not path.exists():
        return []
    out = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        text = line.split("#", 1)[0].strip()
        if text:
            out.append(_trusted(*text.split(None, 1), where=f"{path} line {number}"))
    return out


def _trusted(origin: str, key: str = "", *, where: str) -> TrustedLog:
    if not origin or any(c.isspace() for c in origin) or origin.endswith("/"):
        raise InvalidInputError(f"{where}: {origin!r} is not a ledger name or origin")
    try:
        return TrustedLog(origin, Verifier.from_key(key))
    except FormatError as exc:
        raise InvalidInputError(f"{where}: {exc.message}") from exc


def _home(home: Path | None) -> Path:
    named = home or os.environ.get("TROTH_WITNESS_HOME")
    return Path(named or Path(platformdirs.user_config_dir("troth")) / "witness-server")


home_option = click.option(
    "--home",
    "home",
    type=click.Path(file_okay=False, path_type=Path),
    help="The witness's folder (default: TROTH_WITNESS_HOME, or witness-server in the"
    " user configuration directory).",
)


@click.group()
def witness() -> None:
    """Serve as a witness that cosigns other ledgers' checkpoints (C2SP tlog-witness)."""


@witness.command()
@home_option
@click.option("--name", help="The key's name when it is made (default troth.local/witness/…).")
@json_option
@click.pass_obj
def key(obj: Context, home: Path | None, name: str | None, as_json: bool) -> None:
    """Print the witness's verifier key (made on first use)."""
    ctx = with_json(obj, as_json)
    with handled(ctx):
        vkey = CosignerKey(_home(home) / "cosigner.key").cosigner(name).verifier.to_key()
        emit(ctx, {"verifier_key": vkey}, lambda: click.echo(vkey))


@witness.command()
@home_option
@click.argument("ledger")
@click.argument("verifier_key")
@json_option
@click.pass_obj
def trust(obj: Context, home: Path | None, ledger: str, verifier_key: str, as_json: bool) -> None:
    """Cosign the checkpoints of LEDGER (its name, or one origin) signed by VERIFIER_KEY."""
    ctx = with_json(obj, as_json)
    with handled(ctx):
        _trusted(ledger, verifier_key, where="the ledger")
        folder = _home(home)
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        with open(folder / LOGS_FILE, "a", encoding="utf-8") as handle:
            handle.write(f"{ledger} {verifier_key}\n")
        emit(
            ctx,
            {"ledger": ledger, "verifier_key": verifier_key},
            lambda: click.echo(f"{ledger}: its checkpoints are cosigned from now on"),
        )


@witness.command()
@home_option
@click.option(
    "--log",
    "logs",
    multiple=True,
    type=(str, str),
    metavar="LEDGER VERIFIER_KEY",
    help="Also cosign this ledger's checkpoints (besides the home's logs file).",
)
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=DEFAULT_WITNESS_PORT, show_default=True, type=int)
def serve(home: Path | None, logs: tuple[tuple[str, str], ...], host: str, port: int) -> None:
    """Serve add-checkpoint and the monitoring checkpoint over HTTP until interrupted."""
    import uvicorn

    folder = _home(home)
    try:
        cosigner = CosignerKey(folder / "cosigner.key").cosigner()
        extra = [_trusted(o, k, where="--log") for o, k in logs]
        trusted = read_logs(folder / LOGS_FILE) + extra
    except TrothError as error:
        err_console.print(styled("error:", "bold red", f" {error.message}"))
        raise SystemExit(2) from None
    if not trusted:
        err_console.print(
            styled("warning:", "yellow", " no ledger is trusted yet: every checkpoint gets 404;")
            + " add one with `troth witness trust LEDGER KEY` or --log"
        )

    def current() -> list[TrustedLog]:
        # The logs file is read for each request: `troth witness trust` counts at once,
        # and a file made unreadable meanwhile leaves the logs given at the start.
        try:
            return read_logs(folder / LOGS_FILE) + extra
        except (OSError, TrothError):
            return trusted

    app = create_witness_app(CosigningWitness(folder / "state", cosigner, current))
    print(
        f"troth witness {cosigner.name} on http://{host}:{port}/ for"
        f" {len(trusted)} ledger(s)\nverifier key: {cosigner.verifier.to_key()}",
        flush=True,
    )
    uvicorn.run(app, host=host, port=port, log_level="warning")
