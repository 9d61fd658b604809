#!/usr/bin/env python3
"""cgdiff.py A B N [TOP]: the instructions a request of two cachegrind runs of census.sh
(B with N requests more than A), by bucket (Agate's packages, fasthttp, the clock, memory
and byte searches, net/poll/system-call stubs and bufio, sync, strconv, SQLite with
modernc.org's libc (the ledger's database; runtime/other's before the thirteenth session),
the runtime and the rest), and with TOP the TOP functions whose count differs most. Self
counts: cg_annotate's per function, which are exact (by instruction address). SHOW=EVENTS (cachegrind's names, e.g.
D1mr,D1mw: a CACHE_SIM=yes run's first-level data misses, read and write) counts their sum
instead of Ir; the figures are then in K of those a request too."""
import os, sys, re, subprocess, collections
SHOW = os.environ.get("SHOW", "Ir")
def load(f):
    out = subprocess.run(["cg_annotate", "--show=" + SHOW, "--auto=no", "--threshold=0", f], capture_output=True, text=True).stdout
    c = collections.Counter()
    cols = SHOW.count(",") + 1
    num = r'([\d,.]+)\s+(?:\([^)]*\)\s+)?'
    for line in out.splitlines():
        m = re.match(r'\s*' + num * cols + r'(\S.*)$', line)
        if not m or ':' not in m.group(cols + 1) or 'PROGRAM TOTALS' in line: continue
        rest = m.group(cols + 1).split(' [')[0]
        c[rest] += sum(int(m.group(i).replace(',', '').replace('.', '0')) for i in range(1, cols + 1))
    return c
def bucket(fn):
    fn = fn.split(':', 1)[1] if ':' in fn else fn
    if 'agate-gateway/agate/' in fn:
        p = fn.split('agate-gateway/agate/')[1]; return 'agate/' + re.split(r'\.', p, 1)[0]
    if 'fasthttp' in fn: return 'fasthttp'
    if 'prometheus' in fn or 'client_model' in fn: return 'prometheus'
    if fn.startswith('time.'): return 'clock'  # the time package's; the runtime's own readings (nanotime1) count as runtime
    if any(x in fn for x in ('memmove','bytealg','memeqbody','indexbyte','memclr','indexbody')) or fn.startswith('bytes.'): return 'mem/bytes'
    if fn.startswith(('net.', 'internal/poll', 'syscall', 'internal/runtime/syscall', 'bufio')): return 'net/poll/syscall/bufio'
    if fn.startswith('sync') or 'internal/sync' in fn: return 'sync'
    if fn.startswith(('modernc.org/sqlite', 'modernc.org/libc')): return 'sqlite'
    if 'strconv' in fn: return 'strconv'
    return 'runtime/other'
a, b, n = load(sys.argv[1]), load(sys.argv[2]), float(sys.argv[3])
d = collections.Counter()
for k in set(a) | set(b): d[k] = b[k] - a[k]
bk = collections.Counter()
for k, v in d.items(): bk[bucket(k)] += v
own = sum(v for k, v in bk.items() if k.startswith('agate/'))
for k, v in sorted(bk.items(), key=lambda kv: -kv[1]): print(f"{k:32s} {v/n/1000:8.2f} K")
print(f"{'Agate own':32s} {own/n/1000:8.2f} K")
print(f"{'outside runtime/other':32s} {(sum(bk.values())-bk['runtime/other'])/n/1000:8.2f} K")
print(f"{'all':32s} {sum(bk.values())/n/1000:8.2f} K")
if len(sys.argv) > 4:
    for k, v in sorted(d.items(), key=lambda kv: -abs(kv[1]))[:int(sys.argv[4])]: print(f"  {v/n:+9.1f}  {k}")
