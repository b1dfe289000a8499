#!/usr/bin/env bash
# Install the troth wheel as a user-level command (what `make install` runs):
#   a virtual environment at $PREFIX/lib/troth/venv holding the runtime lock and the wheel,
#   and a link $PREFIX/bin/troth to its console script (PREFIX defaults to ~/.local).
# When a new login shell would not find $PREFIX/bin on PATH, one line adding it is appended
# to the login profile (set TROTH_NO_MODIFY_PATH=1 to only print it). pip honours the usual
# PIP_* variables (PIP_NO_INDEX, PIP_FIND_LINKS) for offline installs.
set -euo pipefail
wheel=${1:?usage: install-user.sh dist/troth-VERSION-py3-none-any.whl}
here=$(cd "$(dirname "$0")/.." && pwd)
prefix=${PREFIX:-$HOME/.local}
venv=${TROTH_INSTALL_VENV:-$prefix/lib/troth/venv}
python=${PYTHON:-python3}
pip=(--quiet --disable-pip-version-check)

test -x "$venv/bin/python" || "$python" -m venv "$venv"
"$venv/bin/python" -m pip install "${pip[@]}" --require-hashes -r "$here/requirements-run.lock"
"$venv/bin/python" -m pip install "${pip[@]}" --no-deps --force-reinstall "$wheel"
mkdir -p "$prefix/bin"
ln -sfn "$venv/bin/troth" "$prefix/bin/troth"
version=$("$prefix/bin/troth" --version)
echo "installed $version as $prefix/bin/troth"

# Would a new login shell find it? Ask one, with the environment a fresh terminal has.
found=$(env -i HOME="$HOME" USER="${USER:-}" SHELL="${SHELL:-/bin/bash}" TERM=dumb \
  bash -lc 'command -v troth' 2>/dev/null || true)
if [ -z "$found" ] || ! [ "$found" -ef "$prefix/bin/troth" ]; then
  line="export PATH=\"$prefix/bin:\$PATH\"  # added by troth's make install"
  profile=$HOME/.profile
  for candidate in "$HOME/.bash_profile" "$HOME/.bash_login"; do
    if [ -e "$candidate" ]; then profile=$candidate; break; fi
  done
  if [ "${TROTH_NO_MODIFY_PATH:-0}" = 1 ]; then
    echo "$prefix/bin is not on a new shell's PATH; add this line to $profile:"
    echo "  $line"
  else
    printf '\n%s\n' "$line" >>"$profile"
    echo "added $prefix/bin to PATH in $profile (open a new shell, or: source $profile)"
  fi
  case "${SHELL:-}" in
    */zsh) echo "zsh: put the same line in ~/.zprofile" ;;
  esac
fi
