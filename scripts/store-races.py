#!/usr/bin/env python3
"""Stores exhaustive native races for the tests that judge the fast list by measured times:
each problem's record in tests/data/fitted-races.json is replaced by the run's, in full (every
verified native candidate's time), with the best of them as best_us (the tests judge native's
fast list against native's best).

    gemmforge tune -f -s exhaustive -b native -p SPEC ... --json run.json   # on the GPU machine
    scripts/store-races.py run.json [more.json ...]

Problems the runs do not cover keep their records.
"""
import json
import os
import sys

path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "fitted-races.json")
data = json.load(open(path))
races = {r["problem"]: r for r in data["races"]}
for run in sys.argv[1:]:
    for record in json.load(open(run)):
        timed = [c for c in record.get("candidates", []) if c.get("verified") and c.get("us", 0) > 0]
        native = [c for c in timed if c["backend"] == "native"]
        if not native:
            continue
        races[record["problem"]] = {
            "problem": record["problem"], "best_us": round(min(c["us"] for c in native), 2),
            "candidates": [{"backend": "native", "candidate": c["candidate"], "us": round(c["us"], 2), "verified": True}
                           for c in sorted(native, key=lambda c: c["us"])]}
data["races"] = sorted(races.values(), key=lambda r: (int(r["problem"].split("x")[0]), r["problem"]))
with open(path, "w") as f:
    f.write("{\n  \"about\": " + json.dumps(data["about"]) + ",\n  \"races\": [\n")
    f.write(",\n".join("    " + json.dumps(r) for r in data["races"]))
    f.write("\n  ]\n}\n")
print(f"{len(races)} races in {os.path.relpath(path)}")
