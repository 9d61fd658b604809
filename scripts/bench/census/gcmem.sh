#!/usr/bin/env bash
# The memory side of the bench's scenario b in the gateway, ledger off or on (docs/ledger.md,
# "GC and memory, ninth session"): the gateway as the bench runs it (its default runtime
# tuning, GOGC 100) with GODEBUG=gctrace=1, the shared bench's mock, this directory's load
# client sending the small chat request to claude-bench (translated to Anthropic) over CONC
# keep-alive connections, N requests on each. Counted over the process's whole life (start,
# the N×CONC requests, graceful shutdown), so that a run is a fixed amount of work:
#   - the collections (gctrace lines) and their CPU (the lines' cpu fields summed), the
#     live heap after the last one and its goal;
#   - the peak RSS (VmHWM) and, after the last answer, what RSS is made of (smaps_rollup:
#     file pages, anonymous memory; of the anonymous, the Go runtime's — go_memstats_sys
#     less heap_released, an upper bound of what it has resident — and the rest: the
#     C-translated SQLite's heap, which modernc.org/libc maps itself);
#   - the process's CPU and the ledger writer's (gateway_ledger_writer_cpu_seconds_total),
#     the bytes and objects allocated (go_memstats_*).
#
# Usage: gcmem.sh GATEWAY off|sqlite CONC N
# Environment: BENCH and LOAD as census.sh's; EXTRA_ENV, more VAR=value for the gateway.
# STREAM=1 sends scenario c's stream request instead (PERFORMANCE.md, "Peak RSS at c,
# tenth session"): N streams on each of CONC connections, each EVENTS deltas (default
# 200) one every EVENT_DELAY (default 5ms; the mock's /__control), to MODEL (default
# claude-bench, translated; oai-bench is the passthrough). The process's memory is then
# also sampled every 0.1 s while the load runs (smaps_rollup), and the largest sample is
# printed with its file pages and anonymous memory: c's peak is under load, not after it.
# SAMPLE=1 samples so without STREAM (b's small requests): the peak under load, where
# VmHWM alone does not say what it is made of.
# API=responses or messages sends that client API's request instead of chat's (the load
# client's -api, as census.sh's resp, msg, resp-anth and msg-oai): with MODEL, the
# bench's product-responses (claude-bench, translated), product-responses-oai
# (resp-bench, passthrough), product-messages (claude-bench, passthrough) and
# product-messages-oai (oai-bench, translated) rows.
# LARGE_KB=N sends scenario d's request of about N KB instead of the small one (the load
# client's -large-kb, as census.sh's); with SAMPLE=1, d's peak under load.
set -euo pipefail
gw=${1:?GATEWAY} led=${2:?off|sqlite} conc=${3:?CONC} n=${4:?N}
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=lib.sh
. "$here/lib.sh"
census_start
model=${MODEL:-claude-bench} lflags=()
[ -n "${STREAM:-}" ] && lflags=(-stream)
lflags+=(-api "${API:-chat}")
[ -n "${LARGE_KB:-}" ] && lflags+=(-large-kb "$LARGE_KB")
envs=(GODEBUG=gctrace=1)
[ "$led" = sqlite ] && envs+=(GATEWAY_LEDGER__TYPE=sqlite "GATEWAY_LEDGER__PATH=$d/ledger.db")
# shellcheck disable=SC2206
envs+=(${EXTRA_ENV:-})
env "${envs[@]}" "$gw" -config "$d/cfg/gw.yaml" >"$d/out.log" 2>"$d/err.log" &
tpid=$!
census_wait
if [ -n "${STREAM:-}${SAMPLE:-}" ]; then
	# smaps_rollup every 0.1 s while the load runs: Rss and Anonymous in kB, a line each
	(while kill -0 "$tpid" 2>/dev/null && [ ! -e "$d/done" ]; do
		awk '/^Rss:/ { r = $2 } /^Anonymous:/ { a = $2 } END { if (r) print r, a }' "/proc/$tpid/smaps_rollup" 2>/dev/null || true
		sleep 0.1
	done) >"$d/samples" &
	spid=$!
