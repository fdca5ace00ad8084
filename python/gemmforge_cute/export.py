"""What every gemmforge CuTe DSL kernel shares on its way to a shared object for the C++ side: the
pinned DSL, its dtypes, and the link of the DSL's exported host launcher with a small C shim (the
fixed ABI the C++ side loads) and the DSL's and CUDA's static runtimes, so the .so needs nothing of
the DSL's wheel where it runs.
"""
import functools
import hashlib
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
    wgmma serialized, C7508: setmaxnreg ignored, ...).

    The report is the DSL's own ptxas run, told -v, whose output goes into a remark file where the
    pipeline has `diagnostic=ptx` (worker.py sets it; the DSL reads it from CUTE_DSL_COMPILER_OPT
    when imported). The DSL's `remarks{ptx}` option would do the same, but it also tracks every
    op's Python source location: the trace takes ~0.4 s longer. Where the remark file has no report
    (the variable unset), a second ptxas -v over the PTX runs beside the link: 0.1-0.2 s of CPU."""
    with tempfile.TemporaryDirectory(prefix="gf-cute-ptx-") as dump:
        remarks = os.path.join(dump, "remarks.yaml")
        compiled = cute.compile(fn, *args, options=f"{COMPILE_OPTIONS} --keep-ptx --dump-dir {dump} "
                                                   f"--ptxas-options '-v' --remark-output {remarks}")
        compiled_at = time.time()
        text = open(remarks).read() if os.path.exists(remarks) else ""
        ptxas = None
        if "Used " not in text:
            ptx = [os.path.join(dump, f) for f in os.listdir(dump) if f.endswith(".ptx")]
            ptxas = subprocess.Popen(["ptxas", "-arch=sm_90a", "-v", *ptx[:1], "-o", os.devnull],
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            link_shared_object(compiled, shim, abi, path)
        finally:
            if ptxas:
                text = ptxas.communicate()[0]
    return compiled_at, ptxas_report(text)


def ptxas_report(text: str) -> dict:
    """Registers, spill bytes and performance notes from ptxas -v's output (-1 where it has none)."""
    text = text.replace("''", "'")  # the remark file quotes it as a YAML string: '' is '
    registers = max((int(r) for r in re.findall(r"Used (\d+) registers", text)), default=-1)
    spills = [int(a) + int(b) for a, b in re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", text)]
    notes = sorted(set(re.findall(r"\((C7\d\d\d)\) ([^.\n]*)", text)))
    return {"registers": registers, "spill_bytes": sum(spills) if spills else -1,
            "ptxas_notes": [f"{code} {what}" for code, what in notes]}


def dsl_version() -> str:
    return importlib.metadata.version("nvidia-cutlass-dsl")


def check_pin():
    if dsl_version() != DSL_PIN:
        raise RuntimeError(f"nvidia-cutlass-dsl {dsl_version()} is installed; gemmforge pins {DSL_PIN}")


def cuda_home() -> str:
    return os.environ.get("CUDA_HOME", "/usr/local/cuda")


@functools.cache
def runtime_libs():
    """The DSL's static runtime and CUDA's static runtime (with what it needs)."""
    from cutlass.cute.export.aot_config import get_libdir

    return [os.path.join(get_libdir(), "libcuda_dialect_runtime_static.a"), f"-L{cuda_home()}/lib64",
            "-lcudart_static", "-lrt", "-ldl", "-lpthread"]


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
    libs = runtime_libs()
    with tempfile.TemporaryDirectory() as tmp:
        compiled.export_to_c(tmp, "kernel", "gf_cute")
        out = path + f".{os.getpid()}.tmp"
        link = [os.environ.get("CC", "cc"), "-shared", shim_object(SHIM_PREAMBLE.replace("ABI", str(abi)) + shim, tmp),
                os.path.join(tmp, "kernel.o"), *libs, "-Wl,--exclude-libs,ALL", "-Wl,--no-undefined", "-o", out]
        run(link, "linking the kernel")
    os.replace(out, path)


@functools.cache
def shim_objects():
    return tempfile.TemporaryDirectory(prefix="gf-cute-shims-")  # removed when the worker exits


def shim_object(source: str, header_dir: str) -> str:
    """The shim `source` compiled against header_dir's kernel.h, once a worker for each text of the
    two: kernels of one dtype and layout share their kernel.h (the tensors' dynamic extents and
    strides shape it), and the compile costs ~50 ms of a ~0.5 s kernel."""
    header = open(os.path.join(header_dir, "kernel.h")).read()
    obj = os.path.join(shim_objects().name, hashlib.sha1((source + header).encode()).hexdigest() + ".o")
    if not os.path.exists(obj):
        with open(os.path.join(header_dir, "shim.c"), "w") as f:
            f.write(source)
        run([os.environ.get("CC", "cc"), "-c", "-fPIC", "-O2", f"-I{cuda_home()}/include", f"-I{header_dir}",
             os.path.join(header_dir, "shim.c"), "-o", obj + ".tmp"], "compiling the kernel's shim")
        os.replace(obj + ".tmp", obj)
    return obj


def run(command, what: str):
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{what} failed: " + (done.stderr or done.stdout)[-2000:])
