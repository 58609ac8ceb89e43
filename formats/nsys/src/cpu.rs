//! CPU-side ranges on thread tracks: CUDA runtime and driver API calls (with their backtraces),
//! and the tables of the same shape (start, end, globalTid, a name id): OS runtime, cuBLAS,
//! cuDNN, MPI, UCX, OpenACC, OpenMP, CUDA graph creation, profiler overhead.

use crate::db::Row;
use tracex_ir::kind::cat;
use tracex_ir::{Args, Defs, Location, Result, StrId, Value};

use crate::db::{rowid, Cols};
use crate::enums::Enum;
use crate::importer::{record_rows, row_at, thread_range, Decoded, Hook, Importer, Parts};
use crate::options::Activity;
use crate::plan::{order_by, range_order, rows_where, Kind, Query, Setup, StreamDef};
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

/// The argument columns of one CPU table as present in the file, with their keys interned.
#[derive(Clone, Debug)]
pub struct CpuPlan {
    pub spec: &'static CpuTable,
    pub args: Vec<(StrId, How)>,
    pub has_chain: bool,
}

/// Columns every CPU table is read by, not shown as arguments.
const CORE: &[&str] = &["start", "end", "globalTid", "callchainId"];

/// Streams of the CPU tables present in the file.
pub fn plans(setup: &mut Setup, imp: &mut Importer) -> Result<()> {
    for spec in CPU_TABLES {
        let what = (spec.activity, spec.table);
        let needed = ["start", "globalTid"];
        let Some(t) = setup.wanted(imp.opts.activities, what, &needed)? else {
            continue;
        };
        let mut select = vec![
            t.col("start"),
            t.col("end"),
            t.col("globalTid"),
            t.col(spec.name_col),
        ];
        let has_chain = spec.chain.is_some_and(|c| imp.callchains.has(c)) && t.has("callchainId");
        select.push(if has_chain {
            t.col("callchainId")
        } else {
            "NULL".into()
        });
        let mut args = Vec::new();
        for ac in spec.args.iter().filter(|ac| t.has(ac.col)) {
            select.push(t.col(ac.col));
            args.push((imp.key(setup.defs, ac.key), ac.how));
        }
        if spec.rest_as_args {
            for c in &t.columns {
                let used = CORE.iter().any(|k| k.eq_ignore_ascii_case(c))
                    || c.eq_ignore_ascii_case(spec.name_col)
                    || spec.args.iter().any(|ac| ac.col.eq_ignore_ascii_case(c));
                if !used {
                    select.push(t.col(c));
                    args.push((setup.defs.intern(c), How::Raw));
                }
            }
        }
        let cols = select.join(", ");
        let query = Query::ordered(&t, "start", Some("end"), |sorted| {
            format!(
                "SELECT rowid, {cols} FROM {}{}",
                t.sql_name(),
                order_by(sorted, &range_order(&t, ""))
            )
        });
        setup.streams.push(StreamDef::new(
            &t,
            query,
            Kind::Cpu(Box::new(CpuPlan {
                spec,
                args,
                has_chain,
            })),
        ));
    }
    Ok(())
}

/// The CUDA API stream: runtime and driver calls from `CUPTI_ACTIVITY_KIND_RUNTIME`. Rows of
/// eventClass 67 only carry the backtrace of the call with the same thread and correlation id;
/// a self-join moves it onto that call.
pub fn cuda_api_plan(setup: &mut Setup, imp: &mut Importer) -> Result<bool> {
    let what = (Activity::CudaApi, "CUPTI_ACTIVITY_KIND_RUNTIME");
    let needed = ["start", "globalTid"];
    let Some(t) = setup.wanted(imp.opts.activities, what, &needed)? else {
        return Ok(false);
    };
    let has_class = t.has("eventClass");
    let backtraces = if has_class {
        rows_where(setup.conn, &t, &format!("{} = 67", t.col("eventClass")))?
    } else {
        (0, 0)
    };
    let backtrace_rows = backtraces.0;
    let col = |c: &str| match t.has(c) {
        true => format!("r.{}", t.col(c)),
        false => "NULL".to_string(),
    };
    let chain = if !imp.callchains.has(Chain::Cuda) || !t.has("callchainId") {
        "NULL".to_string()
    } else if backtrace_rows > 0 {
        format!(
            "coalesce({}, b.{})",
            col("callchainId"),
            t.col("callchainId")
        )
    } else {
        col("callchainId")
    };
    let join = if backtrace_rows > 0 && t.has("correlationId") {
        format!(
            " LEFT JOIN {n} b ON b.{c} = 67 AND b.{k} = r.{k} AND b.{g} = r.{g}",
            n = t.sql_name(),
            c = t.col("eventClass"),
            k = t.col("correlationId"),
            g = t.col("globalTid")
        )
    } else {
        String::new()
    };
    let filter = if has_class {
        format!(" WHERE r.{} IS NOT 67", t.col("eventClass"))
    } else {
        String::new()
    };
    if backtrace_rows > 0 {
        record_rows(
            setup.diag,
            &crate::diag::BACKTRACE_ROW,
            &t.name,
            backtraces,
            None,
        );
    }
    let select = format!(
        "SELECT r.rowid, {}, {}, {}, {}, {}, {}, {}, {chain} FROM {} r{join}{filter}",
        col("start"),
        col("end"),
        col("globalTid"),
        col("nameId"),
        col("eventClass"),
        col("correlationId"),
        col("returnValue"),
        t.sql_name(),
    );
    let query = Query::ordered(&t, "start", Some("end"), |sorted| {
        format!("{select}{}", order_by(sorted, &range_order(&t, "r.")))
    });
    let mut def = StreamDef::new(&t, query, Kind::CudaApi);
    def.unique_rowid = !join.is_empty();
    setup.streams.push(def);
    Ok(true)
}

