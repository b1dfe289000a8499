#!/usr/bin/env bash
# Install axe-core (the accessibility engine the browser tests inject into the review page)
# into a cache directory, pinned. A no-op when it is already there. Prints axe.min.js's path.
set -euo pipefail
VERSION="4.14.1"
DIR="${TROTH_AXE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/troth/axe-core-$VERSION}"
FILE="$DIR/node_modules/axe-core/axe.min.js"
if [ ! -f "$FILE" ]; then
  mkdir -p "$DIR"
  npm install --prefix "$DIR" --no-save --no-audit --no-fund --loglevel=error "axe-core@$VERSION" >&2
fi
test -f "$FILE"
echo "$FILE"
