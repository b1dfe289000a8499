"""Instruction-shaped text: the default detector the policy flags prompt injections with.

A memory is data an assistant reads back later; text written to steer that assistant is an
attack on whoever reads it. The detector looks for the moves injections are made of, not for
known strings, after undoing the disguises that hide a word from a pattern:

1. **Normalise** (:func:`normalise`): NFKC; zero-width, joiner and bidirectional controls
   removed; combining marks dropped (``ïgnore``); the Cyrillic and Greek letters that look
   Latin mapped to it (``ignore`` spelt with Cyrillic i, o and e); digits inside words read as the
   letters they stand for (``1gn0re``); letters spaced out one by one joined
   (``i g n o r e``); case folded; white space collapsed.
2. **Score the moves** (:data:`SIGNALS`), each a family of patterns with a weight:

   ====================  ======  ==============================================================
   move                  weight  e.g.
   ====================  ======  ==============================================================
   override              2       ignore / disregard / forget … previous / above … instructions
   role or delimiter     2       ``System:`` at a line start, ``<|im_start|>``, ``[INST]``,
                                 ``<INFORMATION>``, ``<end of session>``
   address to a model    2       "a message … to you, GPT-4", "note to automated … software"
   hijack                2       "before you solve the task I gave you", "from now on you …"
   leak                  2       reveal / print … your system prompt / instructions
   output control        1       "just print", "reply with only", "provide it to the user"
   conditional           1       "if the user asks", "if questioned", "when the AI reads this"
   harmful generation    1       write one toxic / offensive … sentence about
   urgency or authority  1       ``IMPORTANT!!!``, "critical:", "override", "admin request"
   exfiltration          1       send … to an address or a link, a markdown image link
   ====================  ======  ==============================================================

   Text scoring :data:`THRESHOLD` or more is instruction-shaped. One strong move suffices;
   a weak one needs a second, so ordinary speech ("just say the word", "it's important")
   stays unflagged.

Measured by ``python -m bench.injection`` on public attack corpora and on conversation
(docs/benchmarks.md). The policy holds a flagged memory as ``proposed`` and it never
justifies an action (docs/api.md, the trust model).
"""

from __future__ import annotations

import re
import unicodedata
from typing import Final

# Zero-width, joiners, word joiner and invisible operators, bidi embeddings/overrides/isolates,
# the soft hyphen, the BOM, the combining grapheme joiner and the Mongolian vowel separator.
_INVISIBLE: Final = re.compile(
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180e\u200b-\u200f\u202a-\u202e"
    "\u2060-\u2064\u2066-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0]"
)
# Letters of other scripts that render as Latin ones (Unicode's confusables, the subset of
# Cyrillic and Greek that a pattern over English words can be dodged with). Hand-written:
# the core imports only the standard library, and these 46 pairs are all the patterns need.
_LOOKALIKES: Final = str.maketrans(
    "\u0430\u0435\u043e\u0440\u0441\u0443\u0445\u0456\u0458\u0455\u0501\u04bb\u04cf\u051b"
    "\u051d\u028f\u0261\u03b1\u03b5\u03b9\u03ba\u03bd\u03bf\u03c1\u03c4\u03c5\u03c7\u03f2"
    "\u0410\u0412\u0415\u041a\u041c\u041d\u041e\u0420\u0421\u0422\u0425\u0406\u0408\u0405"
    "\u0391\u0392\u0395\u0396\u0397\u0399\u039a\u039c\u039d\u039f\u03a1\u03a4\u03a5\u03a7",
    "aeopcyxijsdhlqwygaeikvoptuxcabekmhopctxijsabezhikmnoptyx",
)
_QUOTES: Final = str.maketrans("\u2018\u2019\u201c\u201d", "''\"\"")
_LEET: Final = str.maketrans("013457@$", "oieastas")
_MIXED_WORD: Final = re.compile(r"\b(?=\w*[a-z])(?=\w*[0-9@$])[\w@$]+\b")
_SPACED: Final = re.compile(r"\b(?:[a-z] ){3,}[a-z]\b")
_SPACE: Final = re.compile(r"[ \t\r\f\v]+")
# A digit-like character beside a letter. Written to start with a character class, so the
# regex engine skips ahead to candidates in C instead of trying two branches at every
# position: the detector runs on every write (bench.write_cost).
_LEETY: Final = re.compile(r"[0-9@$](?:(?<=[a-z][0-9@$])|(?=[a-z]))")
# What every run of spaced letters holds (its second and third letters, between spaces);
# a literal first character lets the engine skip ahead, so most text never tries _SPACED.
_SPACED_CUE: Final = re.compile(r" [a-z] [a-z] ")


