#pragma once
// Candidates run in a worker process, so that one that faults (illegal address, a corrupted
// context) or hangs costs a restart, not the tuning run. The worker is this same program run
// with the argument "__worker"; it speaks one JSON object per line on the channel WorkerProcess
// gives it (process/worker_process.hpp), each reply repeating its request's "id":
//
//   {"op":"problem","family":"gemm"|"rowop","problem":KEY,"seed":N,"hold":H}  -> {"ok":true,"sets":N}
//       makes the problem the current one, setting it up unless it is held already; the worker
//       holds the H (default 1) problems it was last given, so that a bench can time problems
//       of one group (a fused GEMM and its plain one) in the same rounds, switching without setup.
//   {"op":"measure","backend":B,"candidate":{...},"time":true,"timing":{...}}
//                                                            -> {"ok":true,"verified":..,"us":..,...}
//   {"op":"race","candidates":[{...},...],"rounds":N,"warmup_ms":X,"seed":N}
//                                   -> {"ok":true,"results":[{"verified":..,"us":..,"error":..},...]}
//   {"op":"copy_bandwidth"}                                 -> {"ok":true,"tbps":X}
//   {"op":"copy","bytes":N}                                 -> {"ok":true,"us":X,"graph_us":Y}
//   {"op":"quit"}
//
// A reply with "fatal":true means the worker's CUDA context is lost; it exits after replying.

namespace gf::tune {

// The child's loop. Returns the process exit code.
int worker_main();

// Call first in main(): runs the worker loop and exits when argv[1] is "__worker".
void maybe_run_worker(int argc, char** argv);

}  // namespace gf::tune
