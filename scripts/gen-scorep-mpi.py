#!/usr/bin/python3
"""Writes a large OTF2 archive shaped as Score-P writes an MPI program's (for scripts/bench.sh
otf2-mpi): RANKS ranks, each ITERATIONS times a ring exchange (MPI_Sendrecv: one send to the
next rank, one receive from the previous), an MPI_Allreduce (collective begin and end) and a
write on a file handle, inside a `main` region; message sizes grow with the iteration.
Needs Debian's python3-otf2 (scripts/setup.sh installs it).

    /usr/bin/python3 scripts/gen-scorep-mpi.py OUT_DIR RANKS ITERATIONS

Events per rank and iteration: 10 (Enter/Leave x3, send, receive, collective begin and end, I/O
begin and complete), so 8 ranks x 25000 iterations is 2M events.
"""

import sys

import otf2
from otf2.enums import (
    CollectiveOp,
    GroupType,
    IoOperationFlag,
    IoOperationMode,
    IoParadigmClass,
    IoParadigmFlag,
    LocationGroupType,
    LocationType,
    Paradigm,
    RegionRole,
    Undefined,
)


def main():
    out, ranks, iterations = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    with otf2.writer.open(out, "traces", timer_resolution=1_000_000_000) as trace:
        d = trace.definitions
        node = d.system_tree_node("node0", class_name="node")
        groups = [
            d.location_group(f"MPI Rank {r}", location_group_type=LocationGroupType.PROCESS,
                             system_tree_parent=node)
            for r in range(ranks)
        ]
        locs = [d.location("Master thread", type=LocationType.CPU_THREAD, group=g)
                for g in groups]
        d.group("", group_type=GroupType.COMM_LOCATIONS, paradigm=Paradigm.MPI, members=locs)
        world = d.comm("MPI_COMM_WORLD",
                       group=d.group("", group_type=GroupType.COMM_GROUP,
                                     paradigm=Paradigm.MPI, members=list(range(ranks))))
        main_ = d.region("main", paradigm=Paradigm.COMPILER)
        sendrecv = d.region("MPI_Sendrecv", paradigm=Paradigm.MPI,
                            region_role=RegionRole.POINT2POINT)
        allreduce = d.region("MPI_Allreduce", paradigm=Paradigm.MPI,
                             region_role=RegionRole.COLL_ALL2ALL)
        write = d.region("write", region_role=RegionRole.FILE_IO)
        posix = d.io_paradigm("POSIX", "POSIX I/O", IoParadigmClass.SERIAL, IoParadigmFlag.NONE)
        handle = d.io_handle("fd 3", file=d.io_regular_file("/scratch/out.dat", scope=node),
                             io_paradigm=posix)
        writers = [trace.event_writer_from_location(loc) for loc in locs]
        for w in writers:
            w.enter(1_000, main_)
        for i in range(iterations):
            t = 2_000 + i * 10_000
            size = 8 << (i % 16)
            for r, w in enumerate(writers):
                w.enter(t, sendrecv)
                w.mpi_send(t + 100, (r + 1) % ranks, world, 1, size)
                w.mpi_recv(t + 2_000, (r - 1) % ranks, world, 1, size)
                w.leave(t + 2_100, sendrecv)
                w.enter(t + 3_000, allreduce)
                w.mpi_collective_begin(t + 3_010)
                w.mpi_collective_end(t + 5_000, CollectiveOp.ALLREDUCE, world,
                                     Undefined.UINT32, 8, 8)
                w.leave(t + 5_010, allreduce)
                w.enter(t + 6_000, write)
                w.io_operation_begin(t + 6_010, handle, IoOperationMode.WRITE,
                                     IoOperationFlag.NONE, size, i)
                w.io_operation_complete(t + 7_000, handle, size, i)
                w.leave(t + 7_010, write)
        end = 2_000 + iterations * 10_000
        for w in writers:
            w.leave(end, main_)


if __name__ == "__main__":
    main()
