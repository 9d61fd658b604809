#!/usr/bin/env bash
# Counts the instructions of the bench's small chat request (or, with LARGE_KB, scenario
# d's large one) in one target process under
# valgrind (PERFORMANCE.md, "The small request's fixed cost, eighth session"): the target
# runs with GOMAXPROCS=1 GOGC=off (the gateway with GATEWAY_RUNTIME_TUNING=off, both with
# GODEBUG=schedtrace=2147483647, as the bench's raw proxy), the shared bench's mock and
# this directory's load client (main.go) in their own processes, one connection, one
# request at a time.
#
# Usage: census.sh TARGET OUT N [GATEWAY]
#   TARGET  raw (the bench's raw proxy), oai (the gateway's passthrough, model oai-bench)
#           or anth (the gateway translating to Anthropic, model claude-bench); the other
#           client APIs' small requests (the load client's -api): resp (the Responses
#           passthrough, model resp-bench), msg (the Messages passthrough, claude-bench),
#           raw-resp and raw-msg (the raw proxy with those requests); the translated
#           rows: resp-anth (Responses -> Anthropic, model claude-bench, the bench's
#           product-responses) and msg-oai (Messages -> OpenAI chat, model oai-bench, the
#           bench's product-messages-oai)
#   OUT     the output file: cachegrind's for N requests (TOOL=cachegrind, the default);
#           with TOOL=callgrind, OUT.1 holds the N requests after 100 uncounted ones
#   N       requests
#   GATEWAY the gateway binary (oai, anth)
# Environment: BENCH, the bench binary (scripts/bench/build.sh -o FILE; default
# /tmp/bench-apis); LOAD, this directory's client (default: built into a temporary file).
# Streams (scenario c's shape): STREAM=1 sends the bench's stream request instead, N
# streams on each of CONC connections (default 1), each EVENTS deltas (default 200) one
# every EVENT_DELAY (default 5ms; the mock's /__control); the callgrind warm-up is then
# 2 streams a connection. Every TARGET streams: resp, msg, raw-resp and raw-msg send the
# bench's Responses or Messages stream request (the load client's -api with -stream).
# GOGC (default off) and GOMAXPROCS (default 1) are the target's.
# Scenario d's request: LARGE_KB=N (chat targets: raw, oai, anth) sends the bench's large
# chat history of about N KB (10 is the bench's default, 100 its flatness target; the load
# client's -large-kb) instead of the small request.
# TOOL=time runs the target without valgrind under /usr/bin/time -v, which writes OUT
# (its minor page faults, RSS peak); the gateway then keeps its default runtime tuning
# (GATEWAY_RUNTIME_TUNING unset), GODEBUG=schedtrace as above. TOOL=strace runs it so
# under `strace -c -f` (every thread's system calls, counted; OUT is strace's table), with
# the runtime as TOOL=time: a stream's system calls an event are the difference of two runs.
# TOOL=io runs it untraced, as TOOL=time, and writes its /proc/PID/io at the end to OUT:
# syscr and syscw count its read and write system calls without strace's slowing them;
# with them its user and system CPU (clock ticks, /proc/PID/stat) and its threads' context
# switches, voluntary and not (summed over /proc/PID/task/*/status).
# TOOL=perf runs it untraced, as TOOL=time, under `perf stat -e
# task-clock,context-switches,cpu-migrations,page-faults` (software events: OUT is perf's
# table, the whole process's life); TOOL=perfrec under `perf record -e cpu-clock -g` (OUT
# is perf.data, for `perf report -i OUT`; PERF_FREQ samples a second, default 4000):
# where user and kernel time go, sampled.
#
# CACHE_SIM=yes has cachegrind simulate the caches too (its D1mr, D1mw: first-level data
# misses, which at many streams count the cache lines an event touches that the other
# streams' events evicted since its last).
#
# A request's count is the difference of two cachegrind runs over their difference in
# requests (e.g. N=600 less N=100, over 500): cgdiff.py A B 500.
set -euo pipefail
tgt=${1:?TARGET} out=$(realpath -m "${2:?OUT}") n=${3:?N} gw=${4:-}
here="$(cd "$(dirname "$0")" && pwd)"
tool=${TOOL:-cachegrind}
# shellcheck source=lib.sh
. "$here/lib.sh"
census_start
conc=${CONC:-1} lflags=() warm=100
[ -n "${STREAM:-}" ] && lflags=(-stream) warm=2
api=chat
case $tgt in
raw) cmd=("$bench" rawproxy -listen "127.0.0.1:$tp" -upstream "127.0.0.1:$mp") model=oai-bench ;;
raw-resp) cmd=("$bench" rawproxy -listen "127.0.0.1:$tp" -upstream "127.0.0.1:$mp") model=resp-bench api=responses ;;
raw-msg) cmd=("$bench" rawproxy -listen "127.0.0.1:$tp" -upstream "127.0.0.1:$mp") model=claude-bench api=messages ;;
oai) cmd=("${gw:?GATEWAY}" -config "$d/cfg/gw.yaml") model=oai-bench ;;
anth) cmd=("${gw:?GATEWAY}" -config "$d/cfg/gw.yaml") model=claude-bench ;;
resp) cmd=("${gw:?GATEWAY}" -config "$d/cfg/gw.yaml") model=resp-bench api=responses ;;
msg) cmd=("${gw:?GATEWAY}" -config "$d/cfg/gw.yaml") model=claude-bench api=messages ;;
resp-anth) cmd=("${gw:?GATEWAY}" -config "$d/cfg/gw.yaml") model=claude-bench api=responses ;;
msg-oai) cmd=("${gw:?GATEWAY}" -config "$d/cfg/gw.yaml") model=oai-bench api=messages ;;
*) echo "census.sh: TARGET is raw, raw-resp, raw-msg, oai, anth, resp, msg, resp-anth or msg-oai" >&2; exit 2 ;;
esac
lflags+=(-api "$api")
[ -n "${LARGE_KB:-}" ] && lflags+=(-large-kb "$LARGE_KB")
opts=("--cache-sim=${CACHE_SIM:-no}" "--cachegrind-out-file=$out")
[ "$tool" = callgrind ] && opts=("--callgrind-out-file=$out")
if [ "$tool" = io ]; then
	GOMAXPROCS=${GOMAXPROCS:-1} GOGC=${GOGC:-off} GODEBUG=schedtrace=2147483647 \
		"${cmd[@]}" >"$d/target.log" 2>&1 &
