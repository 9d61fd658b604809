#!/usr/bin/env bash
# The runtime side of the bench's small chat request in one target running as in the bench
# (no valgrind; the gateway with its default runtime tuning, TUNING=off|schedtrace|awake
# to choose; the raw proxy with GODEBUG=schedtrace=2147483647): over N requests on each of
# CONC connections after a warm-up, a request's system calls and context switches (perf
# stat on the target's PID), its user and system CPU (/proc/PID/stat, in ticks) and, for
# the gateway, the bytes and objects it allocated (go_memstats_* on /metrics).
#
# Usage: stat.sh TARGET CONC N [GATEWAY]   (TARGET: raw, oai or anth, as census.sh)
# Environment: BENCH and LOAD as census.sh's.
set -euo pipefail
tgt=${1:?TARGET} conc=${2:?CONC} n=${3:?N} gw=${4:-}
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=lib.sh
. "$here/lib.sh"
census_start
case $tgt in
raw) GODEBUG=schedtrace=2147483647 "$bench" rawproxy -listen "127.0.0.1:$tp" -upstream "127.0.0.1:$mp" >"$d/target.log" 2>&1 &
	model=oai-bench ;;
oai | anth) GATEWAY_RUNTIME_TUNING=${TUNING:-awake} "${gw:?GATEWAY}" -config "$d/cfg/gw.yaml" >"$d/target.log" 2>&1 &
	model=oai-bench; [ "$tgt" = anth ] && model=claude-bench ;;
*) echo "stat.sh: TARGET is raw, oai or anth" >&2; exit 2 ;;
esac
tpid=$!
census_wait
"$load" -addr "127.0.0.1:$tp" -model "$model" -n 200 -conc "$conc" 2>/dev/null
mem() { curl -s "http://127.0.0.1:$tp/metrics" | grep -E '^go_memstats_(alloc_bytes_total|mallocs_total) ' || true; }
mem >"$d/m0"; read -r -a st0 <"/proc/$tpid/stat"
perf stat -x, -o "$d/perf" -p "$tpid" -e 'syscalls:sys_enter_read,syscalls:sys_enter_write,syscalls:sys_enter_futex,syscalls:sys_enter_nanosleep,syscalls:sys_enter_epoll_pwait,syscalls:sys_enter_sched_yield,context-switches,task-clock' \
	-- "$load" -addr "127.0.0.1:$tp" -model "$model" -n "$n" -conc "$conc"
mem >"$d/m1"; read -r -a st1 <"/proc/$tpid/stat"
kill -KILL "$tpid"; kill "$mpid"; wait 2>/dev/null || true
req=$((n * conc)) hz=$(getconf CLK_TCK)
awk -v req="$req" -v hz="$hz" -v u="$((st1[13] - st0[13]))" -v s="$((st1[14] - st0[14]))" -v m0="$d/m0" -v m1="$d/m1" -F, '
BEGIN {
	printf "user %.1f µs, system %.1f µs a request (ticks of 1/%d s: coarse)\n", u * 1e6 / hz / req, s * 1e6 / hz / req, hz
	while ((getline l < m0) > 0) { split(l, f, " "); a[f[1]] = f[2] }
	while ((getline l < m1) > 0) { split(l, f, " "); b[f[1]] = f[2] }
	if ("go_memstats_alloc_bytes_total" in b)
		printf "allocated %.0f bytes, %.2f objects a request\n", (b["go_memstats_alloc_bytes_total"] - a["go_memstats_alloc_bytes_total"]) / req, (b["go_memstats_mallocs_total"] - a["go_memstats_mallocs_total"]) / req
}
$1 ~ /^[0-9.]+$/ { name = $3; sub(/syscalls:sys_enter_/, "", name)
	if (name == "task-clock") printf "%-16s %8.2f µs a request\n", name, $1 * 1000 / req
	else printf "%-16s %8.3f a request\n", name, $1 / req }' "$d/perf"
