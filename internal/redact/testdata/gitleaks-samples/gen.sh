#!/usr/bin/env bash
# Writes ../corpus/gitleaks.txt from gitleaks' rule definitions (see main.go).
# Needs the Go module proxy (gitleaks and its dependencies go to the module
# cache; nothing of them is kept here). gitleaks is copied to a temporary
# directory with the two files of overlay/ in place of its own, and used
# through a replace directive of a temporary go.mod.
set -euo pipefail
cd "$(dirname "$0")"
go mod download
src=$(go list -m -f '{{.Dir}}' github.com/zricethezav/gitleaks/v8)
tmp=$(mktemp -d)
trap 'chmod -R u+w "$tmp"; rm -rf "$tmp"' EXIT
cp -r "$src" "$tmp/gitleaks"
chmod -R u+w "$tmp/gitleaks"
cp overlay/validate.go "$tmp/gitleaks/cmd/generate/config/utils/validate.go"
cp overlay/regen.go "$tmp/gitleaks/cmd/generate/secrets/regen.go"
cp go.mod "$tmp/go.mod"
cp go.sum "$tmp/go.sum"
go mod edit -modfile "$tmp/go.mod" -replace "github.com/zricethezav/gitleaks/v8=$tmp/gitleaks"
go run -modfile "$tmp/go.mod" . > ../corpus/gitleaks.txt
