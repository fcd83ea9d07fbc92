"""Turn abba_pacing.py's JSON into the Markdown table of docs/BENCHMARKS.md."""
import json, sys
res = json.load(open(sys.argv[1]))
names = {"fio": "fio", "nw-fio-defaults": "nowait, fio's defaults", "nw-engine-adaptive": "nowait, engine policy (adaptive)", "nw-engine-batch": "nowait, engine policy, `--submit=batch`"}
wl = None
print("| workload | QD | run | IOPS median (range of 6) | × fio | CPU µs/read | × fio CPU | submission |")
print("| --- | ---: | --- | ---: | ---: | ---: | ---: | --- |")
for r in res:
    sub = ",".join(s for s in r["sub"] if s) or "–"
    print(f"| {r['workload']} | {r['qd']} | {names[r['arm']]} | {r['median']/1000:.1f}k ({r['lo']/1000:.1f}–{r['hi']/1000:.1f}) | {'' if r['arm']=='fio' else '**%.2f×**' % r['ratio']} | {r['cpu_us']:.2f} | {'' if r['arm']=='fio' else '%.2f×' % r['cpu_ratio']} | {sub} |")
