//! CPU-side ranges on thread tracks: CUDA runtime and driver API calls (with their backtraces),
//! and the tables of the same shape (start, end, globalTid, a name id): OS runtime, cuBLAS,
//! cuDNN, MPI, UCX, OpenACC, OpenMP, CUDA graph creation, profiler overhead (the catalogue's
//! CPU tables).

use rustc_hash::FxHashMap;
use tracex_ir::{Args, Defs, Diagnostics, Location, Result, StrId, Value};

use crate::catalogue::{How, CPU_TABLES};
use crate::db::{rowid, Cols, Row};
use crate::decoded::{thread_range, Decoded, Hook, Parts, Skip, Slot};
use crate::diag::{record_rows, row_at};
use crate::enums::Enum;
use crate::importer::Importer;
use crate::options::Activity;
use crate::plan::{order_by, range_order, CpuPlan, Kind, Query, Setup, StreamDef};
use crate::scan::{count_where, Filter, ScanSpec};
use crate::stacks::Chain;

/// Columns every CPU table is read by, not shown as arguments.
const CORE: &[&str] = &["start", "end", "globalTid", "callchainId"];

/// Streams of the CPU tables present in the file.
pub fn plans(setup: &mut Setup, imp: &mut Importer) -> Result<()> {
    for spec in CPU_TABLES {
        let what = (spec.activity, spec.table);
        let needed = ["start", "globalTid"];
        let Some(t) = setup.wanted(imp.activities(), what, &needed)? else {
            continue;
        };
        let has_chain = spec.chain.is_some_and(|c| imp.has_chain(c)) && t.has("callchainId");
        // column names; one the table lacks (or an unused callchain) is selected as NULL
        let mut names: Vec<&str> = vec!["start", "end", "globalTid", spec.name_col];
        names.push(if has_chain { "callchainId" } else { "" });
        let mut args = Vec::new();
        for ac in spec.args.iter().filter(|ac| t.has(ac.col)) {
            names.push(ac.col);
            args.push((imp.key(setup.defs, ac.key), ac.how));
        }
        if spec.rest_as_args {
            for c in &t.columns {
                let used = CORE.iter().any(|k| k.eq_ignore_ascii_case(c))
                    || c.eq_ignore_ascii_case(spec.name_col)
                    || spec.args.iter().any(|ac| ac.col.eq_ignore_ascii_case(c));
                if !used {
                    names.push(c);
                    args.push((setup.defs.intern(c), How::Raw));
                }
            }
        }
        let cols = t.select_list(&names);
        let query = Query::ordered(&t, "start", Some("end"), |sorted| {
            format!(
                "SELECT rowid, {cols} FROM {}{}",
                t.sql_name(),
                order_by(sorted, &range_order(&t, ""))
            )
        })
        .with_spec(ScanSpec::new(&t, &names));
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
    let Some(t) = setup.wanted(imp.activities(), what, &needed)? else {
        return Ok(false);
    };
    let has_class = t.has("eventClass");
    let backtraces = if has_class {
        count_where(setup.conn, &t, ("eventClass", Filter::In(vec![67])))?
    } else {
        (0, 0)
    };
    let backtrace_rows = backtraces.0;
    let col = |c: &str| match t.has(c) {
        true => format!("r.{}", t.col(c)),
        false => "NULL".to_string(),
    };
    let chain = if !imp.has_chain(Chain::Cuda) || !t.has("callchainId") {
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
    let mut query = Query::ordered(&t, "start", Some("end"), |sorted| {
        format!("{select}{}", order_by(sorted, &range_order(&t, "r.")))
    });
    if join.is_empty() {
        let chain = if chain == "NULL" { "" } else { "callchainId" };
        let names = [
            "start",
            "end",
            "globalTid",
            "nameId",
            "eventClass",
            "correlationId",
            "returnValue",
            chain,
        ];
        let mut spec = ScanSpec::new(&t, &names);
        if has_class {
            spec = spec.filtered("eventClass", Filter::IsNot(67));
        }
        query = query.with_spec(spec);
    }
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

/// CUDA API display names (without the ABI suffix) and ABI versions, by string id.
#[derive(Default)]
pub struct ApiNames(FxHashMap<i64, (StrId, Option<i64>)>);

impl ApiNames {
    /// The display name of API name `id` and its ABI version, cached per id.
    fn get(
        &mut self,
        imp: &mut Importer,
        (defs, diag): (&mut Defs, &mut Diagnostics),
        id: i64,
        at: impl FnOnce() -> Location,
    ) -> (StrId, Option<i64>) {
        if let Some(&v) = self.0.get(&id) {
            return v;
        }
        let v = match imp.text(id) {
            Some(full) => {
                let (base, version) = split_api_version(full);
                let base = base.to_string();
                (defs.intern(&base), version)
            }
            None => (imp.name(defs, diag, id, at), None),
        };
        self.0.insert(id, v);
        v
    }
}

/// A CUDA runtime or driver API call.
pub fn decode_cuda_api(
    imp: &mut Importer,
    names: &mut ApiNames,
    table: &str,
    row: &Row,
    (defs, diag): (&mut Defs, &mut Diagnostics),
    slot: &mut Slot,
) -> Result<(), Skip> {
    let rid = rowid(row);
    let at = row_at(table, rid);
    let mut c = Cols::new(row);
    let (start, end, gtid) = thread_range(&mut c)?;
    let name_id = c.opt_int("nameId")?;
    let class = c.opt_int("eventClass")?;
    let corr = c.opt_int("correlationId")?;
    let ret = c.opt_int("returnValue")?;
    let chain = c.opt_int("callchainId")?;
    let track = imp.thread(defs, gtid);
    let (name, version) = match name_id {
        Some(id) => names.get(imp, (defs, diag), id, at),
        None => (defs.intern("CUDA API call"), None),
    };
    let mut args = Args::with_capacity(4);
    if let Some(corr) = corr {
        tracex_ir::push_arg(&mut args, imp.keys().correlation_id, || Value::Int(corr));
    }
    if let Some(r) = ret {
        imp.arg(defs, &mut args, "return_value", || Value::Int(r));
    }
    if let Some(v) = version {
        imp.arg(defs, &mut args, "api_version", || Value::Int(v));
    }
    let cat = match class {
        None | Some(0) => imp.keys().cat_runtime,
        Some(1) => imp.keys().cat_driver,
        Some(other) => {
            let l = imp.label(defs, Enum::EventClass, other);
            imp.arg(defs, &mut args, "event_class", || Value::Sym(l));
            imp.keys().cat_runtime
        }
    };
    let dur = imp.duration(defs, diag, (start, end), &mut args, at);
    let stack = match chain {
        Some(id) => imp.stack(defs, Chain::Cuda, id)?,
        None => None,
    };
    let parts = Parts {
        track,
        ts: start,
        name,
        cat,
        args,
    };
    *slot = Some((parts.slice(dur, stack, None), Hook::None));
    Ok(())
}

/// A range of one of the other CPU tables.
pub fn decode_cpu(
    imp: &mut Importer,
    plan: &CpuPlan,
    table: &str,
    row: &Row,
    (defs, diag): (&mut Defs, &mut Diagnostics),
) -> Decoded {
    let rid = rowid(row);
    let at = row_at(table, rid);
    let mut c = Cols::new(row);
    let (start, end, gtid) = thread_range(&mut c)?;
    let name = match c.opt_int(plan.spec.name_col)? {
        Some(id) => imp.name(defs, diag, id, at),
        None => defs.intern(plan.spec.fallback_name),
    };
    let chain = c.opt_int("callchainId")?;
    let mut args = Args::with_capacity(plan.args.len());
    for &(key, how) in &plan.args {
        imp.arg_column(defs, &mut c, how, &mut args, |_, _| key);
    }
    let track = imp.thread(defs, gtid);
    let dur = imp.duration(defs, diag, (start, end), &mut args, at);
    let stack = match (plan.has_chain, plan.spec.chain, chain) {
        (true, Some(which), Some(id)) => imp.stack(defs, which, id)?,
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