def _uneven_space(text: str) -> bool:
    """Whether ``text`` has a run of spaces, or a tab, return, form feed or vertical tab."""
    return "  " in text or "\t" in text or "\r" in text or "\f" in text or "\v" in text


def normalise(text: str) -> str:
    """``text`` with the disguises above undone, for matching only (never stored)."""
    if text.isascii():  # nothing to compose, decompose or map: most text takes this path
        text = text.lower()
    else:
        text = _INVISIBLE.sub("", unicodedata.normalize("NFKC", text))
        decomposed = unicodedata.normalize("NFKD", text)
        text = "".join(c for c in decomposed if not unicodedata.combining(c))
        text = text.translate(_LOOKALIKES).translate(_QUOTES).casefold()
    # Each rewrite runs only where a cheap search finds what it rewrites.
    if _LEETY.search(text):
        text = _MIXED_WORD.sub(lambda m: m.group().translate(_LEET), text)
    if _SPACED_CUE.search(text) and _SPACED.search(text):
        text = _SPACED.sub(lambda m: m.group().replace(" ", ""), text)
    return _SPACE.sub(" ", text) if _uneven_space(text) else text


_GAP = r"(?:[\w'\",-]+\s+){0,6}?"  # up to six words between the parts of one move
_INSTRUCTIONS = (
    r"(?:\w*struct\w*|directions?|directives?|prompts?|rules|guidelines|guardrails|commands?"
    r"|orders|constraints|restrictions|polic(?:y|ies)|programming|context|task|messages?"
    r"|everything (?:above|before|else)|(?:the )?rest of (?:this|the) (?:data|text|document"
    r"|input|message|email|page))"
)
_MODEL = (
    r"(?:ai|a\.i\.|assistant|chat ?bot|bot|agent|llm|gpt[\w.-]*|claude|gemini|model"
    r"|language model|automated [\w-]+(?: [\w-]+)?|[\w-]+ (?:software|system|scanner)s?)"
)

