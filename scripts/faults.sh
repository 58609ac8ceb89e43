#!/usr/bin/env bash
# Where a command's page faults come from: each fault given to its thread and to the first
# frame above it that is tracex's own code (not std, alloc, core, the allocator, libc or the
# kernel), counted and sorted. On a VM a fault costs microseconds (zeroing, memory-cgroup
# charging), and for a small trace they were a third of a conversion's time.
#
# Usage: scripts/faults.sh [-n TOP] CMD...
#   scripts/faults.sh target/release/tracex -q convert -f a.txt b.json out.folded
# Needs perf (linux-perf) with permission to record user call graphs (root, or
# kernel.perf_event_paranoid <= 1), and python3.
set -euo pipefail

top=25
if [ "${1:-}" = "-n" ]; then top=$2; shift 2; fi
[ $# -gt 0 ] || { sed -n 2,11p "$0"; exit 1; }
command -v perf >/dev/null || { echo "faults.sh: perf is not installed" >&2; exit 1; }

data=$(mktemp)
trap 'rm -f "$data" "$data.txt"' EXIT
# -c 1: every fault; DWARF unwinding, as the release build keeps no frame pointers
perf record -q -m 4096 -e page-faults -c 1 --call-graph dwarf,8192 -o "$data" -- "$@" >/dev/null
perf script -i "$data" 2>/dev/null >"$data.txt"

python3 - "$data.txt" "$top" <<'EOF'
import collections, re, sys

path, top = sys.argv[1], int(sys.argv[2])
# frames that only say how memory was reached, not which code wanted it
plumbing = re.compile(
    r"(<?&?(alloc|core|std)::|alloc_impl|_?mi_|__mem|_copy|copy_|filemap|vfs_|ksys|__x64"
    r"|do_sys|entry_SYS|read$|write$|\[unknown\]|grow|finish_grow|reserve|do_reserve|realloc"
    r"|exc_page|asm_exc|__handle|handle_mm|do_user|_raw|clear_page|push<|push_mut<|allocate|extend|spec_|write<"
    r"|from_iter|to_vec|clone|collect|__GI_|_dl_|elf_)"
)
by_site = collections.Counter()
by_thread = collections.Counter()
for sample in open(path, errors="replace").read().split("\n\n"):
    lines = [l for l in sample.split("\n") if l.strip()]
    if not lines:
        continue
    thread = re.split(r"\s+\d+\s", lines[0].strip(), maxsplit=1)[0]
    site = "(outside tracex's code)"
    for frame in lines[1:]:
        parts = frame.strip().split(None, 1)
        if len(parts) < 2:
            continue
        name = re.sub(r"\+0x[0-9a-f]+", "", parts[1])
        name = re.sub(r" \(.*\)$", "", name)
        if not plumbing.match(name):
            site = name
            break
    by_thread[thread] += 1
    by_site[(thread, site)] += 1
total = sum(by_thread.values())
print(f"{total} page faults ({total * 4 // 1024} MiB of 4 KiB pages touched for the first time)")
for thread, n in by_thread.most_common():
    print(f"{n:8} {100 * n / total:5.1f}%  thread {thread}")
print()
for (thread, site), n in by_site.most_common(top):
    print(f"{n:8} {100 * n / total:5.1f}%  {thread[:16]:16}  {site[:100]}")
EOF
