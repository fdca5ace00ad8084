"""What every gemmforge CuTe DSL kernel shares on its way to a shared object for the C++ side: the
pinned DSL, its dtypes, and the link of the DSL's exported host launcher with a small C shim (the
fixed ABI the C++ side loads) and the DSL's and CUDA's static runtimes, so the .so needs nothing of
the DSL's wheel where it runs.
"""
import functools
import importlib.metadata
import os
import re
import subprocess
import tempfile
import time

import cutlass
import cutlass.cute as cute

DSL_PIN = "4.8.1"
DTYPES = {"bf16": cutlass.BFloat16, "f16": cutlass.Float16, "f32": cutlass.Float32,
          "e4m3": cutlass.Float8E4M3FN, "e5m2": cutlass.Float8E5M2}
# The host target named explicitly: the native one makes the DSL try to resolve CUDA's symbols in
# this process, which has no GPU driver.
COMPILE_OPTIONS = "--gpu-arch sm_90a --host-target 'llvm -mtriple=x86_64-unknown-linux-gnu'"


def compile_and_link(fn, args, shim: str, abi: int, path: str):
    """cute.compile(fn, *args) for sm_90a, linked with `shim` into a shared object at path
    (link_shared_object). Returns when the compile finished (time.time()) and ptxas's report of the
    kernel: registers a thread, spill bytes (stores and loads) and ptxas's performance notes (C7514:
    wgmma serialized, C7508: setmaxnreg ignored, ...). The report is `ptxas -v` on the PTX the DSL
    keeps, run beside the link (the DSL's own ptxas remarks cost ~0.4 s a compile)."""
    with tempfile.TemporaryDirectory(prefix="gf-cute-ptx-") as dump:
        compiled = cute.compile(fn, *args, options=f"{COMPILE_OPTIONS} --keep-ptx --dump-dir {dump}")
        compiled_at = time.time()
        ptx = [os.path.join(dump, f) for f in os.listdir(dump) if f.endswith(".ptx")]
        ptxas = subprocess.Popen(["ptxas", "-arch=sm_90a", "-v", *ptx[:1], "-o", os.devnull],
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            link_shared_object(compiled, shim, abi, path)
        finally:
            text = ptxas.communicate()[0]
    registers = max((int(r) for r in re.findall(r"Used (\d+) registers", text)), default=-1)
    spills = [int(a) + int(b) for a, b in re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", text)]
    notes = sorted(set(re.findall(r"\((C7\d\d\d)\) ([^.\n]*)", text)))
    return compiled_at, {"registers": registers, "spill_bytes": sum(spills) if spills else -1,
                         "ptxas_notes": [f"{code} {what}" for code, what in notes]}


def dsl_version() -> str:
    return importlib.metadata.version("nvidia-cutlass-dsl")


def check_pin():
    if dsl_version() != DSL_PIN:
        raise RuntimeError(f"nvidia-cutlass-dsl {dsl_version()} is installed; gemmforge pins {DSL_PIN}")


@functools.cache
def runtime_libs():
    """The DSL's static runtime and CUDA's static runtime (with what it needs)."""
    from cutlass.cute.export.aot_config import get_libdir

    cuda_home = os.environ.get("CUDA_HOME", "/usr/local/cuda")
    return [os.path.join(get_libdir(), "libcuda_dialect_runtime_static.a"), f"-L{cuda_home}/lib64",
            "-lcudart_static", "-lrt", "-ldl", "-lpthread"], cuda_home


# What every shim starts with: the exported kernel's header, its module, the ABI the C++ side checks
# (gf_cute_abi) and the module's load (gf_cute_load), which C++ calls once with a context current.
SHIM_PREAMBLE = r"""
#include <stdint.h>
#include "kernel.h"

static gf_cute_Kernel_Module_t module;

int gf_cute_abi(void) { return ABI; }

int gf_cute_load(void) {
  cudaGetLastError();
  gf_cute_Kernel_Module_Load(&module);
  return (int)cudaGetLastError();
}
"""


def link_shared_object(compiled, shim: str, abi: int, path: str):
    """Exports `compiled` (a cute.compile result) as C under the prefix gf_cute (kernel.h names its
    module and tensor types), links it with the preamble and `shim` (its launch entry point, which
    uses `module`) into a shared object of that ABI and moves that to path."""
    libs, cuda_home = runtime_libs()
    with tempfile.TemporaryDirectory() as tmp:
        compiled.export_to_c(tmp, "kernel", "gf_cute")
        with open(os.path.join(tmp, "shim.c"), "w") as f:
            f.write(SHIM_PREAMBLE.replace("ABI", str(abi)) + shim)
        out = path + f".{os.getpid()}.tmp"
        link = [os.environ.get("CC", "cc"), "-shared", "-fPIC", "-O2", f"-I{cuda_home}/include", f"-I{tmp}",
                os.path.join(tmp, "shim.c"), os.path.join(tmp, "kernel.o"), *libs,
                "-Wl,--exclude-libs,ALL", "-Wl,--no-undefined", "-o", out]
        done = subprocess.run(link, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError("linking the kernel failed: " + (done.stderr or done.stdout)[-2000:])
    os.replace(out, path)
