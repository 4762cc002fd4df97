#!/usr/bin/env bash
# Builds a real etcd server binary into build/bin/etcd from the
# go.etcd.io/etcd/server/v3 version pinned in go.mod, for the tests that run
# etcd as a separate process (the fault-injection suite in test/faults).
# Idempotent: rebuilds only when the pinned version changed.
set -euo pipefail
cd "$(dirname "$0")/.."

version=$(go list -m -f '{{.Version}}' go.etcd.io/etcd/server/v3)
out=build/bin/etcd
stamp=build/bin/.etcd-version
if [[ -x $out && -f $stamp && $(cat "$stamp") == "$version" ]]; then
	echo "etcd.sh: $out is etcd $version"
	exit 0
fi
mkdir -p build/bin
echo "etcd.sh: building etcd $version into $out"
# The module's root package is etcd's own main (go.etcd.io/etcd/server/v3).
go build -o "$out.tmp" go.etcd.io/etcd/server/v3
mv "$out.tmp" "$out"
echo "$version" >"$stamp"
# Not piped into head: under pipefail, etcd writing after head has exited
# is a SIGPIPE that fails the script (seen on a loaded machine).
v=$("$out" --version)
echo "${v%%$'\n'*}"
