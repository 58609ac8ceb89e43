//! The catalogue of event tables tracex reads row by row: CPU ranges on thread tracks, GPU work
//! on stream tracks, and point events. Only facts about the tables (names, activities,
//! categories, which columns become which arguments); how rows become events is in the decoding
//! modules, and this module depends on none of them.

use tracex_ir::kind::cat;

use crate::enums::Enum;
use crate::options::Activity;
use crate::stacks::Chain;

/// How an argument column is shown.
#[derive(Clone, Copy, Debug)]
pub enum How {
    /// Any value as it is stored.
    Raw,
    Int,
    /// A `StringIds` id, shown as its text.
    Str,
    /// An enumeration value, shown as its label.
    Enum(Enum),
}

/// A column shown as an argument.
#[derive(Clone, Copy, Debug)]
pub struct ArgCol {
    pub col: &'static str,
    pub key: &'static str,
    pub how: How,
}

const fn a(col: &'static str, key: &'static str, how: How) -> ArgCol {
    ArgCol { col, key, how }
}

/// A CPU table of ranges on thread tracks.
#[derive(Debug)]
pub struct CpuTable {
    pub table: &'static str,
    pub activity: Activity,
    pub cat: &'static str,
    /// The column holding the name's string id, and the name when it is NULL.
    pub name_col: &'static str,
    pub fallback_name: &'static str,
    pub args: &'static [ArgCol],
    /// Every other column becomes an argument too (tables seen in no fixture, whose columns
    /// tracex passes through as they are).
    pub rest_as_args: bool,
    pub chain: Option<Chain>,
}

use How::*;

const MPI_NAME: &str = "MPI call";
const OPENMP_NAME: &str = "OpenMP";