/// `cudaLaunchKernel_v7000` → (`cudaLaunchKernel`, 7000): nsys keeps the ABI version suffix.
pub fn split_api_version(name: &str) -> (&str, Option<i64>) {
    if let Some(i) = name.rfind("_v") {
        let digits = &name[i + 2..];
        if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
            return (&name[..i], digits.parse().ok());
        }
    }
    (name, None)
}

impl Importer<'_> {
    pub fn decode_cuda_api(&mut self, table: &str, row: &Row, defs: &mut Defs) -> Decoded {
        let rid = rowid(row);
        let at = row_at(table, rid);
        let mut c = Cols::new(row);
        let (start, end, gtid) = thread_range(&mut c)?;
        let name_id = c.opt_int("nameId")?;
        let class = c.opt_int("eventClass")?;
        let corr = c.opt_int("correlationId")?;
        let ret = c.opt_int("returnValue")?;
        let chain = c.opt_int("callchainId")?;
        let track = self.ids.thread(defs, &self.strings, gtid);
        let (name, version) = match name_id {
            Some(id) => self.api_name(defs, id, at),
            None => (defs.intern("CUDA API call"), None),
        };
        let mut args = Args::with_capacity(4);
        if let Some(corr) = corr {
            args.push(tracex_ir::Arg {
                key: self.keys.correlation_id,
                value: Value::Int(corr),
            });
        }
        if let Some(r) = ret {
            self.arg(defs, &mut args, "return_value", Value::Int(r));
        }
        if let Some(v) = version {
            self.arg(defs, &mut args, "api_version", Value::Int(v));
        }
        let cat = match class {
            None | Some(0) => self.keys.cat_runtime,
            Some(1) => self.keys.cat_driver,
            Some(other) => {
                let l = self.enums.label_or_number(Enum::EventClass, other);
                self.arg(defs, &mut args, "event_class", Value::str(l));
                self.keys.cat_runtime
            }
        };
        let dur = self.duration(defs, start, end, &mut args, at);
        let stack = match chain {
            Some(id) => self
                .callchains
                .stack(Chain::Cuda, id, &mut self.strings, defs)?,
            None => None,
        };
        let parts = Parts {
            track,
            ts: start,
            name,
            cat,
            args,
        };
        Ok(Some((parts.slice(dur, stack, None), Hook::None)))
    }

    /// The display name of API name `id` and its ABI version, cached per id.
    fn api_name(
        &mut self,
        defs: &mut Defs,
        id: i64,
        at: impl FnOnce() -> Location,
    ) -> (StrId, Option<i64>) {
        if let Some(&v) = self.api_names.get(&id) {
            return v;
        }
        let v = match self.strings.get(id) {
            Some(full) => {
                let (base, version) = split_api_version(full);
                let base = base.to_string();
                (defs.intern(&base), version)
            }
            None => (self.name(defs, id, at), None),
        };
        self.api_names.insert(id, v);
        v
    }

    pub fn decode_cpu(
        &mut self,
        plan: &CpuPlan,
        table: &str,
        row: &Row,
        defs: &mut Defs,
    ) -> Decoded {
        let rid = rowid(row);
        let at = row_at(table, rid);
        let mut c = Cols::new(row);
        let (start, end, gtid) = thread_range(&mut c)?;
        let name = match c.opt_int(plan.spec.name_col)? {
            Some(id) => self.name(defs, id, at),
            None => defs.intern(plan.spec.fallback_name),
        };
        let chain = c.opt_int("callchainId")?;
        let mut args = Args::with_capacity(plan.args.len());
        for &(key, how) in &plan.args {
            if let Some(v) = self.arg_value(&mut c, how, defs) {
                args.push(tracex_ir::Arg { key, value: v });
            }
        }
        let track = self.ids.thread(defs, &self.strings, gtid);
        let dur = self.duration(defs, start, end, &mut args, at);
        let stack = match (plan.has_chain, plan.spec.chain, chain) {
            (true, Some(which), Some(id)) => {
                self.callchains.stack(which, id, &mut self.strings, defs)?
            }
            _ => None,
        };
        let cat = defs.intern(plan.spec.cat);
        let parts = Parts {
            track,
            ts: start,
            name,
            cat,
            args,
        };
        Ok(Some((parts.slice(dur, stack, None), Hook::None)))
    }

    /// Reads one argument column as `how` says; NULL gives no argument. Arguments never fail a
    /// row: a value of an unexpected type is shown as it is.
    pub fn arg_value(&mut self, c: &mut Cols, how: How, defs: &mut Defs) -> Option<Value> {
        let _ = defs;
        let v = c.raw()?;
        Some(match (how, v) {
            (How::Str, Value::Int(id)) => match self.strings.get(id) {
                Some(s) => Value::str(s),
                None => Value::Int(id),
            },
            (How::Enum(e), Value::Int(n)) => Value::str(self.enums.label_or_number(e, n)),
            (_, v) => v,
        })
    }
}
