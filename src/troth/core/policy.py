"""Consent policy as data: approval modes, sensitivity, trust and channel rights.

The policy is configuration; this module only interprets a parsed document. The default
document ships in the package (``troth/policy.toml``) and is documented in
``docs/ledger.md``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from troth.core.errors import InvalidInputError, PolicyDeniedError
from troth.core.injection import looks_like_injection
from troth.core.records import (
    APPROVAL_MODES,
    CHANNELS,
    TOPICS,
    MemoryRecord,
    check_choice,
    principal_kind,
)
from troth.core.topics import looks_like_health, looks_like_minor

Detector = Callable[[str], bool]

_SECRET_PATTERNS = [
    r"\b(password|passwd|passcode|pin code|api[ _-]?key|secret key|access token|auth token)"
    r"\s*(is|:|=)\s*\S+",
    r"\bsk-[A-Za-z0-9_-]{16,}",
    r"\bgh[pousr]_[A-Za-z0-9]{20,}",
    r"\bAKIA[0-9A-Z]{16}\b",
    r"\bxox[abprs]-[A-Za-z0-9-]{10,}",
    r"-----BEGIN [A-Z ]*PRIVATE KEY-----",
    r"\b\d{4}[ -]?\d{4}[ -]?\d{4}[ -]?\d{4}\b",
]
_SECRET = re.compile("|".join(f"(?:{p})" for p in _SECRET_PATTERNS[:-1]), re.IGNORECASE)
_CARD = re.compile(_SECRET_PATTERNS[-1])
# Sixteen digits with optional separators, without the word boundaries: it starts with a
# character class, so the engine skips in C to the first digit; only a hit tries _CARD.
_CARD_CUE = re.compile(r"\d{4}[ -]?\d{4}[ -]?\d{4}[ -]?\d{4}")


def _may_hold_key(lowered: str) -> bool:
    """Whether a case-folded text holds what every pattern but the card number needs: one
    of the patterns' words or prefixes. Most text holds none and skips seven alternatives
    tried at every position (the policy reads every write; bench.write_cost)."""
    return (
        "pass" in lowered
        or "pin" in lowered
        or "api" in lowered
        or "key" in lowered
        or "token" in lowered
        or "sk-" in lowered
        or "_" in lowered
        or "akia" in lowered
        or "xox" in lowered
        or "-----" in lowered
    )


def looks_like_secret(text: str) -> bool:
    """The default credentials detector: passwords, API keys, private keys, card numbers."""
    if _may_hold_key(text.casefold()) and _SECRET.search(text):
        return True
    return bool(_CARD_CUE.search(text) and _CARD.search(text))


@dataclass(frozen=True, slots=True)
class Rule:
    """One approval rule; empty conditions match everything."""

    mode: str
    why: str
    topics: tuple[str, ...] = ()
    channels: tuple[str, ...] = ()
    writers: tuple[str, ...] = ()

    def matches(self, *, topic: str, channel: str, writer: str) -> bool:
        """True when every condition the rule names holds."""
        return (
            (not self.topics or topic in self.topics)
            and (not self.channels or channel in self.channels)
            and (
                not self.writers
                or writer in self.writers
                or (writer == "self" and "human" in self.writers)
            )
        )


@dataclass(frozen=True, slots=True)
class Decision:
    """What the policy decided for one write, and why."""

    mode: str
    sensitivity: str
    topic: str
    flagged: bool
    why: str


@dataclass(frozen=True, slots=True)
class Justification:
    """Whether memories may justify a sensitive action: the answer, its reason, and the
    memory that decided it (the weakest source: its id, channel and the writer of its origin)."""

    allowed: bool
    action: str
    required: int
    trust: int
    reason: str
    weakest: Mapping[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view: the one answer every surface gives (docs/api.md, the gate)."""
        return {
            "allowed": self.allowed,
            "action": self.action,
            "required": self.required,
            "trust": self.trust,
            "reason": self.reason,
            "weakest": None if self.weakest is None else dict(self.weakest),
        }


def _named(memory: MemoryRecord, trust: int) -> dict[str, Any]:
    """The source a gate answer names: which memory, through which channel, written by whom."""
    return {
        "memory": memory.id,
        "channel": memory.channel,
        "writer": memory.writer,
        "trust": trust,
        "flagged": memory.flagged,
        "endorsed_by": list(memory.endorsed_by),
    }


