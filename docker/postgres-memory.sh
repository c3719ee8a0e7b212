#!/bin/sh
# Entrypoint of the compose Postgres: sizes shared_buffers and effective_cache_size from the memory the
# container may use (its cgroup limit, else the host's MemTotal), then runs the image's own entrypoint
# with the compose command plus those two settings. Same rule as the embedded launcher (cairn/stack.py
# memory_tuning): shared_buffers a quarter of memory, 128 MB..8 GB (the host also runs OpenSearch, web
# and workers); effective_cache_size half (a planner estimate, it allocates nothing).
# PG_SHARED_BUFFERS / PG_EFFECTIVE_CACHE_SIZE in .env (e.g. 6GB) override. docs/vector-benchmark.md.
set -eu
total_kb=$(awk '/^MemTotal:/ {print $2}' /proc/meminfo)
for f in /sys/fs/cgroup/memory.max /sys/fs/cgroup/memory/memory.limit_in_bytes; do
  [ -r "$f" ] || continue
  limit=$(cat "$f")
  case "$limit" in
    ''|*[!0-9]*) ;;  # "max": no limit
    *) [ $((limit / 1024)) -lt "$total_kb" ] && total_kb=$((limit / 1024)) ;;
  esac
done
total_mb=$((total_kb / 1024))
shared=$((total_mb / 4))
[ "$shared" -lt 128 ] && shared=128
[ "$shared" -gt 8192 ] && shared=8192
cache=$((total_mb / 2))
[ "$cache" -lt 512 ] && cache=512
exec docker-entrypoint.sh "$@" -c "shared_buffers=${PG_SHARED_BUFFERS:-${shared}MB}" \
  -c "effective_cache_size=${PG_EFFECTIVE_CACHE_SIZE:-${cache}MB}"
