"""Every local module a CuTe DSL build imports is hashed into its backend's cache key: a module
missing from a backend's version_string list (src/backends/*/cute/backend.cpp) would leave kernels
of its old code cached after it changes. Reads the imports with ast; needs no DSL."""
import ast
import os
import re
import sys

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.join(here, "..", "..")
package = os.path.join(root, "python", "gemmforge_cute")


def local_imports(module, seen):
    """module and the modules of gemmforge_cute it imports, transitively."""
    if module in seen:
        return seen
    seen.add(module)
    tree = ast.parse(open(os.path.join(package, module)).read())
    for node in ast.walk(tree):
        names = [node.module] if isinstance(node, ast.ImportFrom) and node.module else \
            [a.name for a in node.names] if isinstance(node, ast.Import) else []
        for name in names:
            if os.path.exists(os.path.join(package, name + ".py")):
                local_imports(name + ".py", seen)
    return seen


def hashed(source):
    """The gemmforge_cute files a C++ source (a path under src/) names for hashing."""
    text = open(os.path.join(root, "src", source)).read()
    return set(re.findall(r'"gemmforge_cute/(\w+\.py)"', text))


shared = hashed("jit/cute_dsl.cpp")  # the worker's files, in every CuTe DSL kernel's key
failed = False
for entry, backend in (("build.py", "backends/gemm/cute/backend.cpp"),
                       ("build_rowop.py", "backends/rowop/cute/backend.cpp")):
    missing = local_imports(entry, set()) - shared - hashed(backend)
    if missing:
        print(f"{backend}: the cache key does not hash {sorted(missing)}, which {entry} imports")
        failed = True
if failed:
    sys.exit(1)
print("cache keys: every module a CuTe DSL build imports is hashed")
