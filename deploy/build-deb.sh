#!/usr/bin/env bash
# Builds the Debian package of sluice from this tree: deploy/build-deb.sh [OUTDIR]
#
# The repository keeps its debian/ directory under deploy/debian, so this copies the tree
# (the files git tracks or would track; build trees and node_modules stay out) into a scratch
# directory, puts deploy/debian there as debian/, takes the version from meson.build, and runs
# dpkg-buildpackage -b. The .deb lands in OUTDIR (default: the current directory) and its path
# is the last line printed. Needs dpkg-dev, debhelper and the build dependencies in
# deploy/debian/control (.ci/deps installs them). DEB_BUILD_OPTIONS passes through
# (nocheck skips the unit tests, parallel=N sets the jobs).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$(mkdir -p "${1:-.}" && cd "${1:-.}" && pwd)
for tool in dpkg-buildpackage dh; do
  command -v "$tool" >/dev/null || { echo "build-deb: $tool is missing (apt-get install dpkg-dev debhelper)" >&2; exit 1; }
done

scratch=$(mktemp -d "${TMPDIR:-/tmp}/sluice-deb.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
src="$scratch/sluice"
mkdir "$src"
if git -C "$root" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  # Tracked and new-but-not-ignored files, so an uncommitted change is packaged as built.
  (cd "$root" && git ls-files -z -c -o --exclude-standard | xargs -0 -r sh -c \
      'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' sh | tar --null -T - -cf -) | tar -xf - -C "$src"
else
  tar -C "$root" --exclude='./build*' --exclude=node_modules --exclude=./debian -cf - . | tar -xf - -C "$src"
fi
rm -rf "$src/debian"
cp -r "$root/deploy/debian" "$src/debian"

# One version: meson.build's project version, written into the changelog's first line.
version=$(sed -n "s/^  version: '\([^']*\)',.*/\1/p" "$root/meson.build" | head -1)
[ -n "$version" ] || { echo "build-deb: no version in meson.build" >&2; exit 1; }
sed -i "1s/^sluice ([^)]*)/sluice ($version)/" "$src/debian/changelog"

(cd "$src" && dpkg-buildpackage -b -us -uc)
debs=("$scratch"/sluice_"$version"_*.deb)
[ -f "${debs[0]}" ] || { echo "build-deb: dpkg-buildpackage made no .deb" >&2; exit 1; }
cp "${debs[0]}" "$out/"
echo "$out/$(basename "${debs[0]}")"
