#!/bin/bash
# Median wall time of `ebmeval --help` over N runs, for each source tree given (to compare two checkouts
# under the same load). Usage: benchmarks/help_time.sh N SRC_DIR [SRC_DIR ...]   (prints `uptime` first)
set -euo pipefail
n=$1; shift
python=${PYTHON:-python3}
uptime
for src in "$@"; do
  median=$(for _ in $(seq "$n"); do
    start=$(date +%s.%N)
    PYTHONPATH=$src "$python" -c 'from ebmeval.cli import main; main()' --help >/dev/null 2>&1
    echo "$(date +%s.%N) - $start" | bc
  done | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  echo "$src: median ${median} s over $n runs"
done
