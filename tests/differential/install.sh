#!/usr/bin/env bash
# Installs the npm package the differential tests compare against (canonicalize, the RFC 8785
# reference by its author), at the exact version package.json pins. No lock file is kept; the
# version is exact, so the same package comes back every time.
set -euo pipefail
cd "$(dirname "$0")"
want=$(node -e 'const p=require("./package.json");for(const[k,v]of Object.entries(p.dependencies))console.log(k+"@"+v)')
have=true
for spec in $want; do
  name=${spec%@*}; ver=${spec##*@}
  got=$(node -e "try{console.log(require('./node_modules/$name/package.json').version)}catch{}" 2>/dev/null)
  [ "$got" = "$ver" ] || have=false
done
if ! $have; then
  echo "differential: installing $want"
  npm install --no-package-lock --no-audit --no-fund --loglevel=error
fi