# Each move: its name, its weight, the words one of which its patterns need (None: they need
# punctuation instead, so they always run), and its patterns. The words let a text skip the
# patterns of every move it cannot contain: most text is ordinary, and the detector runs on
# every write.
SIGNALS: Final[tuple[tuple[str, int, frozenset[str] | None, re.Pattern[str]], ...]] = tuple(
    (name, weight, words, re.compile("|".join(f"(?:{p})" for p in patterns)))
    for name, weight, words, patterns in (
        (
            "override",
            2,
            frozenset(
                [
                    "ignore",
                    "ignoring",
                    "disregard",
                    "forget",
                    "override",
                    "bypass",
                    "skip",
                    "neglect",
                    "abandon",
                    "discard",
                    "aside",
                    "attention",
                    "follow",
                    "obey",
                    "following",
                ]
            ),
            [
                r"\b(?:ignore|disregard|forget|override|bypass|skip|neglect|abandon|discard"
                r"|set aside|pay no attention to|(?:do not|don't|stop) (?:follow|obey)(?:ing)?)"
                rf"\s+{_GAP}(?:previous|prior|above|earlier|preceding|former|original|all|any"
                rf"|your|these|those|the)\b\s*{_GAP}{_INSTRUCTIONS}\b",
                rf"\b(?:ignore|disregard|forget)\s+(?:the above|everything|all of (?:it|that)"
                rf"|{_INSTRUCTIONS})\b",
                r"\bdisregard all (?:info|information|data|text)\b",
                r"\bignore (?:them|it) and (?:instead|just|only)\b",
                r"\b(?:ignore|disregard)\b.{0,50}\b(?:in|of|from) (?:the|this) (?:text|document"
                r"|data|input|email|page|file|resume|message)\b",
            ],
        ),
        (
            "role or delimiter",
            2,
            frozenset(
                [
                    "system",
                    "assistant",
                    "admin",
                    "developer",
                    "ai",
                    "user",
                    "human",
                    "follow",
                    "<",
                    "[",
                    "#",
                    "--",
                ]
            ),
            [
                r"(?:^|\n)\s*[#>*\s]*(?:system|assistant|admin|developer|ai)\s*(?:message)?\s*:",
                r"(?:^|\n)\s*(?:user|human)\s*:.*(?:\n|$)(?:.|\n)*(?:assistant|ai)\s*:",
                r"(?:^|\n)\s*(?:assistant|ai)\s*:(?:.|\n)*(?:^|\n)\s*(?:user|human)\s*:",
                r"<\|?\s*/?\s*(?:system|im_start|im_end|endoftext|end of (?:session|turn|text)"
                r"|start of turn|assistant|instructions?|inst|sys|information|admin)\s*\|?>",
                r"\[\s*/?\s*(?:system|inst|sys|admin(?: request)?|instructions?)\b",
                r"<</?sys>>|###\s*\(?\s*(?:system|instruction)|--+ ?(?:core|system|new)"
                r" instruction|follow instruction\b|\[rest-of-document\]",
            ],
        ),
        (
            "address to a model",
            2,
            frozenset(["humans", "people", "readers", "user"])
            | frozenset(
                [
                    "ai",
                    "assistant",
                    "bot",
                    "chatbot",
                    "agent",
                    "llm",
                    "gpt",
                    "claude",
                    "gemini",
                    "model",
                    "automated",
                    "software",
                    "system",
                    "systems",
                    "scanner",
                    "dan",
                    "jailbroken",
                    "unrestricted",
                    "developer",
                ]
            ),
            [
                rf"\bto you,? (?:{_MODEL}|the ai language model)\b",
                rf"\b(?:note|message|notice|instructions?|attention|reminder|request)"
                rf" (?:to|for) (?:the |all |any )?{_MODEL}\b",
                rf"\b(?:hidden|secret|invisible) [\w-]+(?: [\w-]+)? for {_MODEL}",
                r"\b(?:invisible|hidden) (?:to|from) (?:humans|people|the user|readers)\b",
                rf"\bvisible (?:only )?to (?:the )?{_MODEL}\b",
                rf"\b(?:dear|hey|hi|attention) {_MODEL}[,:!]",
                r"\byou are (?:now|no longer) (?:an? |the |in )?(?:ai|assistant|dan|jailbroken"
                r"|unrestricted|free of|bound by|(?:developer|god|dan) mode)\b",
            ],
        ),
        (
            "hijack",
            2,
            frozenset(
                [
                    "if",
                    "before",
                    "task",
                    "instruction",
                    "instructions",
                    "question",
                    "now",
                    "henceforth",
                    "forward",
                    "stop",
                    "deviate",
                    "new",
                    "updated",
                    "real",
                    "true",
                    "actual",
                    "hidden",
                    "your",
                    "focus",
                    "instead",
                    "rather",
                ]
            ),
            [
                r"\bbefore you (?:can )?(?:solve|do|answer|complete|continue|start|proceed"
                r"|finish|reply|respond|summari[sz]e)\b",
                r"\bthe (?:task|instructions?|question) (?:that )?(?:i|the user|they|he|she)"
                r" (?:gave|asked|assigned|told) you\b",
                r"\b(?:from now on|henceforth|going forward),? (?:you|the assistant|the ai)"
                r" (?:must|will|should|shall|are|have to|need to)\b",
                r"\bstop (?:everything|all (?:tasks|actions)|what you(?:'re| are) doing)\b",
                r"\byou should immediately stop\b|\byou may not deviate\b",
                r"\b(?:new|updated|real|true|actual|hidden) (?:system )?(?:task|instructions?"
                r"|objective|goal|directive)s?\s*:",
                r"\byour (?:new|real|actual|true) (?:task|instructions?|goal|job|purpose)\b",
                r"\bif (?:the |a )?(?:user|anyone|someone|somebody) (?:asks?|asked)\b.{0,80}"
                r"\b(?:say|tell|answer|reply|respond|claim|report)\b",
                r"\bfocus (?:only|exclusively|solely) on (?:the following|this|the information)",
                r"\b(?:instead|rather),? (?:just )?(?:focus|print|say|output|write|reply"
                r"|respond|send|do the following)\b",
            ],
        ),
        (
            "leak",
            2,
            frozenset(
                [
                    "reveal",
                    "print",
                    "show",
                    "repeat",
                    "leak",
                    "output",
                    "spell",
                    "display",
                    "tell",
                    "not",
                    "don",
                    "never",
                ]
            ),
            [
                r"\b(?:reveal|print|show|repeat|leak|output|spell check|display|tell me)\b"
                r".{0,40}\b(?:system prompt|(?:previous|initial|original|hidden|your)"
                r" (?:instructions|prompt|directions))\b",
                r"\b(?:do not|don't|never) (?:tell|inform|let|alert|mention (?:this )?to)"
                r" (?:the )?(?:user|human|owner)\b",
            ],
        ),
        (
            "output control",
            1,
            frozenset(
                [
                    "just",
                    "only",
                    "simply",
                    "instead",
                    "reply",
                    "respond",
                    "answer",
                    "print",
                    "say",
                    "output",
                    "repeat",
                    "write",
                    "translate",
                    "absolutely",
                    "report",
                    "provide",
                    "use",
                    "focus",
                ]
            ),
            [
                r"\b(?:just|only|simply|instead) (?:say|print|output|reply|respond|answer|write"
                r"|repeat|report|return|state)\b",
                r"\b(?:reply|respond|answer) (?:only )?with (?:only|exactly|just|the following"
                r"|[\"'<])",
                r"\b(?:print|say|output|repeat|write) (?:the following|exactly|verbatim|back"
                r"|[\"'<])",
                r"\btranslate (?:this|the) (?:sentence|text) as\b|\band absolutely nothing else\b",
                r"\b(?:report|output|print|respond|reply|answer)(?: that)?\s*:\s",
                r"\bprovide (?:it|this|them) to the user\b|\breport that\b",
                r"\buse this (?:analysis|information|text|result) to\b",
                r"\bfocus (?:only|exclusively|solely) on\b",
            ],
        ),
        (
            "conditional",
            1,
            frozenset(["if", "when", "whenever", "chain"]),
            [
                r"\bif (?:the )?(?:user|anyone|someone|somebody|a user|you are) (?:asks?|asked"
                r"|questions?)\b",
                r"\bif (?:asked|questioned|prompted)\b",
                rf"\bwhen(?:ever)? (?:the |an? )?{_MODEL} (?:reads?|sees?|processe?s?"
                rf"|summari[sz]es?)\b",
                r"\bchain of thought\b",
            ],
        ),
        (
            "turn or directive marker",
            1,
            frozenset(
                [
                    "user",
                    "human",
                    "assistant",
                    "todo",
                    "action",
                    "required",
                    "instruction",
                    "instructions",
                    "task",
                    "step",
                ]
            ),
            [
                r"\n\s*(?:user|human|assistant)\s*:",
                r"(?:^|\n)\s*(?:todo|action required|required action|instructions?|task"
                r"|step \d+)\s*:",
            ],
        ),
        (
            "action demand",
            1,
            frozenset(
                [
                    "delete",
                    "remove",
                    "erase",
                    "wipe",
                    "change",
                    "modify",
                    "reset",
                    "transfer",
                    "send",
                    "forward",
                    "email",
                    "mail",
                    "pay",
                    "create",
                    "invite",
                    "add",
                    "post",
                    "upload",
                    "book",
                    "make",
                    "visit",
                    "concatenate",
                    "update",
                    "grant",
                    "disable",
                    "enable",
                    "get",
                    "say",
                    "tell",
                ]
            ),
            [
                r"(?:^|[.!:]\s+|\n)(?:please\s+)?(?:delete|remove|erase|wipe|change|modify"
                r"|reset|transfer|send|forward|e-?mail|pay|create|invite|add|post|upload|book"
                r"|visit|concatenate|update|grant|disable|enable|get|make an? (?:reservation"
                r"|payment|transfer|booking)|say that|tell (?:the user|them|him|her) that)\b",
            ],
        ),
        (
            "harmful generation",
            2,
            frozenset(["write", "generate", "compose", "produce", "create", "say"]),
            [
                r"\b(?:write|generate|compose|produce|create|say) (?:one|a|an|some|\d+)"
                r" (?:toxic|offensive|harmful|discriminatory|hateful|racist|sexist|derogatory"
                r"|insulting|negative|unfriendly|rude|mean|threatening|violent)\b",
            ],
        ),
        (
            "urgency or authority",
            1,
            frozenset(
                [
                    "!!",
                    "important",
                    "critical",
                    "urgent",
                    "warning",
                    "attention",
                    "verified",
                    "approved",
                    "authorized",
                    "authorised",
                    "admin",
                    "override",
                    "test",
                ]
            ),
            [
                r"\bimportant\s*!{2,}|!!!|\b(?:critical|urgent|warning|attention)\s*:",
                r"\b(?:extremely|really|very) important\b.{0,40}\b(?:extremely|really|very)"
                r" important\b|\bthis is (?:an? )?(?:really |extremely |very )?important"
                r" (?:message|instruction|note)\b",
                r"\b(?:pre-?verified|pre-?approved|authori[sz]ed) by\b|\badmin request\b"
                r"|\boverride\b|\bthis is a test\b",
            ],
        ),
        (
            "exfiltration",
            1,
            frozenset(
                [
                    "send",
                    "email",
                    "mail",
                    "forward",
                    "transfer",
                    "post",
                    "upload",
                    "share",
                    "leak",
                    "give",
                    "wire",
                    "visit",
                    "href",
                    "](",
                ]
            ),
            [
                r"\b(?:send|e-?mail|forward|transfer|post|upload|share|leak|give|wire)\b.{0,160}"
                r"\b(?:to|with)\b.{0,60}(?:[\w.+-]+@[\w-]+\.\w|https?://|\biban\b"
                r"|\b[\w-]+\.(?:com|net|org|io|biz|top|xyz|ru|info)\b)",
                r"!\[[^\]]*\]\(\s*https?://|\bvisit\s+(?:https?://|\[|<|[\w-]+\.\w{2,})",
                r"<a href=|\]\(https?://",
            ],
        ),
    )
)
THRESHOLD: Final = 2
_WEIGHTS: Final = {name: weight for name, weight, _, _ in SIGNALS}


