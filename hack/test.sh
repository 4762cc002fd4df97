#!/usr/bin/env bash
# The whole test suite, as CI runs it: installs what the tests need (Debian
# packages, staticcheck), checks formatting and lint, runs every tier with the
# race detector, and starts and stops the libvirt daemons the real-stack tier
# uses. Run as root on Debian 12 (the real stack needs it).
#
#   hack/test.sh            everything
#   hack/test.sh --no-real  skip the real libvirtd + QEMU tier
set -euo pipefail
cd "$(dirname "$0")/.."

real=1
for arg in "$@"; do
	case "$arg" in
	--no-real) real=0 ;;
	*) echo "usage: hack/test.sh [--no-real]" >&2; exit 2 ;;
	esac
done

step() { printf '\n=== %s (%s)\n' "$*" "$(date -u +%H:%M:%S)"; }

# Missing tools fail tests instead of skipping them from here on.
export VIRTKIT_STRICT=1
export GOFLAGS="${GOFLAGS:-} -mod=readonly"

step "install Debian packages"
hack/realstack/install.sh

step "install staticcheck"
GOBIN="$PWD/build/bin" go install honnef.co/go/tools/cmd/staticcheck@v0.8.2

step "gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go') 2>/dev/null || true)
if [ -n "$unformatted" ]; then
	echo "gofmt would change:"; echo "$unformatted"; exit 1
fi

# A plain build needs no libvirt headers (hypervisor/libvirt is a stub);
# the real adapter is the build tag libvirt (Debian libvirt-dev).
step "go vet"
go vet ./...
go vet -tags libvirt ./...
go vet -tags realstack,libvirt ./...

step "build without cgo"
CGO_ENABLED=0 go build ./...
CGO_ENABLED=0 go vet ./...

step "staticcheck"
build/bin/staticcheck ./...
build/bin/staticcheck -tags libvirt ./...

# --- fault-injection suite (test/faults): begin ---
# A real etcd server process (built from the pinned go.etcd.io/etcd/server/v3
# into build/bin/etcd; internal/etcdproc's tests use it too), two controller
# replicas and three node agents as processes, killed, frozen and partitioned
# from etcd while invariants are checked. About 2-3 minutes on 2 cores.
step "fault-injection suite: etcd server binary"
hack/etcd.sh
step "fault-injection suite"
go vet -tags faults ./test/faults/
build/bin/staticcheck -tags faults ./test/faults/
go test -tags faults -race -count=1 -timeout 15m -v ./test/faults/
# --- fault-injection suite: end ---

# --- Prometheus tier (test/prometheus): begin ---
# Debian's prometheus server on loopback with examples/prometheus's rules,
# scraping a `virtkit demo` process: every Grafana dashboard query must
# return data and stopping the control plane must fire VirtControllerDown.
# (The rules' promtool unit tests run in the unit tier below.)
step "Prometheus tier"
go vet -tags prometheus ./test/prometheus/
build/bin/staticcheck -tags prometheus ./test/prometheus/
go test -tags prometheus -race -count=1 -timeout 10m -v ./test/prometheus/
# --- Prometheus tier: end ---

step "unit, sim, libvirt test-driver, qemu-ga, promtool and etcd tiers"
# go test starts builds and runs in the order the packages are named (a
# package named twice runs once): the slowest packages first, so that the
# longest (test/simulation, about 10 minutes) does not start last and run
# alone on one core while the other idles.
long_poles="./test/simulation ./migration/bench ./cmd/virtkit ./node ./apiserver ./cluster ./test/e2e ./cdi/importer . ./apiserver/kubestorage"
go test -race -tags libvirt -timeout 40m $long_poles ./...

# Fuzzing: every target for a bounded number of executions (longer runs
# are in BENCHMARKS.md). A count, not a duration: Go 1.26's fuzzing
# coordinator can report "context deadline exceeded" when a -fuzztime
# duration ends while a worker is busy (golang/go#75804, fixed in Go 1.27).
fuzz() { # package target executions
	go test "$1" -run '^$' -fuzz="^$2\$" -fuzztime="$3x"
}
step "fuzz: manifest decoders, admission, bench profiles"
fuzz . FuzzDecode 10000
fuzz . FuzzDecodeDefaultValidate 10000
fuzz . FuzzDecodeJSON 60000
fuzz . FuzzDecodeYAML 60000
fuzz . FuzzAdmit 60000
fuzz ./migration/bench FuzzDecodeProfiles 60000
step "fuzz: etcd store keys and values, sim state file"
fuzz ./store/etcd FuzzParseKey 30000
fuzz ./store/etcd FuzzDecodeValue 30000
fuzz ./hypervisor/sim FuzzStateFile 20000

if [ "$real" = 1 ]; then
	step "real stack: guest image"
	hack/realstack/build-guest.sh
	step "real stack: Debian cloud image (cached in build/cloud-image)"
	hack/realstack/build-cloud-image.sh
	step "real stack: libvirtd instances"
	hack/realstack/libvirtd.sh start
	trap 'hack/realstack/libvirtd.sh stop || true' EXIT
	pkgs=$(grep -rl --include='*.go' '^//go:build.*realstack' . | xargs -n1 dirname | sort -u | sed 's|^\.|github.com/virtkit/virtkit|')
	step "real stack tier: $(echo $pkgs | wc -w) packages"
	# -p 1: the packages share the two daemons and the one guest image.
	go test -tags realstack,libvirt -p 1 -timeout 45m $pkgs
fi
step "all tests passed"