pub static CPU_TABLES: &[CpuTable] = &[
    CpuTable {
        table: "OSRT_API",
        activity: Activity::Osrt,
        cat: cat::OSRT,
        name_col: "nameId",
        fallback_name: "OS runtime call",
        args: &[
            a("returnValue", "return_value", Int),
            a("nestingLevel", "nesting_level", Int),
            a("eventClass", "event_class", Enum(Enum::EventClass)),
        ],
        rest_as_args: false,
        chain: Some(Chain::Osrt),
    },
    passthrough(
        ("CUBLAS_EVENTS", Activity::Cublas, cat::CUBLAS),
        ("nameId", "cuBLAS call"),
        &[a("eventClass", "event_class", Enum(Enum::EventClass))],
    ),
    passthrough(
        ("CUDNN_EVENTS", Activity::Cudnn, cat::CUDNN),
        ("nameId", "cuDNN call"),
        &[a("eventClass", "event_class", Enum(Enum::EventClass))],
    ),
    passthrough(
        ("MPI_P2P_EVENTS", Activity::Mpi, cat::MPI),
        ("textId", MPI_NAME),
        &[
            a("commHandle", "communicator", Int),
            a("tag", "tag", Int),
            a("remoteRank", "remote_rank", Int),
            a("size", "size_bytes", Int),
            a("requestHandle", "request", Int),
        ],
    ),
    passthrough(
        ("MPI_COLLECTIVES_EVENTS", Activity::Mpi, cat::MPI),
        ("textId", MPI_NAME),
        &[
            a("commHandle", "communicator", Int),
            a("rootRank", "root_rank", Int),
            a("size", "size_bytes", Int),
            a("recvSize", "recv_size_bytes", Int),
            a("requestHandle", "request", Int),
        ],
    ),
    passthrough(
        ("MPI_START_WAIT_EVENTS", Activity::Mpi, cat::MPI),
        ("textId", MPI_NAME),
        &[a("requestHandle", "request", Int)],
    ),
    passthrough(
        ("MPI_OTHER_EVENTS", Activity::Mpi, cat::MPI),
        ("textId", MPI_NAME),
        &[],
    ),
    passthrough(
        ("UCP_EVENTS", Activity::Ucx, "ucx"),
        ("textId", "UCX call"),
        &[],
    ),
    passthrough(
        ("UCP_SUBMIT_EVENTS", Activity::Ucx, "ucx"),
        ("textId", "UCX submit"),
        &[],
    ),
    passthrough(
        ("UCP_PROGRESS_EVENTS", Activity::Ucx, "ucx"),
        ("textId", "UCX progress"),
        &[],
    ),
    passthrough(
        (
            "CUPTI_ACTIVITY_KIND_OPENACC_DATA",
            Activity::Openacc,
            cat::OPENACC,
        ),
        ("nameId", "OpenACC data"),
        OPENACC_ARGS,
    ),
    passthrough(
        (
            "CUPTI_ACTIVITY_KIND_OPENACC_LAUNCH",
            Activity::Openacc,
            cat::OPENACC,
        ),
        ("nameId", "OpenACC launch"),
        OPENACC_ARGS,
    ),
    passthrough(
        (
            "CUPTI_ACTIVITY_KIND_OPENACC_OTHER",
            Activity::Openacc,
            cat::OPENACC,
        ),
        ("nameId", "OpenACC"),
        OPENACC_ARGS,
    ),
    openmp("OPENMP_EVENT_KIND_THREAD"),
    openmp("OPENMP_EVENT_KIND_PARALLEL"),
    openmp("OPENMP_EVENT_KIND_SYNC_REGION_WAIT"),
    openmp("OPENMP_EVENT_KIND_SYNC_REGION"),
    openmp("OPENMP_EVENT_KIND_TASK"),
    openmp("OPENMP_EVENT_KIND_MASTER"),
    openmp("OPENMP_EVENT_KIND_REDUCTION"),
    openmp("OPENMP_EVENT_KIND_TASK_CREATE"),
    openmp("OPENMP_EVENT_KIND_TASK_SCHEDULE"),
    openmp("OPENMP_EVENT_KIND_CANCEL"),
    openmp("OPENMP_EVENT_KIND_MUTEX_WAIT"),
    openmp("OPENMP_EVENT_KIND_CRITICAL_SECTION"),
    openmp("OPENMP_EVENT_KIND_MUTEX_RELEASED"),
    openmp("OPENMP_EVENT_KIND_LOCK_INIT"),
    openmp("OPENMP_EVENT_KIND_LOCK_DESTROY"),
    openmp("OPENMP_EVENT_KIND_WORKSHARE"),
    openmp("OPENMP_EVENT_KIND_DISPATCH"),
    openmp("OPENMP_EVENT_KIND_FLUSH"),
    CpuTable {
        table: "CUDA_GRAPH_EVENTS",
        activity: Activity::Graph,
        cat: cat::GRAPH,
        name_col: "nameId",
        fallback_name: "CUDA graph",
        args: &[
            a("graphId", "graph_id", Int),
            a("originalGraphId", "original_graph_id", Int),
            a("graphExecId", "graph_exec_id", Int),
            a("graphNodeId", "graph_node_id", Int),
            a("originalGraphNodeId", "original_graph_node_id", Int),
            a("eventClass", "event_class", Enum(Enum::EventClass)),
        ],
        rest_as_args: false,
        chain: None,
    },
    CpuTable {
        table: "CUDA_GRAPH_NODE_EVENTS",
        activity: Activity::Graph,
        cat: cat::GRAPH,
        name_col: "nameId",
        fallback_name: "CUDA graph node",
        args: &[
            a("graphNodeId", "graph_node_id", Int),
            a("originalGraphNodeId", "original_graph_node_id", Int),
            a("eventClass", "event_class", Enum(Enum::EventClass)),
        ],
        rest_as_args: false,
        chain: None,
    },
    CpuTable {
        table: "PROFILER_OVERHEAD",
        activity: Activity::Overhead,
        cat: "nsys_overhead",
        name_col: "nameId",
        fallback_name: "profiler overhead",
        args: &[
            a("returnValue", "return_value", Int),
            a("overheadType", "overhead_type", Enum(Enum::OverheadType)),
            a("correlationId", "correlation_id", Int),
        ],
        rest_as_args: false,
        chain: None,
    },
    CpuTable {
        table: "CUPTI_ACTIVITY_KIND_OVERHEAD",
        activity: Activity::Overhead,
        cat: "cupti_overhead",
        name_col: "nameId",
        fallback_name: "CUPTI overhead",
        args: &[
            a("overheadType", "overhead_type", Enum(Enum::OverheadType)),
            a("correlationId", "correlation_id", Int),
            a("eventClass", "event_class", Enum(Enum::EventClass)),
        ],
        rest_as_args: false,
        chain: None,
    },
];

