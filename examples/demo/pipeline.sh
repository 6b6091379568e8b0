#!/bin/sh
# The demo pipeline footprint measures in the Quick start: three stages with different
# footprints (idle, I/O and memory bound sorting in a child process, CPU-bound arithmetic).
# Usage: pipeline.sh PATH_TO_fp_matmul
set -eu
matmul="$1"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
echo "stage 1: sleep"
sleep 0.5
echo "stage 2: sort 1,000,000 numbers"
awk 'BEGIN { srand(42); for (i = 0; i < 1000000; i++) print int(rand() * 1e9) }' > "$tmp/numbers"
sort -n "$tmp/numbers" -o "$tmp/sorted"
echo "stage 3: multiply 400x400 matrices"
"$matmul" 400 6
