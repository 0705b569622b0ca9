#!/bin/sh
# Runs the STREAM-style triad under libnumapage with and without thread placement, alternating,
# and prints one line per run. Usage: bench/stream.sh [BUILD_DIR] [THREADS] [ROUNDS]
set -eu
build=${1:-build}
threads=${2:-$(nproc)}
rounds=${3:-3}
for r in $(seq "$rounds"); do
	for place in none spread; do
		printf 'place=%-6s ' "$place"
		"$build/tools/numapage" run --place "$place" -- "$build/bench/stream" --threads "$threads"
	done
done
