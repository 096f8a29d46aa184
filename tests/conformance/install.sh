#!/usr/bin/env bash
# Installs the npm packages the conformance test uses, exactly as package-lock.json records them
# (npm ci: the lock file's versions and integrity hashes, nothing resolved anew).
# @modelcontextprotocol/conformance is pinned at 0.1.13: 0.1.14 and later import fs.globSync,
# which Node 20 (the machines' node) does not have, and list the same 32 server scenarios.
set -euo pipefail
cd "$(dirname "$0")"
have=true
for spec in $(node -e 'const p=require("./package.json");for(const[k,v]of Object.entries(p.dependencies))console.log(k+"@"+v)'); do
  name=${spec%@*}; ver=${spec##*@}
  got=$(node -e "try{console.log(require('./node_modules/$name/package.json').version)}catch{}" 2>/dev/null)
  [ "$got" = "$ver" ] || have=false
done
if ! $have; then
  echo "conformance: installing from package-lock.json"
  npm ci --no-audit --no-fund --loglevel=error
fi
