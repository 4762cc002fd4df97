#!/usr/bin/env bash
# Regenerates apiserver/openapi/zz_generated.openapi.go, the OpenAPI
# definitions of every type the API server serves, with kube-openapi's
# openapi-gen at the version go.mod pins (its tool directive keeps the
# generator's dependencies in go.sum; only the Go module proxy is used, and
# only if the module cache lacks them).
#
#   hack/openapi-gen.sh        regenerate in place
#   hack/openapi-gen.sh DIR    write zz_generated.openapi.go and the API rule
#                              report (violations.list) to DIR instead; the
#                              staleness test uses this
#
# openapi-gen's API rule linter reports fields that break Kubernetes' API
# conventions. The accepted ones are recorded in
# apiserver/openapi/violation_exceptions.list, which may only shrink: a
# violation not in it fails the script (fix the type instead). When
# violations go away, an in-place run drops them from the list.
#
# Exit status: 0 done, 1 generation failed or new API rule violations,
# 2 the generator could not be built (no Go toolchain or modules missing).
set -euo pipefail
cd "$(dirname "$0")/.."

pkg=github.com/virtkit/virtkit/apiserver/openapi
dir=apiserver/openapi
exceptions=$dir/violation_exceptions.list

# Every package whose types the server serves or references: the root
# package (all virtkit kinds) and the Kubernetes packages of metadata,
# core v1 (Namespace, ConfigMap, Secret, ServiceAccount, Node,
# PersistentVolumeClaim, Event, Pod), Eviction, Scale and the review
# kinds.
inputs=(
	github.com/virtkit/virtkit
	k8s.io/apimachinery/pkg/apis/meta/v1
	k8s.io/apimachinery/pkg/runtime
	k8s.io/apimachinery/pkg/version
	k8s.io/apimachinery/pkg/api/resource
	k8s.io/apimachinery/pkg/util/intstr
	k8s.io/api/core/v1
	k8s.io/api/policy/v1
	k8s.io/api/autoscaling/v1
	k8s.io/api/authorization/v1
	k8s.io/api/authentication/v1
)

out=${1:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if ! go build -o "$tmp/openapi-gen" k8s.io/kube-openapi/cmd/openapi-gen; then
	echo "openapi-gen.sh: cannot build k8s.io/kube-openapi/cmd/openapi-gen" >&2
	exit 2
fi

"$tmp/openapi-gen" \
	--output-dir "$tmp/gen" \
	--output-pkg "$pkg" \
	--output-file zz_generated.openapi.go \
	--go-header-file /dev/null \
	--report-filename "$tmp/violations.list" \
	"${inputs[@]}"
LC_ALL=C sort -o "$tmp/violations.list" "$tmp/violations.list"

if [[ -n "$out" ]]; then
	mkdir -p "$out"
	cp "$tmp/gen/zz_generated.openapi.go" "$tmp/violations.list" "$out/"
	exit 0
fi

new=$(LC_ALL=C comm -23 "$tmp/violations.list" <(LC_ALL=C sort "$exceptions" 2>/dev/null || true))
if [[ -n "$new" ]]; then
	echo "openapi-gen.sh: new API rule violations (fix the types; $exceptions may only shrink):" >&2
	echo "$new" >&2
	exit 1
fi
cp "$tmp/gen/zz_generated.openapi.go" "$dir/zz_generated.openapi.go"
cp "$tmp/violations.list" "$exceptions"
