export GEMMFORGE_HOME=/tmp/gf-home LD_LIBRARY_PATH=/usr/local/cuda/lib64
gf=build/gemmforge
GF_TEST_TIMEOUT=80 timeout 100 build/tests/gf_gpu_tests --gtest_brief=1 --gtest_filter='*RowOp*:*Native*' > $OUT/gpu-tests.log 2>&1; grep -E "FAILED|PASSED|Failure|TIMEOUT" $OUT/gpu-tests.log | head -12
echo "== bench -s default, native and cuBLASLt"
timeout 150 $gf bench -b native,cublaslt -s default -p 4096x6144x4096:bf16 -p 4096x4096x4096:bf16 -p 4096x28672x4096:bf16 -p 4096x4096x14336:bf16 -p 4096x128256x4096:bf16 -p 8192x10240x8192:bf16 -p 8192x8192x8192:bf16 -p 8192x57344x8192:bf16 -p 8192x8192x28672:bf16 --json $OUT/bench-default.json > $OUT/bench-default.txt 2>&1
grep -E "native|cublaslt " $OUT/bench-default.txt | awk '{print $1, $2, $3, $4}'
T_OPS=75 timeout 80 bash scripts/gpu-check.sh ops