elif [ "$tool" = strace ]; then
	GOMAXPROCS=${GOMAXPROCS:-1} GOGC=${GOGC:-off} GODEBUG=schedtrace=2147483647 \
		strace -c -f -o "$out" "${cmd[@]}" >"$d/target.log" 2>&1 &
elif [ "$tool" = perf ]; then
	GOMAXPROCS=${GOMAXPROCS:-1} GOGC=${GOGC:-off} GODEBUG=schedtrace=2147483647 \
		perf stat -e task-clock,context-switches,cpu-migrations,page-faults -o "$out" "${cmd[@]}" >"$d/target.log" 2>&1 &
elif [ "$tool" = perfrec ]; then
	GOMAXPROCS=${GOMAXPROCS:-1} GOGC=${GOGC:-off} GODEBUG=schedtrace=2147483647 \
		perf record -q -e cpu-clock -F "${PERF_FREQ:-4000}" -g -o "$out" "${cmd[@]}" >"$d/target.log" 2>&1 &
elif [ "$tool" = time ]; then
	GOMAXPROCS=${GOMAXPROCS:-1} GOGC=${GOGC:-off} GODEBUG=schedtrace=2147483647 \
		/usr/bin/time -v -o "$out" "${cmd[@]}" >"$d/target.log" 2>&1 &
else
	GOMAXPROCS=${GOMAXPROCS:-1} GOGC=${GOGC:-off} GATEWAY_RUNTIME_TUNING=off GODEBUG=schedtrace=2147483647 \
		valgrind --tool="$tool" "${opts[@]}" "${cmd[@]}" >"$d/target.log" 2>&1 &
fi
vpid=$!
census_wait 300 0.2
if [ "$tool" = callgrind ]; then
	"$load" -addr "127.0.0.1:$tp" -model "$model" -n "$warm" -conc "$conc" "${lflags[@]}"
	callgrind_control -z "$vpid" >/dev/null
	"$load" -addr "127.0.0.1:$tp" -model "$model" -n "$n" -conc "$conc" "${lflags[@]}"
	callgrind_control -d "$vpid" >/dev/null
	kill -KILL "$vpid" # the dump is written; the raw proxy would not stop on SIGINT
elif [ "$tool" = io ]; then
	"$load" -addr "127.0.0.1:$tp" -model "$model" -n "$n" -conc "$conc" "${lflags[@]}"
	{
		cat "/proc/$vpid/io"
		awk '{print "utime_ticks: " $14; print "stime_ticks: " $15}' "/proc/$vpid/stat"
		cat /proc/"$vpid"/task/*/status | awk '/^voluntary_ctxt_switches/{v+=$2} /^nonvoluntary_ctxt_switches/{n+=$2} END{print "voluntary_ctxt_switches: " v; print "nonvoluntary_ctxt_switches: " n}'
	} >"$out"
	kill -KILL "$vpid"
elif [ "$tool" = time ] || [ "$tool" = strace ] || [ "$tool" = perf ] || [ "$tool" = perfrec ]; then
	"$load" -addr "127.0.0.1:$tp" -model "$model" -n "$n" -conc "$conc" "${lflags[@]}"
	kill -TERM "$(pgrep -P "$vpid")" 2>/dev/null || true # the target, time's child: time then writes OUT
	[[ "$tgt" = raw* ]] && { sleep 0.5; kill -KILL "$(pgrep -P "$vpid")" 2>/dev/null || true; }
else
	"$load" -addr "127.0.0.1:$tp" -model "$model" -n "$n" -conc "$conc" "${lflags[@]}"
	kill -TERM "$vpid" # cachegrind writes its file as the process ends
fi
wait "$vpid" 2>/dev/null || true # (a SIGKILLed target: no "Killed" line)
kill "$mpid"; wait "$mpid" 2>/dev/null || true
