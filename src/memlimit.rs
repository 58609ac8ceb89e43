//! `--max-memory`: a watchdog that stops tracex with a clear error when its resident memory
//! passes a limit, before the system's OOM killer would (which leaves a half-written output and
//! no message). It removes this process's temporaries and exits 1: nothing is written.

use std::time::Duration;

/// How often resident memory is read: allocation between two reads overshoots the limit by at
/// most what tracex allocates in this time.
const PERIOD: Duration = Duration::from_millis(10);

/// Resident memory of this process in bytes (Linux: `VmRSS` of /proc/self/status).
pub fn resident_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let kb = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .trim()
        .strip_suffix("kB")?
        .trim()
        .parse::<u64>()
        .ok()?;
    Some(kb * 1024)
}

fn mib(bytes: u64) -> String {
    format!("{:.0} MiB", bytes as f64 / (1u64 << 20) as f64)
}

/// Starts the watchdog for `limit` bytes. Fails where resident memory cannot be read.
pub fn start(limit: u64) -> anyhow::Result<()> {
    if resident_bytes().is_none() {
        anyhow::bail!("--max-memory needs /proc/self/status (Linux) to read resident memory");
    }
    std::thread::Builder::new()
        .name("tracex-max-memory".into())
        .spawn(move || loop {
            if let Some(rss) = resident_bytes().filter(|&r| r > limit) {
                tracex_ir::io::remove_own_temporaries();
                eprintln!(
                    "tracex: error: memory limit exceeded: resident memory reached {} \
                     (--max-memory {}); stopped, nothing was written",
                    mib(rss),
                    mib(limit)
                );
                std::process::exit(1);
            }
            std::thread::sleep(PERIOD);
        })?;
    Ok(())
}
