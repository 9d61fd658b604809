#!/usr/bin/env python3
"""timeline.py JSON [-graph AG] [-cpu CPU] [-pkg PKG]: where a `go test -json ./...` run's
wall time and CPU went.

JSON is the output of `go test -race -count=1 -json ./...`; AG the file the same run wrote
with `-debug-actiongraph=AG`, which adds each test binary's link (start, end, CPU) and run
(start, end; the go command's own clock); CPU the file cputime.sh (the run's `-exec`
wrapper) appended each test binary's wall, user and system time to; PKG (default proxy)
a package, by the end of its import path, whose tests get a phase breakdown. Prints, in
seconds from the run's first event:

- per package: its test binary's link and run (from the action graph) or its test2json
  start and pass/fail (from JSON alone), elapsed, and its three longest top-level tests;
- the concurrency profile: how many links and runs were in progress, second by second,
  and the core-seconds a 2-core machine (CORES=N to change) left idle by it (a run that
  waits on a clock or a subprocess counts as busy here: its own CPU is the action graph's
  links' and (with -cpu) runs' CPU summed);
- for PKG: its serial phase (the top-level tests that did not pause) and parallel phase
  (from the first "cont" to the last test's end), each phase's tests summed, and the
  longest of each.

How the next session measures the same way (docs/development.md, "Test time, fifteenth
session"):
    . /tmp/<env with the npm packages>; export CI=true GORACE=atexit_sleep_ms=0 TESTTIME_CPU=/tmp/cpu.txt
    rm -f /tmp/cpu.txt; /usr/bin/time go test -race -count=1 -json -debug-actiongraph=/tmp/ag.json \\
      -exec "$PWD/scripts/testtime/cputime.sh" ./... >/tmp/t.json
    python3 scripts/testtime/timeline.py /tmp/t.json -graph /tmp/ag.json -cpu /tmp/cpu.txt
"""
import argparse, collections, json, os, sys
from datetime import datetime

CORES = int(os.environ.get("CORES", "2"))


def ts(s):
    # RFC 3339 with nanoseconds; fromisoformat takes at most microseconds.
    if s is None:
        return None
    s = s.replace("Z", "+00:00")
    head, sep, tail = s.partition(".")
    if sep:
        frac, zone = tail, ""
        for i, c in enumerate(tail):
            if c in "+-":
                frac, zone = tail[:i], tail[i:]
                break
        s = head + "." + frac[:6].ljust(6, "0") + zone
    return datetime.fromisoformat(s).timestamp()


def short(pkg):
    parts = pkg.split("/")
    return "/".join(parts[3:]) if len(parts) > 3 else pkg


def read_events(path):
    evs = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line.startswith("{"):
                continue
            try:
                evs.append(json.loads(line))
            except ValueError:
                continue
    return evs


def read_graph(path):
    """Per package: (link start, link done, run start, run done, run user+sys or None)."""
    with open(path) as f:
        acts = json.load(f)
    out = collections.defaultdict(dict)
    for a in acts:
        mode, pkg = a.get("Mode", ""), a.get("Package", "")
        if not pkg or a.get("TimeStart") in (None, "0001-01-01T00:00:00Z"):
            continue
        pkg = pkg.split(" ")[0]  # "p [p.test]" for the test variants
        if mode == "link" and pkg.endswith(".test"):
            pkg = pkg[: -len(".test")]
        start, done = ts(a.get("TimeStart")), ts(a.get("TimeDone"))
        cpu = None
        if a.get("CmdUser") is not None or a.get("CmdSys") is not None:
            cpu = (a.get("CmdUser") or 0) / 1e9 + (a.get("CmdSys") or 0) / 1e9
        if mode == "link" and "link" not in out[pkg]:
            out[pkg]["link"] = (start, done, cpu)
        elif mode == "test run":
            out[pkg]["run"] = (start, done, cpu)
    return out


