#!/bin/sh
# last-release.sh prints the release make test-upgrade upgrades from, as
# "<tag> <commit>": the last line of RELEASES (at the repository's root)
# that names a commit, else the newest v* tag of this clone. It prints
# nothing when no release is recorded yet.
set -eu
cd "$(dirname "$0")/.."
if [ -f RELEASES ]; then
	line=$(grep -v '^[[:space:]]*#' RELEASES | awk 'NF >= 2 && $2 != "-" { last = $1 " " $2 } END { print last }')
	if [ -n "$line" ]; then
		echo "$line"
		exit 0
	fi
fi
tag=$(git tag --list 'v[0-9]*' --sort=-v:refname 2>/dev/null | head -n 1)
if [ -n "$tag" ]; then
	echo "$tag $(git rev-parse --short=12 "$tag^{commit}")"
fi
