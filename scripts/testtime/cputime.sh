#!/bin/sh
# cputime.sh: a `go test -exec` wrapper that appends each test binary's CPU to the file
# $TESTTIME_CPU, one line a binary: its package directory (the go command runs a test
# binary there), wall, user and system seconds (/usr/bin/time: the binary and the
# subprocesses it waited for). timeline.py reads that file as its fourth argument.
#   TESTTIME_CPU=/tmp/cpu.txt go test -race -count=1 -json \
#     -exec "$PWD/scripts/testtime/cputime.sh" -debug-actiongraph=/tmp/ag.json ./... >/tmp/t.json
: "${TESTTIME_CPU:?set TESTTIME_CPU to the file to append to}"
exec /usr/bin/time -a -o "$TESTTIME_CPU" -f "$(pwd) %e %U %S" "$@"
