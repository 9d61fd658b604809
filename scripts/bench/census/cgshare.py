#!/usr/bin/env python3
"""cgshare.py ON_A ON_B OFF_A OFF_B N [TOP]: a feature's share of a request from four
cachegrind runs of census.sh, two with it on and two with it off (B with N requests more
than A in each pair): (ON_B - ON_A) - (OFF_B - OFF_A) over N, by cgdiff.py's buckets, the
total outside the runtime's bucket (which moves by +-0.45 K between runs of one binary),
and with TOP the TOP functions whose share differs most. The ledger's share:
  cgshare.py on-60 on-1310 off-60 off-1310 40000 40
(docs/ledger.md, "The writer's passes, twelfth session"). With two binaries' on runs in
place of on and off, it is the change's difference function by function."""
import collections, os, sys
here = os.path.dirname(os.path.abspath(__file__))
ns = {}
exec(open(os.path.join(here, "cgdiff.py")).read().split("a, b, n =")[0], ns)  # load, bucket
load, bucket = ns["load"], ns["bucket"]
on0, on1, off0, off1 = (load(f) for f in sys.argv[1:5])
n = float(sys.argv[5])
d = collections.Counter()
for k in set(on0) | set(on1) | set(off0) | set(off1):
    d[k] = ((on1[k] - on0[k]) - (off1[k] - off0[k])) / n
bk = collections.Counter()
for k, v in d.items():
    bk[bucket(k)] += v
for k, v in sorted(bk.items(), key=lambda kv: -abs(kv[1])):
    if abs(v) >= 0.05:
        print(f"{k:32s} {v:9.1f}")
print(f"{'outside runtime/other':32s} {sum(bk.values()) - bk['runtime/other']:9.1f}")
print(f"{'all':32s} {sum(bk.values()):9.1f}")
if len(sys.argv) > 6:
    for k, v in sorted(d.items(), key=lambda kv: -abs(kv[1]))[:int(sys.argv[6])]:
        print(f"  {v:+9.1f}  {k}")