const OPENACC_ARGS: &[ArgCol] = &[
    a("eventKind", "event_kind", Int),
    a("lineNo", "line", Int),
    a("srcFile", "source_file", Str),
    a("funcName", "function", Str),
    a("varName", "variable", Str),
    a("kernelName", "kernel", Str),
    a("cuDeviceId", "device", Int),
    a("cuContextId", "context", Int),
    a("cuStreamId", "stream", Int),
    a("bytes", "bytes", Int),
];

/// A table whose columns beyond `args` all become arguments (one seen in no fixture).
const fn passthrough(
    (table, activity, cat): (&'static str, Activity, &'static str),
    (name_col, fallback_name): (&'static str, &'static str),
    args: &'static [ArgCol],
) -> CpuTable {
    CpuTable {
        table,
        activity,
        cat,
        name_col,
        fallback_name,
        args,
        rest_as_args: true,
        chain: None,
    }
}

const fn openmp(table: &'static str) -> CpuTable {
    passthrough(
        (table, Activity::Openmp, cat::OPENMP),
        ("nameId", OPENMP_NAME),
        OPENMP_ARGS,
    )
}

const OPENMP_ARGS: &[ArgCol] = &[a("eventClass", "event_class", Enum(Enum::EventClass))];

// ---- GPU tables ----

/// Flow sources: GPU tables whose rows refer to the API call that launched them.
pub const SRC_KERNEL: u8 = 0;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GpuKind {
    Kernel,
    Memcpy,
    Memset,
    Sync,
    Graph,
}

#[derive(Debug)]
pub struct GpuTable {
    pub table: &'static str,
    pub activity: Activity,
    /// Index among flow sources.
    pub src: u8,
    pub kind: GpuKind,
}

pub static GPU_TABLES: &[GpuTable] = &[
    GpuTable {
        table: "CUPTI_ACTIVITY_KIND_KERNEL",
        activity: Activity::Kernel,
        src: SRC_KERNEL,
        kind: GpuKind::Kernel,
    },
    GpuTable {
        table: "CUPTI_ACTIVITY_KIND_MEMCPY",
        activity: Activity::Memcpy,
        src: 1,
        kind: GpuKind::Memcpy,
    },
    GpuTable {
        table: "CUPTI_ACTIVITY_KIND_MEMCPY2",
        activity: Activity::Memcpy,
        src: 2,
        kind: GpuKind::Memcpy,
    },
    GpuTable {
        table: "CUPTI_ACTIVITY_KIND_MEMSET",
        activity: Activity::Memset,
        src: 3,
        kind: GpuKind::Memset,
    },
    GpuTable {
        table: "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION",
        activity: Activity::Sync,
        src: 4,
        kind: GpuKind::Sync,
    },
    GpuTable {
        table: "CUPTI_ACTIVITY_KIND_GRAPH_TRACE",
        activity: Activity::Graph,
        src: 5,
        kind: GpuKind::Graph,
    },
];

/// The GPU table of flow source `src`, for diagnostics.
pub fn flow_source_table(src: u8) -> &'static str {
    GPU_TABLES
        .iter()
        .find(|t| t.src == src)
        .map_or("GPU activity", |t| t.table)
}

/// Columns read from every GPU table, in this order.
pub const COMMON: &[&str] = &[
    "start",
    "end",
    "deviceId",
    "contextId",
    "streamId",
    "globalPid",
    "correlationId",
    "greenContextId",
];

