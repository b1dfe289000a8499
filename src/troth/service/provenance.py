"""An edit derives from what it supersedes: the plan of a new version inherits its source.

:func:`inherit` runs inside the owner's transaction, once the superseded memory is read
(``Ledger.write_plan``), for every path that writes a new version — ``Memory.edit``, an
agent's ``memory.update``, an import's version history. The new version's channel is the
weakest of the superseded memory's and the editor's (``core.provenance``), its origin names
that source's writer, an edit by the owner themselves is recorded as their endorsement, and a
flagged memory's successor stays flagged whatever its new text says.
"""

from __future__ import annotations

from dataclasses import replace

from troth.core.chain import INJECTION_TAG
from troth.core.provenance import ENDORSED_FIELD, ORIGIN_FIELD, Source, source_of, weakest
from troth.core.records import PRINCIPAL_PATTERN, MemoryRecord, principal_kind
from troth.service.drafts import CreationPlan


def inherit(plan: CreationPlan, old: MemoryRecord) -> CreationPlan:
    """``plan`` (a new version of ``old``) with the source it derives, never a stronger one."""
    event = plan.event
    editor = Source(plan.channel, event.actor)
    kept = weakest([source_of(old), editor], plan.trust)
    fields = dict(event.fields)
    fields.pop(ORIGIN_FIELD, None)
    if kept != editor:
        fields[ORIGIN_FIELD] = kept.to_json()
    # The owner's own edit vouches for the new text; an agent's waits for their approval.
    if event.actor == plan.owner and principal_kind(event.actor) == "human":
        fields[ENDORSED_FIELD] = [event.actor]
    reserved = plan.reserved
    if old.flagged and not fields.get("flagged"):
        # Derived from instruction-shaped text: still that, even if the new words pass the
        # detector (a paraphrase is the oldest way around one).
        fields["flagged"] = True
        fields["tags"] = [*fields.get("tags", ()), INJECTION_TAG]
        reserved = (*reserved, INJECTION_TAG)
    return replace(
        plan, event=replace(event, fields=fields), channel=kept.channel, reserved=reserved
    )


def imported(plan: CreationPlan, writer: object) -> CreationPlan:
    """``plan`` of an imported item naming the writer its source gave (``x_import.source``).

    The importer writes the entry; the text's origin is the source's principal, kept as the
    origin so every surface names who wrote it. An ill-formed principal is left out.
    """
    if not isinstance(writer, str) or writer == plan.event.actor:
        return plan
    if not PRINCIPAL_PATTERN.fullmatch(writer):
        return plan
    fields = {**plan.event.fields, ORIGIN_FIELD: Source(plan.channel, writer).to_json()}
    return replace(plan, event=replace(plan.event, fields=fields))
