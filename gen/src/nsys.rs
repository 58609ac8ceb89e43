//! An nsys-export-shaped SQLite database (the tables and columns of an `nsys export --type
//! sqlite` file of nsys 2024.x): threads of two processes push NVTX ranges, each enclosing
//! `cudaLaunchKernel` calls whose kernels run on per-thread streams of one GPU per process.
//! Rows are written in start order, as real exports store them; `--unsorted` writes them thread
//! after thread instead (close to, not in, start order), `--shuffle` in a random order; both
//! make tracex sort them. `--overlap N` makes N kernels start before the previous kernel of
//! their stream ends (partial overlaps, which the importer must keep on separate lanes).

use rusqlite::{params, Connection};

#[derive(clap::Args)]
pub struct Args {
    /// Number of kernels (and of cudaLaunchKernel runtime calls)
    #[arg(long, default_value_t = 1_000_000)]
    pub kernels: u64,
    /// Number of NVTX push/pop ranges (they enclose the launches evenly)
    #[arg(long, default_value_t = 100_000)]
    pub nvtx: u64,
    /// Write rows thread by thread instead of in start order
    #[arg(long, conflicts_with = "shuffle")]
    pub unsorted: bool,
    /// Write rows in a random (deterministic) order
    #[arg(long)]
    pub shuffle: bool,
    /// Number of kernels that start before the previous kernel of their stream has ended
    #[arg(long, default_value_t = 0)]
    pub overlap: u64,
    /// Multiply kernel durations by this (a series of runs with a varying batch size)
    #[arg(long, default_value_t = 1.0)]
    pub kernel_scale: f64,
    /// Output path (replaced if it exists)
    #[arg(long, short)]
    pub out: String,
}

/// Rows of one table before they are written: (start, end, values).
struct Rows(Vec<(i64, i64, Vec<rusqlite::types::Value>)>);

impl Rows {
    fn push(&mut self, start: i64, end: i64, values: Vec<rusqlite::types::Value>) {
        self.0.push((start, end, values));
    }

    /// Writes the rows with `sql` in `order`.
    fn write(
        mut self,
        tx: &rusqlite::Transaction,
        sql: &str,
        order: Order,
    ) -> rusqlite::Result<()> {
        match order {
            Order::Time => self.0.sort_by_key(|(s, e, _)| (*s, std::cmp::Reverse(*e))),
            Order::Threads => {}
            Order::Shuffled(seed) => {
                // Fisher-Yates with the file's own generator: the same file for the same arguments
                let mut rng = Lcg(seed);
                for i in (1..self.0.len()).rev() {
                    let j = rng.next(i as u64 + 1) as usize;
                    self.0.swap(i, j);
                }
            }
        }
        let mut stmt = tx.prepare(sql)?;
        for (_, _, v) in self.0 {
            stmt.execute(rusqlite::params_from_iter(v))?;
        }
        Ok(())
    }
}

const DDL: &str = "
CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE META_DATA_EXPORT (name TEXT NOT NULL, value TEXT);
CREATE TABLE TARGET_INFO_SESSION_START_TIME (utcEpochNs INTEGER, utcTime TEXT, localTime TEXT);
CREATE TABLE TARGET_INFO_GPU (vmId INTEGER NOT NULL, id INTEGER NOT NULL, name TEXT, busLocation TEXT,
  isDiscrete INTEGER, totalMemory INTEGER, smCount INTEGER, cuDevice INTEGER, computeMajor INTEGER,
  computeMinor INTEGER);
CREATE TABLE PROCESSES (globalPid INTEGER, pid INTEGER, name TEXT);
CREATE TABLE ThreadNames (nameId INTEGER NOT NULL, priority INTEGER, globalTid INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL,
  eventClass INTEGER NOT NULL, globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL,
  returnValue INTEGER NOT NULL, callchainId INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL,
  deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, greenContextId INTEGER,
  streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
  demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL, mangledName INTEGER,
  launchType INTEGER, cacheConfig INTEGER, registersPerThread INTEGER NOT NULL,
  gridX INTEGER NOT NULL, gridY INTEGER NOT NULL, gridZ INTEGER NOT NULL,
  blockX INTEGER NOT NULL, blockY INTEGER NOT NULL, blockZ INTEGER NOT NULL,
  staticSharedMemory INTEGER NOT NULL, dynamicSharedMemory INTEGER NOT NULL,
  localMemoryPerThread INTEGER NOT NULL, localMemoryTotal INTEGER NOT NULL,
  gridId INTEGER NOT NULL, sharedMemoryExecuted INTEGER, graphNodeId INTEGER,
  sharedMemoryLimitConfig INTEGER);
CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL,
  rangeId INTEGER, category INTEGER, color INTEGER, text TEXT, globalTid INTEGER,
  endGlobalTid INTEGER, textId INTEGER, domainId INTEGER, uint64Value INTEGER,
  int64Value INTEGER, doubleValue REAL, uint32Value INTEGER, int32Value INTEGER,
  floatValue REAL, jsonTextId INTEGER, jsonText TEXT);
";

/// The order rows are written in.
#[derive(Clone, Copy)]
enum Order {
    /// Start order, longer first at equal starts (as nsys writes them).
    Time,
    /// Thread after thread, each in time order (as generated).
    Threads,
    /// Randomly, from this seed.
    Shuffled(u64),
}

/// A small deterministic generator (64-bit LCG), so the same arguments give the same file.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, below: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % below
    }
}

const MACHINE: i64 = 1 << 48;
const PIDS: [i64; 2] = [41_000, 42_000];
const THREADS_PER_PROCESS: i64 = 2;
/// Launches a stream can hold before a launch blocks (CUDA's launch queue is about this deep),
/// so the GPU never lags the CPU by more than this many kernels.
const QUEUE_DEPTH: usize = 1024;

fn global_pid(pid: i64) -> i64 {
    MACHINE | (pid << 24)
}

pub fn run(a: &Args) -> anyhow::Result<()> {
    let _ = std::fs::remove_file(&a.out);
    let mut db = Connection::open(&a.out)?;
    db.execute_batch("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;")?;
    db.execute_batch(DDL)?;
    let tx = db.transaction()?;
    let strings = [
        (1, "cudaLaunchKernel_v7000"),
        (2, "ampere_sgemm_128x64_tn"),
        (3, "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4>(Params)"),
        (4, "cutlass::Kernel"),
        (5, "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>(int, float*)"),
        (6, "vectorized_elementwise_kernel"),
        (7, "forward"),
        (8, "python3"),
        (9, "pt_autograd_0"),
    ];
    for (id, s) in strings {
        tx.execute("INSERT INTO StringIds VALUES (?1, ?2)", params![id, s])?;
    }
    for (k, v) in [
        ("EXPORT_PRODUCT_VERSION", "2024.5.1.113"),
        ("EXPORT_SCHEMA_VERSION", "3.13.2"),
        ("EXPORT_PARAM_LAZY", "true"),
        ("DERIVED_BY", "tracex-gen nsys"),
    ] {
        tx.execute(
            "INSERT INTO META_DATA_EXPORT VALUES (?1, ?2)",
            params![k, v],
        )?;
    }
    tx.execute(
        "INSERT INTO TARGET_INFO_SESSION_START_TIME VALUES (1712195495519689047, '2024-04-04T01:51:35Z', '2024-04-04T03:51:35+02:00')",
        [],
    )?;
    for dev in 0..2i64 {
        tx.execute(
            "INSERT INTO TARGET_INFO_GPU VALUES (?1, ?2, 'NVIDIA H100 80GB HBM3', ?3, 1, 85520809984, 132, ?2, 9, 0)",
            params![MACHINE, dev, format!("0000:{:02x}:00.0", 0x18 + dev)],
        )?;
    }
    for (i, pid) in PIDS.iter().enumerate() {
        tx.execute(
            "INSERT INTO PROCESSES VALUES (?1, ?2, ?3)",
            params![global_pid(*pid), pid, format!("python3 rank{i}")],
        )?;
        for t in 0..THREADS_PER_PROCESS {
            let name = if t == 0 { 8 } else { 9 };
            tx.execute(
                "INSERT INTO ThreadNames VALUES (?1, 0, ?2)",
                params![name, global_pid(*pid) | (pid + t)],
            )?;
        }
        tx.execute(
            "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, domainId) VALUES (-5000, NULL, 75, 'gen', ?1, 1)",
            params![global_pid(*pid) | pid],
        )?;
    }

    let threads: Vec<(usize, i64)> = PIDS
        .iter()
        .enumerate()
        .flat_map(|(p, pid)| (0..THREADS_PER_PROCESS).map(move |t| (p, pid + t)))
        .collect();
    let per_range = a.kernels.div_ceil(a.nvtx.max(1)).max(1);
    let mut rng = Lcg(0x5eed);
    let mut clock = vec![1_000_000i64; threads.len()];
    let mut stream_free = vec![0i64; threads.len()];
    let mut queued: Vec<std::collections::VecDeque<i64>> = vec![Default::default(); threads.len()];
    let mut corr = vec![1i64; PIDS.len()];
    let mut kernels = 0u64;
    let mut ranges = 0u64;
    // every `overlap_every`-th kernel overlaps the previous one of its stream
    let overlap_every = match a.overlap {
        0 => u64::MAX,
        n => (a.kernels / n).max(1),
    };
    let mut overlapped = 0u64;
    let mut last_kstart = vec![i64::MIN; threads.len()];
    let (mut api, mut ker, mut nvtx) = (Rows(Vec::new()), Rows(Vec::new()), Rows(Vec::new()));
    {
        use rusqlite::types::Value as V;
        while kernels < a.kernels {
            for (ti, &(p, tid)) in threads.iter().enumerate() {
                if kernels >= a.kernels {
                    break;
                }
                let gtid = global_pid(PIDS[p]) | tid;
                let range_start = clock[ti];
                let mut t = range_start + 800;
                let n = per_range.min(a.kernels - kernels);
                for _ in 0..n {
                    let mut dur = 3_000 + rng.next(4_000) as i64;
                    // a full queue makes the launch wait until the oldest queued kernel starts
                    if queued[ti].len() == QUEUE_DEPTH {
                        let oldest = queued[ti].pop_front().unwrap_or(0);
                        dur = dur.max(oldest - t + 500);
                    }
                    let c = corr[p];
                    corr[p] += 1;
                    api.push(
                        t,
                        t + dur,
                        vec![
                            V::Integer(t),
                            V::Integer(t + dur),
                            V::Integer(gtid),
                            V::Integer(c),
                        ],
                    );
                    let stream = 7 + 6 * (ti as i64 % 2);
                    let mut kstart = (t + dur + 2_000).max(stream_free[ti]);
                    let kdur = ((4_000 + rng.next(16_000)) as f64 * a.kernel_scale) as i64;
                    if overlapped < a.overlap && kernels % overlap_every == overlap_every - 1 {
                        // start inside the previous kernel and end after it: a partial overlap,
                        // still after the launch returned
                        let prev_dur = stream_free[ti] - last_kstart[ti];
                        let by = (kdur / 2).min(prev_dur / 2);
                        if by > 0 && stream_free[ti] - by > t + dur {
                            kstart = stream_free[ti] - by;
                            overlapped += 1;
                        }
                    }
                    last_kstart[ti] = kstart;
                    stream_free[ti] = stream_free[ti].max(kstart + kdur);
                    queued[ti].push_back(kstart);
                    let (dname, sname) = match rng.next(3) {
                        0 => (2, 2),
                        1 => (3, 4),
                        _ => (5, 6),
                    };
                    ker.push(
                        kstart,
                        kstart + kdur,
                        vec![
                            V::Integer(kstart),
                            V::Integer(kstart + kdur),
                            V::Integer(p as i64),
                            V::Integer(stream),
                            V::Integer(c),
                            V::Integer(global_pid(PIDS[p])),
                            V::Integer(dname),
                            V::Integer(sname),
                            V::Integer(128 + rng.next(1024) as i64),
                            V::Integer(kernels as i64),
                        ],
                    );
                    kernels += 1;
                    t += dur + 1_000 + rng.next(2_000) as i64;
                }
                let range_end = t + 500;
                if ranges < a.nvtx {
                    // every other range has a registered name (textId), the rest plain text
                    let (text, text_id, domain) = if ranges % 2 == 0 {
                        (V::Null, V::Integer(7), 0)
                    } else {
                        (V::Text(format!("step {}", ranges / 2)), V::Null, 1)
                    };
                    nvtx.push(
                        range_start,
                        range_end,
                        vec![
                            V::Integer(range_start),
                            V::Integer(range_end),
                            V::Integer(0xff76b900u32 as i64),
                            text,
                            V::Integer(gtid),
                            text_id,
                            V::Integer(domain),
                            V::Integer(ranges as i64),
                        ],
                    );
                    ranges += 1;
                }
                clock[ti] = range_end + 3_000;
            }
        }
    }
    let order = match (a.unsorted, a.shuffle) {
        (true, _) => Order::Threads,
        (_, true) => Order::Shuffled(0xdea1),
        _ => Order::Time,
    };
    api.write(
        &tx,
        "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?1, ?2, 0, ?3, ?4, 1, 0, NULL)",
        order,
    )?;
    ker.write(
        &tx,
        "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?1, ?2, ?3, 1, NULL, ?4, ?5, ?6, ?7, ?8, NULL, 1, 0, 32, ?9, 1, 1, 256, 1, 1, 0, 0, 0, 0, ?10, 0, NULL, 1)",
        order,
    )?;
    nvtx.write(
        &tx,
        "INSERT INTO NVTX_EVENTS (start, end, eventType, color, text, globalTid, textId, domainId, int64Value) VALUES (?1, ?2, 59, ?3, ?4, ?5, ?6, ?7, ?8)",
        order,
    )?;
    tx.commit()?;
    eprintln!(
        "tracex-gen: wrote {kernels} kernels ({overlapped} overlapping the previous one), {kernels} runtime calls, {ranges} NVTX ranges to {}",
        a.out
    );
    Ok(())
}
