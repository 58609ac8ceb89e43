//! Recognising CUPTI records, in either form.

use tracex_ir::{Confidence, Probe};

use crate::import::record;

/// Record kinds the injection library's text starts lines with.
const KINDS: &[&str] = &[
    "RUNTIME",
    "DRIVER",
    "CONCURRENT_KERNEL",
    "KERNEL",
    "MEMCPY",
    "MEMSET",
    "MEMORY2",
    "OVERHEAD",
];

/// Chrome JSON categories only CUPTI-derived JSON uses (Kineto writes `cuda_runtime`, `kernel`).
const JSON_CATEGORIES: &[&str] = &["CUDA_Runtime", "CUDA_Driver", "GPU_Kernel", "MemCopy"];

/// Text: a line that parses as a record of a known kind — certain; the injection library's log
/// lines alone — likely. JSON: a Chrome trace whose events have a CUPTI category and a
/// `correlationId` — certain. Such JSON is also Chrome JSON; the registry lets `cupti` win that
/// tie because it refines `chrome`.
pub fn sniff(probe: &Probe) -> Confidence {
    if probe.is_dir {
        return Confidence::No;
    }
    // A line of binary data does not make the rest unreadable: the importer reports it.
    let text = String::from_utf8_lossy(probe.head);
    let t = text.trim_start();
    if t.starts_with('{') || t.starts_with('[') {
        return if JSON_CATEGORIES.iter().any(|c| has_category(t, c))
            && t.contains("\"correlationId\"")
        {
            Confidence::Certain
        } else {
            Confidence::No
        };
    }
    let mut log = false;
    for line in text.lines().take(2000) {
        if record::looks_like_record(line) {
            let kind = line.split(' ').next().unwrap_or("");
            if KINDS.contains(&kind) && record::parse(line).is_ok() {
                return Confidence::Certain;
            }
        }
        log |= line.starts_with("Calling CUPTI API:")
            || line.starts_with("Enabling CUPTI_ACTIVITY_KIND_");
    }
    if log {
        Confidence::Maybe(60)
    } else {
        Confidence::No
    }
}

/// Whether `"cat"` has the value `category` somewhere in `json` (any spacing around `:`).
fn has_category(json: &str, category: &str) -> bool {
    let quoted = format!("\"{category}\"");
    let mut from = 0;
    while let Some(i) = json[from..].find(&quoted) {
        let at = from + i;
        let before = json[..at].trim_end();
        if let Some(b) = before.strip_suffix(':') {
            if b.trim_end().ends_with("\"cat\"") {
                return true;
            }
        }
        from = at + quoted.len();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe(s: &str) -> Confidence {
        sniff(&Probe::of_bytes(s.as_bytes()))
    }

    #[test]
    fn text_and_json() {
        assert_eq!(
            probe("Calling CUPTI API: x\nRUNTIME [ 1, 2 ] duration 1, \"cudaFree\", cbid 1, processId 1, threadId 2, correlationId 3\n"),
            Confidence::Certain
        );
        assert_eq!(
            probe("Enabling CUPTI_ACTIVITY_KIND_MEMCPY.\n"),
            Confidence::Maybe(60)
        );
        assert_eq!(
            probe("{\"traceEvents\": [ {\"name\": \"Kernel: k\", \"ph\": \"X\", \"cat\" : \"GPU_Kernel\", \"args\": {\"correlationId\": 4}}"),
            Confidence::Certain
        );
        // Kineto's lower-case categories are plain Chrome JSON
        assert_eq!(
            probe("{\"traceEvents\":[{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"args\":{\"correlation\":1}}"),
            Confidence::No
        );
        assert_eq!(
            probe("{\"name\": \"GPU_Kernel\", \"correlationId\": 1}"),
            Confidence::No
        );
        assert_eq!(probe("main;foo 3\n"), Confidence::No);
    }
}