_WORD: Final = re.compile(r"[a-z]+")
_MARKS: Final = (":", "<", "[", "#", "--", "!!", "](")
_MARK_CUE: Final = re.compile(r"[:<\[#!\]-]")  # the first characters of the marks above
# Every word some move needs, and whether a move needs none: a text with none of these
# words cannot score, and skips the loop over the moves (most text is ordinary).
_ANY_NEEDED: Final = frozenset().union(*(needs for _, _, needs, _ in SIGNALS if needs))
_SOME_MOVE_NEEDS_NO_WORD: Final = any(needs is None for _, _, needs, _ in SIGNALS)


def injection_score(text: str) -> tuple[int, tuple[str, ...]]:
    """The score of ``text`` and the moves found in it (each counted once)."""
    normal = normalise(text)
    words = set(_WORD.findall(normal))
    if _MARK_CUE.search(normal):
        words.update(mark for mark in _MARKS if mark in normal)
    if not _SOME_MOVE_NEEDS_NO_WORD and words.isdisjoint(_ANY_NEEDED):
        return 0, ()
    found = tuple(
        name
        for name, _, needs, pattern in SIGNALS
        if (needs is None or not needs.isdisjoint(words)) and pattern.search(normal)
    )
    return sum(_WEIGHTS[name] for name in found), found


def looks_like_injection(text: str) -> bool:
    """True when ``text`` is shaped as an instruction to the assistant that will read it."""
    return injection_score(text)[0] >= THRESHOLD