fi
"$load" -addr "127.0.0.1:$tp" -model "$model" -n "$n" -conc "$conc" "${lflags[@]}" 2>"$d/load.log" || { cat "$d/load.log"; exit 1; }
if [ -n "${STREAM:-}${SAMPLE:-}" ]; then touch "$d/done"; wait "$spid" || true; fi
curl -s "http://127.0.0.1:$tp/metrics" >"$d/metrics"
grep -E '^(Rss|Anonymous):' "/proc/$tpid/smaps_rollup" >"$d/smaps"
grep -E '^Vm(HWM|RSS)' "/proc/$tpid/status" >"$d/status"
read -r -a st <"/proc/$tpid/stat"
kill -TERM "$tpid"; wait "$tpid" || true
kill "$mpid"; wait "$mpid" 2>/dev/null || true
hz=$(getconf CLK_TCK) req=$((n * conc))
what="requests"
[ -n "${STREAM:-}" ] && what="streams of ${EVENTS:-200} events to $model, API ${API:-chat} (a request below is a stream)"
echo "ledger $led, $req $what (conc $conc), load $(cut -d' ' -f1-3 /proc/loadavg)"
if [ -n "${STREAM:-}${SAMPLE:-}" ]; then
	sort -n "$d/samples" | tail -1 | awk '{ printf "sampled peak (every 0.1 s under load): rss %.1f MB = file %.1f MB + anonymous %.1f MB\n", $1 / 1024, ($1 - $2) / 1024, $2 / 1024 }'
fi
echo "process cpu $(( (st[13] + st[14]) * 1000 / hz )) ms (user+sys, start to the last answer)"
awk -v req="$req" '
/^gc [0-9]+ @/ {
	gcs++
	for (i = 1; i <= NF; i++) {
		if ($(i+1) == "ms" && $(i+2) == "cpu,") { split($i, p, /[+\/]/); for (k in p) cpu += p[k] }
		if ($(i) ~ /->.*->/ && $(i+1) == "MB,") { split($i, h, "->"); live = h[3] }
		if ($(i+1) == "MB" && $(i+2) == "goal,") goal = $i
	}
}
END { printf "gc cycles %d, gc cpu %.1f ms (%.2f us a request), live heap after the last %s MB, goal %s MB\n", gcs, cpu, cpu * 1000 / req, live, goal }' "$d/err.log"
awk '{printf "%s %s kB  ", $1, $2} END {print ""}' "$d/status"
awk -v m="$d/metrics" '{ v[$1] = $2 * 1024 }
END { while ((getline l < m) > 0) { split(l, f, " "); g[f[1]] = f[2] + 0 }
	gores = g["go_memstats_sys_bytes"] - g["go_memstats_heap_released_bytes"]
	printf "rss %.1f MB: file %.1f MB, anonymous %.1f MB = the Go runtime'"'"'s (sys less released) %.1f MB + the rest (C heap, libc) %.1f MB\n",
		v["Rss:"] / 1048576, (v["Rss:"] - v["Anonymous:"]) / 1048576, v["Anonymous:"] / 1048576, gores / 1048576, (v["Anonymous:"] - gores) / 1048576 }' "$d/smaps"
grep -E '^(go_memstats_(alloc_bytes_total|mallocs_total|heap_inuse_bytes|sys_bytes|heap_sys_bytes|heap_released_bytes|stack_inuse_bytes|gc_sys_bytes|other_sys_bytes|mspan_inuse_bytes)|gateway_ledger_writer_cpu_seconds_total|gateway_ledger_written_total|process_cpu_seconds_total) ' "$d/metrics" |
	awk -v req="$req" '{ v = $2 + 0
		if ($1 ~ /alloc_bytes_total|mallocs_total/) printf "%s %.0f (%.1f a request)\n", $1, v, v / req
		else if ($1 ~ /seconds/) printf "%s %.3f s (%.2f us a request)\n", $1, v, v * 1e6 / req
		else printf "%s %.1f MB\n", $1, v / 1048576 }'
