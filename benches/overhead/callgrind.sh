#!/usr/bin/env bash
# Client instructions per serial call over stdio, counted by callgrind (repeatable on a loaded
# machine, unlike wall-clock time): each client runs as the benchmark's own child
# (`overhead --child stdio <client> ...`) twice under valgrind, with N1 and N2 serial calls, and
# the difference of the two totals is divided by N2 - N1, so that start-up, the handshake, the
# warm-up and the (minimal) concurrent phase cancel out. Only the client's process is counted
# (valgrind does not follow the echo server it spawns).
#
# Usage: [BIN=path/to/overhead-binary] benches/overhead/callgrind.sh [client...]   (default: raw one-hop ours ours-sup ours-call)
# Needs valgrind, and the bench built (`cargo bench --bench overhead --no-run`).
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${BIN:-$(ls -t target/release/deps/overhead-* | grep -v "\.d$" | head -1)}
n1=${N1:-1000}
n2=${N2:-3000}
clients=("$@")
[ ${#clients[@]} -eq 0 ] && clients=(raw one-hop ours ours-sup ours-call)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
total() { # client serial-calls -> instructions of the whole child process
    valgrind --tool=callgrind --callgrind-out-file="$out/cg.$1.$2" \
        "$bin" --child stdio "$1" "$2" 64 64 200 >/dev/null 2>"$out/log.$1.$2"
    awk '/^(summary|totals):/ {print $2; exit}' "$out/cg.$1.$2"
}
printf '%-10s %12s\n' client instr/call
for c in "${clients[@]}"; do
    a=$(total "$c" "$n1")
    b=$(total "$c" "$n2")
    printf '%-10s %12.0f\n' "$c" "$(echo "($b - $a) / ($n2 - $n1)" | bc -l)"
done
