"""``make run`` on the embedded default: a short CLI walkthrough of the ledger's life.

It remembers, recalls, proposes and approves, redacts and verifies, printing each command
as a person would type it. The data lives in TROTH_HOME (default: ./.troth-demo).
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path


def run(home: Path, *args: str) -> dict[str, object]:
    """Run one CLI command with --json, echo it, and return its parsed output."""
    command = ["troth", "--home", str(home), *args]
    print(f"$ {shlex.join(command)}")
    done = subprocess.run(
        [sys.executable, "-m", "troth.adapters.cli", "--home", str(home), "--json", *args],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        print(done.stdout or done.stderr)
        raise SystemExit(done.returncode)
    data: dict[str, object] = json.loads(done.stdout)
    print(json.dumps(data, ensure_ascii=False)[:300])
    return data


def main() -> None:
    """Walk through remember → recall → propose → approve → redact → verify."""
    home = Path(os.environ.get("TROTH_HOME", ".troth-demo")).resolve()
    print(f"troth walkthrough — data in {home}\n")
    kept = run(home, "remember", "I prefer green tea in the afternoon", "--kind", "preference")
    run(home, "recall", "what tea do I like")
    proposed = run(
        home,
        "--as",
        "agent:assistant",
        "remember",
        "The user is training for a marathon in May",
        "--owner",
        f"{kept['owner']}",
        "--source",
        "synthesis",
    )
    run(home, "approve", str(proposed["id"]))
    secret = run(
        home, "remember", "My locker code at the gym is 4417", "--reason", "so I do not forget it"
    )
    run(home, "redact", str(secret["id"]), "--reason", "changed my mind", "--yes")
    run(home, "verify")
    print("\nDone. Try `troth --home", home, "list` or `troth --help`.")


if __name__ == "__main__":
    main()
