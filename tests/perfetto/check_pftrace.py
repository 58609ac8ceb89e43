#!/usr/bin/env python3
"""Independent check of a Perfetto protobuf trace written by tracex.

Decodes the trace with the protos of the `perfetto` PyPI package (not tracex's), checks the
packet sequence rules, and prints what it holds as JSON:

* every sequence starts by clearing its incremental state, before any packet that needs it;
* every interned id a packet uses (event names, categories, annotation names, callstacks,
  frames, function names, mappings and their paths, stack-sample contexts) was defined
  earlier on the same sequence, since the last clear;
* every track an event names has a TrackDescriptor, and parents are described too;
* on every track, each SLICE_END closes an open SLICE_BEGIN (in file order);
* timestamps on the sequence's incremental clock never go backwards (deltas are unsigned, and
  the clock must be defined by a snapshot first).

Usage: check_pftrace.py TRACE   (exit 1 and the broken rules on stderr when a rule fails)
"""

import collections
import gzip
import json
import sys

from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as P

CLEARED = P.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED
NEEDS = P.TracePacket.SEQ_NEEDS_INCREMENTAL_STATE


def main(path):
    data = open(path, "rb").read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    trace = P.Trace()
    trace.ParseFromString(data)

    errors = []

    def fail(i, what):
        if len(errors) < 20:
            errors.append(f"packet {i}: {what}")

    interned = {}  # sequence -> kind -> set of iids
    cleared = set()
    descriptors = {}
    used_tracks = set()
    delta_clocks = {}  # sequence -> clock ids defined as incremental
    open_slices = collections.Counter()
    counts = collections.Counter()
    flow_ids = collections.Counter()
    processes, threads = set(), set()

    def need(seq, kind, iid, i):
        if iid and iid not in interned.get(seq, {}).get(kind, ()):
            fail(i, f"{kind} iid {iid} used before it is defined on sequence {seq}")

    for i, p in enumerate(trace.packet):
        seq = p.trusted_packet_sequence_id
        if p.sequence_flags & CLEARED or p.incremental_state_cleared:
            cleared.add(seq)
            interned[seq] = collections.defaultdict(set)
        if p.sequence_flags & NEEDS and seq not in cleared:
            fail(i, f"needs incremental state before sequence {seq} cleared it")
        if p.HasField("interned_data"):
            if seq not in cleared:
                fail(i, f"interned data before sequence {seq} cleared its state")
            d = p.interned_data
            table = interned.setdefault(seq, collections.defaultdict(set))
            for kind in ("event_names", "event_categories", "debug_annotation_names",
                         "debug_annotation_string_values",
                         "function_names", "mapping_paths", "mappings", "frames", "callstacks",
                         "stack_sample_task_contexts", "stack_sample_execution_contexts",
                         "stack_sample_counter_descriptors"):
                for e in getattr(d, kind):
                    if e.iid == 0:
                        fail(i, f"{kind} entry with iid 0")
                    table[kind].add(e.iid)
            for m in d.mappings:
                for path in m.path_string_ids:
                    need(seq, "mapping_paths", path, i)
            for f in d.frames:
                need(seq, "function_names", f.function_name_id, i)
                need(seq, "mappings", f.mapping_id, i)
            for c in d.callstacks:
                for f in c.frame_ids:
                    need(seq, "frames", f, i)
        if p.HasField("clock_snapshot"):
            for c in p.clock_snapshot.clocks:
                if c.is_incremental:
                    delta_clocks.setdefault(seq, set()).add(c.clock_id)
        if p.HasField("trace_packet_defaults"):
            clock = p.trace_packet_defaults.timestamp_clock_id
            if clock >= 64 and clock not in delta_clocks.get(seq, set()) and p.HasField("timestamp"):
                fail(i, "timestamp on a sequence clock no snapshot defined")
        if p.HasField("track_descriptor"):
            d = p.track_descriptor
            descriptors[d.uuid] = d
            if d.HasField("process"):
                processes.add(d.process.pid)
            if d.HasField("thread"):
                threads.add((d.thread.pid, d.thread.tid))
        if p.HasField("track_event"):
            e = p.track_event
            need(seq, "event_names", e.name_iid, i)
            for c in e.category_iids:
                need(seq, "event_categories", c, i)
            stack = list(e.debug_annotations)
            while stack:
                a = stack.pop()
                need(seq, "debug_annotation_names", a.name_iid, i)
                need(seq, "debug_annotation_string_values", a.string_value_iid, i)
                stack.extend(a.dict_entries)
                stack.extend(a.array_values)
            need(seq, "callstacks", e.callstack_iid, i)
            if e.track_uuid:
                used_tracks.add(e.track_uuid)
            for u in e.extra_counter_track_uuids:
                used_tracks.add(u)
            kind = e.type
            if kind == P.TrackEvent.TYPE_SLICE_BEGIN:
                counts["slices"] += 1
                open_slices[e.track_uuid] += 1
            elif kind == P.TrackEvent.TYPE_SLICE_END:
                if open_slices[e.track_uuid] == 0:
                    fail(i, f"SLICE_END on track {e.track_uuid} without an open slice")
                else:
                    open_slices[e.track_uuid] -= 1
            elif kind == P.TrackEvent.TYPE_INSTANT:
                counts["instants"] += 1
            elif kind == P.TrackEvent.TYPE_COUNTER:
                counts["counter_values"] += 1
            elif e.HasField("legacy_event"):
                counts["legacy_flow_points"] += 1
            for f in list(e.flow_ids) + list(e.terminating_flow_ids):
                flow_ids[f] += 1
            counts["extra_counter_values"] += len(e.extra_counter_values)
        if p.HasField("stack_sample"):
            s = p.stack_sample
            counts["samples"] += 1
            need(seq, "stack_sample_task_contexts", s.task_context_iid, i)
            need(seq, "stack_sample_execution_contexts", s.execution_context_iid, i)
            need(seq, "callstacks", s.callstack_iid, i)
            need(seq, "stack_sample_counter_descriptors", s.primary_descriptor_iid, i)

    for u in sorted(used_tracks):
        if u not in descriptors:
            errors.append(f"track {u} is used but never described")
    for u, d in descriptors.items():
        if d.parent_uuid and d.parent_uuid not in descriptors:
            errors.append(f"track {u} has parent {d.parent_uuid}, which is not described")
    counts["open_slices"] = sum(open_slices.values())
    counts["flow_points"] = sum(flow_ids.values())
    counts["flows"] = len(flow_ids)
    counts["packets"] = len(trace.packet)
    counts["tracks"] = len(descriptors)
    counts["processes"] = len(processes)
    counts["threads"] = len(threads)
    counts["sequences"] = len({p.trusted_packet_sequence_id for p in trace.packet})
    print(json.dumps(dict(sorted(counts.items()))))
    if errors:
        print("\n".join(errors), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
