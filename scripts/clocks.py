#!/usr/bin/env python3
"""The GPU's clock and power during each step of a run, from `nvidia-smi -lms` samples and the
step marks beside them. An H200 holds its power cap (~700 W) through sustained large GEMMs and
gives up clock instead, so a kernel's time depends on the power it and its neighbours draw
(docs/journal, 2026-12-04): this table says what clock each step's timings ran at.

    scripts/clocks.py CLOCKS.csv MARKS.txt
CLOCKS.csv: nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,clocks_throttle_reasons.active
--format=csv,noheader -lms N (further fields before the reasons are skipped). MARKS.txt: "YYYY/MM/DD HH:MM:SS.fff step name" a line, each step's
start (the next mark ends it). Only busy samples count (power above BUSY_W).
"""
import datetime
import statistics
import sys

BUSY_W = 250  # an idle H200 draws ~100-130 W; a GEMM or copy in flight, 300 and up


def when(text):
    return datetime.datetime.strptime(text.strip()[:26], "%Y/%m/%d %H:%M:%S.%f")


def samples(path):
    out = []
    for line in open(path):
        fields = [f.strip() for f in line.split(",")]
        try:
            reasons = next((int(f, 16) for f in fields[3:] if f.startswith("0x")), 0)
            out.append((when(fields[0]), float(fields[1].split()[0]), float(fields[2].split()[0]), reasons))
        except (ValueError, IndexError):
            continue  # a header, or a sample nvidia-smi could not read ("[N/A]")
    return out


def marks(path):
    out = []
    for line in open(path):
        if len(line) > 30:
            out.append((when(line[:29]), line[29:].strip()))
    return out


def main():
    rows, steps = samples(sys.argv[1]), marks(sys.argv[2])
    if not rows or not steps:
        print("no clock samples")
        return
    steps.append((rows[-1][0] + datetime.timedelta(seconds=1), "end"))
    print(f"{'step':56s} {'busy s':>7s} {'SM MHz':>7s} {'min':>5s} {'W':>5s} {'max W':>6s}  power-capped")
    for (start, name), (stop, _) in zip(steps, steps[1:]):
        busy = [r for r in rows if start <= r[0] < stop and r[2] > BUSY_W]
        if len(busy) < 2:
            continue
        seconds = (busy[-1][0] - busy[0][0]).total_seconds()
        capped = sum(1 for r in busy if r[3] & 0x4) / len(busy)  # throttle reason 0x4: the power cap
        print(f"{name[:56]:56s} {seconds:7.1f} {statistics.median(r[1] for r in busy):7.0f} "
              f"{min(r[1] for r in busy):5.0f} {statistics.median(r[2] for r in busy):5.0f} "
              f"{max(r[2] for r in busy):6.0f}  {100 * capped:3.0f}%")


if __name__ == "__main__":
    main()
