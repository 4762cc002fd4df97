#!/usr/bin/env bash
# Builds `virtkit` from two trees side by side and runs `virtkit bench scale`
# with each, alternating, RUNS times (default 3), in the same spell, then
# prints every run and the ratios NEW/OLD of the medians: the figures
# BENCHMARKS.md records per release.
#
#   hack/bench-compare.sh OLD_REF [NEW_REF] [-- BENCH_SCALE_FLAGS...]
#
# NEW_REF defaults to the working tree as it is (uncommitted changes
# included). Flags after -- go to `virtkit bench scale` unchanged (default:
# --vms 1000); e.g. `hack/bench-compare.sh v0.9.0 -- --store etcd --vms
# 1000,10000`. Environment: RUNS (3), OUT (a directory for the binaries,
# JSON results and the summary; default a fresh one under build/).
#
# With --store etcd the bench starts its own etcd (build/bin/etcd from
# hack/etcd.sh, or $VIRTKIT_ETCD_BIN) for every count; both trees use the
# same etcd binary, so only virtkit differs. Run on a quiet machine and
# record `uptime` with the figures: times are only comparable within one run
# of this script.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

if [[ $# -lt 1 || $1 == -h || $1 == --help ]]; then
	sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'
	exit 2
fi
old_ref=$1
shift
new_ref=
if [[ $# -gt 0 && $1 != -- ]]; then
	new_ref=$1
	shift
fi
[[ $# -gt 0 && $1 == -- ]] && shift
flags=("$@")
[[ ${#flags[@]} -eq 0 ]] && flags=(--vms 1000)
runs=${RUNS:-3}
out=${OUT:-$root/build/bench-compare/$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$out"

worktrees=()
cleanup() {
	for wt in "${worktrees[@]}"; do
		git worktree remove --force "$wt" >/dev/null 2>&1 || true
	done
}
trap cleanup EXIT

# build REF NAME: builds virtkit at REF (empty: the working tree) into
# $out/virtkit-NAME.
build() {
	local ref=$1 name=$2 src=$root
	if [[ -n $ref ]]; then
		src=$out/src-$name
		git worktree add --detach "$src" "$ref" >/dev/null
		worktrees+=("$src")
	fi
	echo "bench-compare: building $name (${ref:-working tree}, $(git -C "$src" rev-parse --short HEAD))" >&2
	(cd "$src" && go build -o "$out/virtkit-$name" ./cmd/virtkit)
}
build "$old_ref" old
build "$new_ref" new
if printf '%s\n' "${flags[@]}" | grep -qx -- etcd; then
	hack/etcd.sh >&2
	export VIRTKIT_ETCD_BIN=${VIRTKIT_ETCD_BIN:-$root/build/bin/etcd}
fi

echo "bench-compare: ${runs} runs each, alternating; uptime: $(uptime)" >&2
for i in $(seq 1 "$runs"); do
	for name in old new; do
		echo "bench-compare: run $i $name: virtkit bench scale ${flags[*]}" >&2
		"$out/virtkit-$name" bench scale "${flags[@]}" -o json >"$out/$name-$i.json"
	done
done

# The summary: one line per run and count, then the ratios of the medians.
go run ./hack/benchcompare "$out" "$runs" | tee "$out/summary.txt"
echo "bench-compare: results in $out" >&2
