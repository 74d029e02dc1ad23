#!/usr/bin/env bash
# Set up everything the test suite needs on a fresh Debian/Ubuntu machine, then run it: ruff, mypy,
# the import contracts, vulture, and every test not marked slow on all CPUs (.ci/run adds -m slow).
# System tools: tmux (TUI end-to-end tests), linux-perf (accuracy peer), jq (replay benchmark peer),
# prometheus (the OpenMetrics endpoint scraped by the real server), gfortran (a Fortran program
# marked with fapp calls, tests/regions), qemu-user, valgrind and the aarch64 cross compiler (real
# programs on the simulated A64FX, their reference counts, aarch64 builds: tests/sim/qemu).
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
command -v tmux >/dev/null 2>&1 || missing+=(tmux)
command -v jq >/dev/null 2>&1 || missing+=(jq)
command -v perf >/dev/null 2>&1 || missing+=(linux-perf)
command -v prometheus >/dev/null 2>&1 || missing+=(prometheus)
command -v gfortran >/dev/null 2>&1 || missing+=(gfortran)
command -v qemu-x86_64 >/dev/null 2>&1 || missing+=(qemu-user)
command -v valgrind >/dev/null 2>&1 || missing+=(valgrind)
command -v aarch64-linux-gnu-gcc >/dev/null 2>&1 || missing+=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross)
if [ ${#missing[@]} -gt 0 ]; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "scripts/test.sh: please install: ${missing[*]} (tests that need them will be skipped)" >&2
  fi
fi

PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e '.[test,dev]'

.venv/bin/ruff check sectormon tests benchmarks scripts
.venv/bin/mypy
.venv/bin/mypy --strict scripts/a64fx
.venv/bin/lint-imports --no-cache >/dev/null || .venv/bin/lint-imports --no-cache  # the layers (design.md)
.venv/bin/vulture sectormon --min-confidence 80
.venv/bin/pytest -n auto -m "not timing and not slow" "$@"  # CI also runs -m slow (.ci/run)
.venv/bin/pytest -m timing "$@"  # accuracy against the truth while nothing else competes for the CPUs
