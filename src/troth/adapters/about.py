"""``troth info``: where things are — version, home, database, backend, model, principal.

The same description heads the ``serve`` banner (:func:`about_lines`), so the person sees
where the data lives before anything else. Nothing here opens the database: ``info`` on a
new machine creates no file.
"""

from __future__ import annotations

from importlib import metadata
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import click

from troth.adapters.console import Context, emit, handled, json_option, with_json
from troth.config import DATABASE_NAME, Settings, default_embedder, resolve_principal


def masked_url(url: str) -> str:
    """A database URL with its password replaced by ``***`` (safe to print)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return urlunsplit(parts._replace(netloc=f"{parts.username}:***@{host}"))


def describe(settings: Settings, *, principal_origin: str = "login") -> dict[str, Any]:
    """What ``troth info --json`` prints, from the settings alone."""
    if settings.database_url is not None:
        backend, database = "postgresql", masked_url(settings.database_url)
        exists: bool | None = None
    else:
        path = settings.home / DATABASE_NAME
        backend, database, exists = "sqlite", str(path), path.exists()
    embedder = default_embedder()
    return {
        "version": metadata.version("troth"),
        "home": str(settings.home),
        "backend": backend,
        "database": database,
        "database_exists": exists,
        "embedding_model": {"name": embedder.name, "dim": embedder.dim},
        "principal": settings.principal,
        "principal_from": principal_origin,
        "policy": str(settings.policy_path) if settings.policy_path else "packaged default",
    }


def about_lines(about: dict[str, Any]) -> list[str]:
    """The description as aligned lines (``info`` prints them; the serve banner starts so)."""
    model = about["embedding_model"]
    database = about["database"]
    if about["database_exists"] is False:
        database += " (created on first write)"
    return [
        f"troth {about['version']}",
        f"  home          {about['home']}",
        f"  database      {database}",
        f"  backend       {about['backend']}",
        f"  embedding     {model['name']} ({model['dim']} dimensions, packaged, local)",
        f"  principal     {about['principal']}   (from {about['principal_from']})",
        f"  policy        {about['policy']}",
    ]


def principal_origin() -> str:
    """Where the acting principal came from, read off the ``troth`` group's ``--as``."""
    root = click.get_current_context().find_root()
    return resolve_principal(root.params.get("principal"))[1]


@click.command()
@click.option(
    "--principal",
    "only_principal",
    is_flag=True,
    help='Print only the default principal (for scripts: --on-behalf-of "$(troth info --principal)").',
)
@json_option
@click.pass_obj
def info(obj: Context, only_principal: bool, as_json: bool) -> None:
    """Say where things are: version, home, database, backend, embedding model, principal."""
    ctx = with_json(obj, as_json)
    with handled(ctx):
        if only_principal and not ctx.as_json:
            click.echo(ctx.settings.principal)
            return
        about = describe(ctx.settings, principal_origin=principal_origin())
        emit(
            ctx,
            {"principal": about["principal"]} if only_principal else about,
            lambda: click.echo("\n".join(about_lines(about))),
        )
