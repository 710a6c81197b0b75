#!/usr/bin/env bash
# Rebuild labkit/widgets/static/code_editor.js (the code editor widget's front end) from js/:
# installs the exact versions in js/package-lock.json, bundles them with esbuild, writes the
# bundled packages' licences beside the bundle. Needs node >= 18 and npm (and the npm registry,
# or a filled npm cache). The result is committed: labkit itself needs no node.
set -euo pipefail
cd "$(dirname "$0")/../js"
npm ci --no-audit --no-fund --loglevel=error
node build.mjs
