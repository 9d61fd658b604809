#!/usr/bin/env bash
# Which functions grow the goroutine stacks of a running Go binary, to what size and how
# deep (PERFORMANCE.md, "Peak RSS, sixteenth session"): a perf uprobe on runtime.copystack
# records, for SECONDS, every stack copy of every process of BIN: its new size, the
# function the goroutine was in (g.sched.pc: the one whose prologue asked for more, or
# the runtime's own point for a shrink) and its depth (g.stack.hi - g.sched.sp). A copy
# to a larger size is a growth; preemption requests, which also enter morestack, copy
# nothing and are not counted (a runtime.morestack probe sees both). The output is one
# line a (size, function, depth rounded down to 256 bytes), counted, smallest size first.
#
# Usage: stackgrowth.sh BIN SECONDS [OUT]
#   BIN      the Go binary (an absolute path: the probe is on the file, so every process
#            running it is recorded; start it, and its load, yourself)
#   SECONDS  how long to record
#   OUT      perf's data file (default: a temporary file, removed)
#
# Needs root (perf probe, perf record -a) and a binary with its symbol table (go build
# without -ldflags=-s). The g offsets (stack.hi +8, sched.sp +56, sched.pc +64) and the
# new size in BX (ABIInternal's second integer argument) are Go 1.26's on amd64
# (runtime/runtime2.go's g and gobuf): check them after a Go upgrade.
# Frame sizes to go with it: `go tool objdump BIN`, each function's SUBQ $n, SP (or
# ADDQ $-n, SP), plus 16 for the return address and frame pointer.
set -euo pipefail
bin=${1:?BIN} secs=${2:?SECONDS} out=${3:-}
case $bin in /*) ;; *) echo "stackgrowth.sh: BIN must be an absolute path" >&2; exit 2 ;; esac
[ -x "$bin" ] || { echo "stackgrowth.sh: $bin is not executable" >&2; exit 2; }
tmp=$(mktemp -d)
ev=""
trap '[ -z "$ev" ] || perf probe -q -d "$ev" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
[ -n "$out" ] || out="$tmp/perf.data"
perf probe -q -x "$bin" --add 'runtime.copystack newsize=%bx:u64 pc=+64(%ax):u64 sp=+56(%ax):u64 hi=+8(%ax):u64'
ev=$(perf probe -l 2>/dev/null | awk -v b="$bin" 'index($0, b) && /copystack/ {print $1; exit}')
[ -n "$ev" ] || { echo "stackgrowth.sh: the probe was not added" >&2; exit 1; }
perf record -q -e "$ev" -a -o "$out" -- sleep "$secs" >/dev/null 2>&1
perf script -i "$out" -F trace 2>/dev/null >"$tmp/trace"
python3 - "$bin" "$tmp/trace" <<'PY'
import collections, re, subprocess, sys
rows = []
for line in open(sys.argv[2]):
    m = re.search(r'newsize=(\d+) pc=(\d+) sp=(\d+) hi=(\d+)', line)
    if m:
        rows.append(tuple(map(int, m.groups())))
pcs = sorted({r[1] for r in rows})
lines = subprocess.run(['go', 'tool', 'addr2line', sys.argv[1]], input=''.join('0x%x\n' % p for p in pcs),
                       capture_output=True, text=True, check=True).stdout.split('\n')
name = {p: lines[2 * i] for i, p in enumerate(pcs)}
count = collections.Counter((size, name[pc], (hi - sp) // 256 * 256) for size, pc, sp, hi in rows)
print('copies  new size  depth  function')
for (size, fn, depth), n in sorted(count.items(), key=lambda kv: (kv[0][0], -kv[1])):
    print('%6d  %8d  %5d  %s' % (n, size, depth, fn))
PY
