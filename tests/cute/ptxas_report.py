"""The CuTe DSL worker's ptxas report (registers, spills, notes) comes from the DSL's own ptxas run,
through the remark file export.compile_and_link reads, not from a second ptxas over the PTX (0.1-0.2 s
of CPU a compile): one small kernel compiled as worker.py sets the DSL up, with any ptxas process
an error. And the report's parser reads a remark's YAML quoting. No GPU; exits 77 (skipped) where
nvidia-cutlass-dsl is missing.
"""
import os
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "python", "gemmforge_cute"))
sys.path.insert(0, os.path.join(here, "..", "..", "python"))
try:
    import worker  # noqa: F401  (sets the DSL up as the compile workers do)
    from build import compile_request
    from export import ptxas_report
except ImportError as e:
    print(f"skipped: nvidia-cutlass-dsl is missing ({e})")
    sys.exit(77)

remark = """  - Remark:      'ptxas output: ptxas info    : Used 90 registers, used 2 barriers
ptxas         .     0 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads
ptxas info    : (C7508) Potential Performance Loss: ''setmaxnreg'' ignored; unable to determine register count at entry
'"""
assert ptxas_report(remark) == {
    "registers": 90, "spill_bytes": 12,
    "ptxas_notes": ["C7508 Potential Performance Loss: 'setmaxnreg' ignored; unable to determine register count at entry"]
}, ptxas_report(remark)

spawn = subprocess.Popen.__init__


def no_ptxas(self, args, *rest, **kw):
    assert "ptxas" not in os.path.basename(str(args[0] if isinstance(args, list) else args)), \
        "a second ptxas ran: the DSL's remark file had no ptxas report"
    spawn(self, args, *rest, **kw)


subprocess.Popen.__init__ = no_ptxas
with tempfile.TemporaryDirectory() as tmp:
    r = compile_request({"op": "compile", "dtype": "bf16", "out": "bf16", "layout": "tn", "tile_m": 64, "tile_n": 16,
                         "cluster_m": 1, "cluster_n": 1, "swap_ab": True, "path": os.path.join(tmp, "k.so")})
assert r["ok"] and r["registers"] > 0 and r["spill_bytes"] == 0 and r["ptxas_notes"] == [], r
print(f"ok: {r['registers']} registers, no spills, reported by the DSL's ptxas ({r['compile_seconds']:.2f} s)")