@dataclass(frozen=True)
class Policy:
    """An interpreted policy document; detectors are pluggable functions."""

    rules: tuple[Rule, ...]
    default_mode: str
    sensitive_topics: frozenset[str]
    trust: Mapping[str, int]
    actions: Mapping[str, int]
    channels: Mapping[str, tuple[str, ...]]
    injection_detector: Detector | None = looks_like_injection
    secret_detector: Detector | None = looks_like_secret
    minor_detector: Detector | None = looks_like_minor
    health_detector: Detector | None = looks_like_health
    source: Mapping[str, Any] = field(default_factory=dict)
    destroy_at_once: tuple[str, ...] = ("self", "service")

    @classmethod
    def from_document(
        cls,
        document: Mapping[str, Any],
        *,
        injection_detector: Detector | None = None,
        secret_detector: Detector | None = None,
    ) -> Policy:
        """Interpret a parsed policy document, with a precise error for each defect."""
        approval = _table(document, "approval")
        rules = []
        for index, raw in enumerate(approval.get("rules", [])):
            where = f"approval.rules[{index}]"
            if not isinstance(raw, Mapping):
                raise InvalidInputError(f"policy {where} must be a table")
            mode = check_choice(raw.get("mode"), APPROVAL_MODES, f"policy {where}.mode")
            rules.append(
                Rule(
                    mode=mode,
                    why=str(raw.get("why", f"rule {index + 1}")),
                    topics=_choices(raw.get("topics", []), TOPICS, f"{where}.topics"),
                    channels=_choices(raw.get("channels", []), CHANNELS, f"{where}.channels"),
                    writers=_choices(
                        raw.get("writers", []),
                        ("self", "human", "agent", "org", "service"),
                        f"{where}.writers",
                    ),
                )
            )
        default_mode = check_choice(
            approval.get("default", "ask"), APPROVAL_MODES, "policy approval.default"
        )
        trust = {c: int(_table(document, "trust").get(c, 0)) for c in CHANNELS}
        actions = {str(k): int(v) for k, v in _table(document, "actions").items()}
        channels = {
            kind: _choices(_table(document, "channels").get(kind, []), CHANNELS, f"channels.{kind}")
            for kind in ("human", "agent", "org", "service")
        }
        detectors = _table(document, "detectors")
        return cls(
            rules=tuple(rules),
            default_mode=default_mode,
            sensitive_topics=frozenset(
                _choices(_table(document, "sensitivity").get("topics", []), TOPICS, "sensitivity")
            ),
            trust=trust,
            actions=actions,
            channels=channels,
            injection_detector=(
                injection_detector or looks_like_injection
                if detectors.get("injection", True)
                else None
            ),
            secret_detector=(
                secret_detector or looks_like_secret if detectors.get("credentials", True) else None
            ),
            minor_detector=looks_like_minor if detectors.get("minors", True) else None,
            health_detector=looks_like_health if detectors.get("health", True) else None,
            source=document,
            destroy_at_once=_choices(
                _table(document, "destructive").get("at_once", ["self", "service"]),
                ("self", "human", "agent", "org", "service"),
                "destructive.at_once",
            ),
        )

    def most_trusted(self) -> frozenset[str]:
        """The channels of the highest trust (``user`` in the shipped policy): what a person
        wrote through their own channel, the one bar a weaker source never reaches."""
        if not self.trust:
            return frozenset()
        top = max(self.trust.values())
        return frozenset(channel for channel, trust in self.trust.items() if trust == top)

    def destroys_at_once(self, *, actor: str, owner: str) -> bool:
        """Whether ``actor`` may forget or redact ``owner``'s memory at once; anyone else's
        forget or redact is a request the person approves (``[destructive] at_once``)."""
        kind = principal_kind(actor)
        writer = "self" if kind == "human" and actor == owner else kind
        return writer in self.destroy_at_once or (
            writer == "self" and "human" in self.destroy_at_once
        )

    def allowed_channels(self, *, actor: str, owner: str) -> tuple[str, ...]:
        """The channels ``actor`` may write through into ``owner``'s ledger: the policy's
        list for its kind, less what is built in and cannot be widened — ``user`` only for a
        person writing for themselves, ``internal`` only for people and service principals
        (an agent's account is never the system's own)."""
        kind = principal_kind(actor)
        return tuple(
            c for c in self.channels.get(kind, ()) if _built_in_allows(c, kind, actor, owner)
        )

    def check_channel(self, *, actor: str, owner: str, channel: str) -> None:
        """Refuse a channel stronger than the writer's credentials give it."""
        check_choice(channel, CHANNELS, "source")
        kind = principal_kind(actor)
        if channel in self.channels.get(kind, ()) and _built_in_allows(channel, kind, actor, owner):
            return  # allowed (every write asks): no list of the others to name
        allowed = self.allowed_channels(actor=actor, owner=owner)
        if channel == "user" and not (kind == "human" and actor == owner):
            raise PolicyDeniedError(
                f"only the human owner writing for themselves may use the user channel; "
                f"{actor} writing for {owner} may use {', '.join(allowed) or 'none'}",
                actor=actor,
                owner=owner,
                channel=channel,
            )
        if channel == "internal" and kind not in ("human", "service"):
            raise PolicyDeniedError(
                f"{actor} may not write through the internal channel: it is the"
                " installation's own components' (service principals); use"
                f" {', '.join(allowed) or 'none'}",
                actor=actor,
                channel=channel,
            )
        if channel not in allowed:
            raise PolicyDeniedError(
                f"a {kind} principal may not write through the {channel} channel; "
                f"allowed: {', '.join(allowed) or 'none'}",
                actor=actor,
                channel=channel,
            )

    def read_topic(self, content: str) -> str | None:
        """The topic a text is about when its writer named none: the content rules apply
        whatever the writer said (credentials, then minors, then health), else None."""
        for topic, detector in (
            ("credentials", self.secret_detector),
            ("minors", self.minor_detector),
            ("health", self.health_detector),
        ):
            if detector is not None and detector(content):
                return topic
        return None

    def decide(self, *, content: str, topic: str, channel: str, actor: str, owner: str) -> Decision:
        """The approval mode, sensitivity and flags for one write."""
        check_choice(topic, TOPICS, "topic")
        read_as = self.read_topic(content) if topic == "general" else None
        topic = read_as or topic
        writer = (
            "self" if principal_kind(actor) == "human" and actor == owner else principal_kind(actor)
        )
        mode, why = self.default_mode, "default"
        for rule in self.rules:
            if rule.matches(topic=topic, channel=channel, writer=writer):
                mode, why = rule.mode, rule.why
                break
        if read_as is not None:
            why = f"{why} (the text reads as {read_as})"
        flagged = self.injection_detector is not None and self.injection_detector(content)
        if flagged and mode == "automatic":
            mode, why = "ask", "the text reads as an instruction to the assistant; held for review"
        sensitivity = "sensitive" if topic in self.sensitive_topics else "normal"
        return Decision(mode=mode, sensitivity=sensitivity, topic=topic, flagged=flagged, why=why)

    def justify(self, action: str, memories: Sequence[MemoryRecord]) -> Justification:
        """May these memories justify a sensitive action? The weakest channel decides."""
        if action not in self.actions:
            raise InvalidInputError(
                f"unknown action {action!r}; known actions: {', '.join(sorted(self.actions))}",
                field="action",
            )
        required = self.actions[action]
        if not memories:
            return Justification(False, action, required, 0, "no memory was given to justify it")
        inactive = [m for m in memories if m.status != "active" or not m.retrievable]
        if inactive:
            return Justification(
                False,
                action,
                required,
                0,
                f"memories not active: {', '.join(m.id for m in inactive)}",
                _named(inactive[0], 0),
            )
        flagged = [m for m in memories if m.flagged]
        if flagged:
            # Instruction-shaped text is data someone wanted obeyed: whoever approved it,
            # it never vouches for an action (docs/api.md, the trust model).
            return Justification(
                False,
                action,
                required,
                0,
                f"memory {flagged[0].id} is flagged as instruction-shaped text; a flagged memory"
                " never justifies an action",
                _named(flagged[0], 0),
            )
        # The weakest source decides; the first of equals is named, so the answer is stable.
        weakest = min(memories, key=lambda m: self.trust[m.channel])
        trust = self.trust[weakest.channel]
        named = _named(weakest, trust)
        writer = named["writer"]
        if trust >= required:
            return Justification(
                True,
                action,
                required,
                trust,
                f"weakest source: memory {weakest.id}, written by {writer} through"
                f" {weakest.channel} (trust {trust}), meets {required}",
                named,
            )
        return Justification(
            False,
            action,
            required,
            trust,
            f"{action} needs trust {required}; memory {weakest.id} came through "
            f"{weakest.channel} (trust {trust}), written by {writer}, which cannot justify it"
            + (
                f" (endorsed by {', '.join(weakest.endorsed_by)}: an endorsement does not"
                " raise a source's trust)"
                if weakest.endorsed_by
                else ""
            ),
            named,
        )


def _table(document: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    value = document.get(name, {})
    if not isinstance(value, Mapping):
        raise InvalidInputError(f"policy [{name}] must be a table")
    return value


def _choices(values: object, allowed: tuple[str, ...], where: str) -> tuple[str, ...]:
    if not isinstance(values, list):
        raise InvalidInputError(f"policy {where} must be a list")
    return tuple(check_choice(v, allowed, f"policy {where}") for v in values)


def _built_in_allows(channel: str, kind: str, actor: str, owner: str) -> bool:
    # What no policy can widen: ``user`` only for a person writing for themselves,
    # ``internal`` only for people and service principals.
    return (channel != "user" or (kind == "human" and actor == owner)) and (
        channel != "internal" or kind in ("human", "service")
    )
