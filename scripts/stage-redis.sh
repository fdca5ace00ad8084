#!/usr/bin/env bash
# Stages redis-server for the GPU machine, which has none and no network: this machine's binary
# (scripts/setup.sh installs it) and the shared libraries it loads beyond the C library, in
# .carry/redis (carried with the working tree; gpu-check.sh's fleet step runs it from there).
set -euo pipefail
cd "$(dirname "$0")/.."
server=$(command -v redis-server)
rm -rf .carry/redis
mkdir -p .carry/redis
cp "$server" .carry/redis/
ldd "$server" | awk '$3 ~ /^\// {print $3}' | grep -vE '/(libc|libm|libpthread|libdl|librt|ld-linux[^/]*)\.so' |
  xargs -r cp -L -t .carry/redis/
du -sh .carry/redis