/// The columns of each kind after [`COMMON`].
pub fn specific_columns(kind: GpuKind) -> &'static [&'static str] {
    match kind {
        GpuKind::Kernel => &[
            "shortName",
            "demangledName",
            "mangledName",
            "gridX",
            "gridY",
            "gridZ",
            "blockX",
            "blockY",
            "blockZ",
            "clusterX",
            "clusterY",
            "clusterZ",
            "registersPerThread",
            "staticSharedMemory",
            "dynamicSharedMemory",
            "sharedMemoryExecuted",
            "localMemoryPerThread",
            "localMemoryTotal",
            "launchType",
            "cacheConfig",
            "gridId",
            "graphNodeId",
            "graphId",
        ],
        GpuKind::Memcpy => &[
            "bytes",
            "copyKind",
            "srcKind",
            "dstKind",
            "srcDeviceId",
            "srcContextId",
            "dstDeviceId",
            "dstContextId",
            "migrationCause",
            "graphNodeId",
            "virtualAddress",
            "copyCount",
        ],
        GpuKind::Memset => &["bytes", "value", "memKind", "graphNodeId"],
        GpuKind::Sync => &["syncType", "eventId", "eventSyncId"],
        GpuKind::Graph => &["graphId", "graphExecId"],
    }
}

// ---- point events ----

/// Whose track an instant goes on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Owner {
    /// The host process of `globalPid`.
    Process,
    /// The GPU `deviceId` (on the machine of `globalPid`).
    Device,
    /// The whole trace.
    Global,
}

#[derive(Debug)]
pub struct InstantTable {
    pub table: &'static str,
    pub activity: Activity,
    pub ts: &'static str,
    pub owner: Owner,
    pub name: &'static str,
    /// A text column whose first line names the instant instead of `name`.
    pub name_from: Option<&'static str>,
    pub cat: &'static str,
    pub args: &'static [ArgCol],
}

pub static INSTANT_TABLES: &[InstantTable] = &[
    InstantTable {
        table: "CUDA_UM_CPU_PAGE_FAULT_EVENTS",
        activity: Activity::Memory,
        ts: "start",
        owner: Owner::Process,
        name: "CPU page fault",
        name_from: None,
        cat: "um_page_fault",
        args: &[
            a("address", "address", How::Int),
            a("originalFaultPc", "fault_pc", How::Int),
            a("CpuInstruction", "function", How::Str),
            a("module", "module", How::Str),
            a("unresolvedFaultPc", "unresolved_fault_pc", How::Int),
        ],
    },
    InstantTable {
        table: "CUDA_UM_GPU_PAGE_FAULT_EVENTS",
        activity: Activity::Memory,
        ts: "start",
        owner: Owner::Device,
        name: "GPU page fault",
        name_from: None,
        cat: "um_page_fault",
        args: &[
            a("end", "end_ns", How::Int),
            a("address", "address", How::Int),
            a("numberOfPageFaults", "faults", How::Int),
            a(
                "faultAccessType",
                "access_type",
                How::Enum(Enum::UnifMemAccess),
            ),
        ],
    },
    InstantTable {
        table: "CUDA_GPU_MEMORY_POOL_EVENTS",
        activity: Activity::Memory,
        ts: "start",
        owner: Owner::Device,
        name: "CUDA memory pool",
        name_from: None,
        cat: "cuda_memory",
        args: &[
            a("address", "address", How::Int),
            a("operationType", "operation", How::Enum(Enum::MemPoolOper)),
            a("poolType", "pool_type", How::Enum(Enum::MemPoolType)),
            a("correlationId", "correlation_id", How::Int),
            a("minBytesToKeep", "min_bytes_to_keep", How::Int),
            a(
                "localMemoryPoolReleaseThreshold",
                "release_threshold",
                How::Int,
            ),
            a("localMemoryPoolSize", "pool_size", How::Int),
            a(
                "localMemoryPoolUtilizedSize",
                "pool_utilized_size",
                How::Int,
            ),
        ],
    },
    InstantTable {
        table: "DIAGNOSTIC_EVENT",
        activity: Activity::Diagnostics,
        ts: "timestamp",
        owner: Owner::Global,
        name: "nsys diagnostic",
        name_from: Some("text"),
        cat: "nsys_diagnostic",
        args: &[
            a("severity", "severity", How::Enum(Enum::DiagSeverity)),
            a("source", "source", How::Int),
            a("timestampType", "timestamp_type", How::Int),
            a("text", "text", How::Raw),
        ],
    },
];