def read_cpu(path, pkgs):
    """Per package: (wall, user + sys) of its test binary, from cputime.sh's lines."""
    dirs = {}
    for pkg in pkgs:
        dirs[pkg.split("/", 3)[3] if pkg.count("/") >= 3 else ""] = pkg
    out = {}
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) != 4:
                continue
            d, wall, user, sys_ = parts
            for rel, pkg in dirs.items():
                if rel and (d.endswith("/" + rel)):
                    out[pkg] = (float(wall), float(user) + float(sys_))
    return out


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("json")
    ap.add_argument("-graph")
    ap.add_argument("-cpu")
    ap.add_argument("-pkg", default="proxy")
    args = ap.parse_args(argv[1:])
    evs = read_events(args.json)
    graph = read_graph(args.graph) if args.graph else {}
    focus = args.pkg
    times = [ts(e["Time"]) for e in evs if "Time" in e]
    t0 = min(times + [v[0] for g in graph.values() for v in g.values()])

    pkgs = collections.OrderedDict()
    tests = collections.defaultdict(dict)  # pkg -> test -> dict(start, end, elapsed, paused)
    for e in evs:
        pkg, act, t = e.get("Package"), e.get("Action"), ts(e.get("Time"))
        if not pkg or t is None:
            continue
        p = pkgs.setdefault(pkg, {"start": None, "end": None, "result": None, "elapsed": None})
        test = e.get("Test")
        if test is None:
            if act == "start":
                p["start"] = t
            elif act in ("pass", "fail", "skip"):
                p["end"], p["result"], p["elapsed"] = t, act, e.get("Elapsed")
            continue
        rec = tests[pkg].setdefault(test, {"start": None, "end": None, "elapsed": None, "paused": False, "cont": None, "result": None})
        if act == "run":
            rec["start"] = t
        elif act == "pause":
            rec["paused"] = True
        elif act == "cont" and rec["cont"] is None:
            rec["cont"] = t  # its resumption; later "cont" lines only switch the output back
        elif act in ("pass", "fail", "skip"):
            rec["end"], rec["elapsed"], rec["result"] = t, e.get("Elapsed"), act

    cpus = read_cpu(args.cpu, pkgs) if args.cpu else {}
    # Per package.
    rows = []
    for pkg, p in pkgs.items():
        g = graph.get(pkg, {})
        link, run = g.get("link"), g.get("run")
        rs = run[0] if run else p["start"]
        re_ = run[1] if run else p["end"]
        if rs is None or re_ is None:
            continue
        top = sorted(((r["elapsed"] or 0, n) for n, r in tests[pkg].items() if "/" not in n), reverse=True)[:3]
        rows.append((rs, pkg, link, rs, re_, cpus[pkg][1] if pkg in cpus else None, p["result"], top))
    rows.sort()
    print("package                          link start-end  cpu   run start-end      wall   cpu   longest tests")
    for rs, pkg, link, s, e, cpu, res, top in rows:
        lk = "%6.1f-%6.1f %4.1f" % (link[0] - t0, link[1] - t0, link[2] or 0) if link else " " * 18
        c = "%5.1f" % cpu if cpu is not None else "    -"
        tl = ", ".join("%s %.1f" % (n, el) for el, n in top if el >= 0.5)
        flag = "" if res in ("pass", None) else " " + res.upper()
        print("%-32s %s  %6.1f-%6.1f %7.1f %s   %s%s" % (short(pkg)[:32], lk, s - t0, e - t0, e - s, c, tl, flag))

    # Concurrency profile, second by second.
    spans = []
    for rs, pkg, link, s, e, cpu, res, top in rows:
        if link:
            spans.append((link[0] - t0, link[1] - t0, "L"))
        spans.append((s - t0, e - t0, "R"))
    end = max(b for a, b, k in spans) if spans else 0
    lcpu = sum(r[2][2] or 0 for r in rows if r[2])
    rcpu = sum(r[5] for r in rows if r[5] is not None)
    print("\nCPU (user + sys): links %.1f s, runs %.1f s%s" % (lcpu, rcpu, "" if cpus else " (no -cpu file)"))
    busy = []
    idle = 0.0
    step = 0.1
    n = int(end / step) + 1
    for i in range(n):
        t = i * step
        k = sum(1 for a, b, _ in spans if a <= t < b)
        busy.append(k)
        idle += max(0, CORES - k) * step
    print("run wall %.1f s; core-seconds with fewer than %d links or runs in progress: %.1f" % (end, CORES, idle))
    line = []
    for sec in range(int(end) + 1):
        ks = busy[int(sec / step): int((sec + 1) / step)]
        line.append(str(min(9, round(sum(ks) / max(1, len(ks))))))
    for i in range(0, len(line), 60):
        print("%4d s  %s" % (i, "".join(line[i:i + 60])))

    # The focus package's phases.
    fp = next((p for p in pkgs if p == focus or p.endswith("/" + focus)), None)
    if not fp:
        return
    tt = tests[fp]
    tops = {n: r for n, r in tt.items() if "/" not in n and r["start"] is not None}
    conts = [r["cont"] for r in tops.values() if r["cont"]]
    serial = {n: r for n, r in tops.items() if not r["paused"]}
    par = {n: r for n, r in tops.items() if r["paused"]}
    pstart = pkgs[fp]["start"] or min(r["start"] for r in tops.values())
    print("\n%s: %d top-level tests, %d serial, %d parallel" % (short(fp), len(tops), len(serial), len(par)))
    if serial:
        se = min(conts) if conts else max(r["end"] or r["start"] for r in serial.values())
        print("  serial phase %.1f s, from the binary's start to the first parallel test's resumption (%.1f s of tests summed)" % (se - pstart, sum(r["elapsed"] or 0 for r in serial.values())))
        for el, n in sorted(((r["elapsed"] or 0, n) for n, r in serial.items()), reverse=True)[:8]:
            print("    %6.1f  %s" % (el, n))
    if par and conts:
        pe = max(r["end"] or 0 for r in par.values())
        print("  parallel phase %.1f s (%.1f s of tests summed)" % (pe - min(conts), sum(r["elapsed"] or 0 for r in par.values())))
        for el, n in sorted(((r["elapsed"] or 0, n) for n, r in par.items()), reverse=True)[:10]:
            r = par[n]
            print("    %6.1f  %-50s %6.1f-%6.1f" % (el, n, (r["cont"] or r["start"]) - t0, (r["end"] or 0) - t0))
    for pkg in pkgs:
        for n, r in tests[pkg].items():
            if r["result"] == "fail":
                print("FAIL %s %s" % (short(pkg), n))


if __name__ == "__main__":
    main(sys.argv)
