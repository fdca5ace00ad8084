#!/usr/bin/env python3
"""Rewrites tests/data/measured_winners.json from the --json of exhaustive native tuning runs:
per problem, the fastest verified native candidate and the best time of any backend's.

    gemmforge tune -f -s exhaustive -b native -p SPEC ... --json run.json   # on the GPU machine
    scripts/refresh-winners.py run.json [more.json ...]

Problems the runs do not cover keep their entries.
"""
import json
import os
import sys

path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "measured_winners.json")
data = json.load(open(path))
entries = {e["problem"]: e for e in data["native_fast_list"]}
for run in sys.argv[1:]:
    for record in json.load(open(run)):
        timed = [c for c in record.get("candidates", []) if c.get("verified") and c.get("us", 0) > 0]
        native = [c for c in timed if c["backend"] == "native"]
        if not native:
            continue
        win = min(native, key=lambda c: c["us"])
        entries[record["problem"]] = {"problem": record["problem"], "candidate": win["candidate"],
                                      "us": round(win["us"], 1), "best_us": round(min(c["us"] for c in timed), 1)}
data["native_fast_list"] = sorted(entries.values(), key=lambda e: (int(e["problem"].split("x")[0]), e["problem"]))
with open(path, "w") as f:
    f.write("{\n  \"about\": " + json.dumps(data["about"]) + ",\n  \"native_fast_list\": [\n")
    f.write(",\n".join("    " + json.dumps(e) for e in data["native_fast_list"]))
    f.write("\n  ]\n}\n")
print(f"{len(entries)} winners in {os.path.relpath(path)}")
