//! Options of the nsys importer: which activities to read, an NVTX name filter, NVTX colours.

use regex::Regex;

/// A kind of data in an nsys export, selectable with `--activity`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Activity {
    Kernel,
    Memcpy,
    Memset,
    Sync,
    CudaApi,
    Graph,
    CudaEvent,
    Nvtx,
    NvtxKernel,
    Osrt,
    Samples,
    Sched,
    Metrics,
    Memory,
    Cublas,
    Cudnn,
    Mpi,
    Ucx,
    Openacc,
    Openmp,
    Overhead,
    Diagnostics,
}

impl Activity {
    /// Every activity, in the order `--help` lists them.
    pub const ALL: [Activity; 22] = [
        Activity::Kernel,
        Activity::Memcpy,
        Activity::Memset,
        Activity::Sync,
        Activity::CudaApi,
        Activity::Graph,
        Activity::CudaEvent,
        Activity::Nvtx,
        Activity::NvtxKernel,
        Activity::Osrt,
        Activity::Samples,
        Activity::Sched,
        Activity::Metrics,
        Activity::Memory,
        Activity::Cublas,
        Activity::Cudnn,
        Activity::Mpi,
        Activity::Ucx,
        Activity::Openacc,
        Activity::Openmp,
        Activity::Overhead,
        Activity::Diagnostics,
    ];

    /// Every activity's name, in the order of [`Activity::ALL`].
    pub const NAMES: [&'static str; 22] = {
        let mut names = [""; 22];
        let mut i = 0;
        while i < names.len() {
            names[i] = Activity::ALL[i].name();
            i += 1;
        }
        names
    };

    pub const fn name(self) -> &'static str {
        match self {
            Activity::Kernel => "kernel",
            Activity::Memcpy => "memcpy",
            Activity::Memset => "memset",
            Activity::Sync => "sync",
            Activity::CudaApi => "cuda-api",
            Activity::Graph => "graph",
            Activity::CudaEvent => "cuda-event",
            Activity::Nvtx => "nvtx",
            Activity::NvtxKernel => "nvtx-kernel",
            Activity::Osrt => "osrt",
            Activity::Samples => "samples",
            Activity::Sched => "sched",
            Activity::Metrics => "metrics",
            Activity::Memory => "memory",
            Activity::Cublas => "cublas",
            Activity::Cudnn => "cudnn",
            Activity::Mpi => "mpi",
            Activity::Ucx => "ucx",
            Activity::Openacc => "openacc",
            Activity::Openmp => "openmp",
            Activity::Overhead => "overhead",
            Activity::Diagnostics => "diagnostics",
        }
    }

    pub fn from_name(name: &str) -> Option<Activity> {
        Activity::ALL.into_iter().find(|a| a.name() == name)
    }

    fn bit(self) -> u32 {
        1 << (self as u32)
    }
}

/// A set of activities.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Activities(u32);

impl Activities {
    pub fn all() -> Activities {
        Activities(Activity::ALL.iter().fold(0, |m, a| m | a.bit()))
    }

    pub fn none() -> Activities {
        Activities(0)
    }

    pub fn with(mut self, a: Activity) -> Activities {
        self.0 |= a.bit();
        self
    }

    pub fn contains(self, a: Activity) -> bool {
        self.0 & a.bit() != 0
    }

    /// Parses a comma-separated list (`kernel,nvtx`); `all` stands for every activity and
    /// `-name` removes one (a list of removals alone starts from all: `-nvtx-kernel`).
    pub fn parse(list: &str) -> Result<Activities, String> {
        let parts: Vec<&str> = list
            .split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .collect();
        let mut set = if parts.iter().all(|p| p.starts_with('-')) && !parts.is_empty() {
            Activities::all()
        } else {
            Activities::none()
        };
        for part in parts {
            if part == "all" {
                set = Activities::all();
                continue;
            }
            let (remove, name) = match part.strip_prefix('-') {
                Some(n) => (true, n),
                None => (false, part),
            };
            match Activity::from_name(name) {
                Some(a) if remove => set.0 &= !a.bit(),
                Some(a) => set = set.with(a),
                None => {
                    let known: Vec<&str> = Activity::ALL.iter().map(|a| a.name()).collect();
                    return Err(format!(
                        "unknown activity {part:?} (known: all, {})",
                        known.join(", ")
                    ));
                }
            }
        }
        if set == Activities::none() {
            return Err("the activity list is empty".into());
        }
        Ok(set)
    }

    /// The tables to read for the `--activity` words every format understands (and nsys's
    /// own table words): `None` when the words name nothing. Words of the generic filter
    /// stand for groups of tables.
    pub fn from_words(words: &[String]) -> Result<Option<Activities>, String> {
        let mut list = Vec::new();
        for w in words {
            let (minus, word) = match w.strip_prefix('-') {
                Some(rest) => ("-", rest),
                None => ("", w.as_str()),
            };
            let group: &[&str] = match word {
                "counters" => &["metrics", "memory"],
                "library" => &["cublas", "cudnn", "openacc", "openmp", "ucx"],
                "instants" => &["sched", "cuda-event", "diagnostics"],
                "other" => &["overhead", "graph"],
                // flows come with the calls and the GPU work they link
                "flows" => &[],
                _ => &[],
            };
            let tables: Vec<&str> = match group {
                [] if word != "flows" => vec![word],
                g => g.to_vec(),
            };
            list.extend(tables.iter().map(|t| format!("{minus}{t}")));
        }
        if list.is_empty() {
            return Ok(None);
        }
        Activities::parse(&list.join(",")).map(Some)
    }
}

impl Default for Activities {
    fn default() -> Self {
        Activities::all()
    }
}

/// Chrome's reserved colour names (trace-viewer `color_scheme.html`), the only values a
/// `cname` may take.
pub const CHROME_COLORS: &[&str] = &[
    "thread_state_uninterruptible",
    "thread_state_iowait",
    "thread_state_running",
    "thread_state_runnable",
    "thread_state_sleeping",
    "thread_state_unknown",
    "background_memory_dump",
    "light_memory_dump",
    "detailed_memory_dump",
    "vsync_highlight_color",
    "generic_work",
    "good",
    "bad",
    "terrible",
    "black",
    "grey",
    "white",
    "yellow",
    "olive",
    "rail_response",
    "rail_animation",
    "rail_idle",
    "rail_load",
    "startup",
    "heap_dump_stack_frame",
    "heap_dump_object_type",
    "heap_dump_child_node_highlight",
    "cq_build_running",
    "cq_build_passed",
    "cq_build_failed",
    "cq_build_abandoned",
    "cq_build_attempt_running",
    "cq_build_attempt_passed",
    "cq_build_attempt_failed",
];

/// NVTX colours by name: the first regex that matches a range's name gives its colour.
#[derive(Clone, Debug, Default)]
pub struct ColorScheme {
    pub rules: Vec<(Regex, String)>,
}

impl ColorScheme {
    /// Parses `{"regex": "chrome colour name", ...}`; the rules keep the object's key order.
    pub fn parse(json: &str) -> Result<ColorScheme, String> {
        let pairs: OrderedPairs =
            serde_json::from_str(json).map_err(|e| format!("not a JSON object of strings: {e}"))?;
        let mut rules = Vec::new();
        for (pattern, color) in pairs.0 {
            let re = Regex::new(&pattern).map_err(|e| format!("bad regex {pattern:?}: {e}"))?;
            if !CHROME_COLORS.contains(&color.as_str()) {
                return Err(format!(
                    "{color:?} is not a Chrome colour name (one of: {})",
                    CHROME_COLORS.join(", ")
                ));
            }
            rules.push((re, color));
        }
        Ok(ColorScheme { rules })
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The colour of the first rule whose regex matches `name`.
    pub fn color_of(&self, name: &str) -> Option<&str> {
        self.rules
            .iter()
            .find(|(re, _)| re.is_match(name))
            .map(|(_, c)| c.as_str())
    }
}

/// A JSON object read as its (key, value) pairs in document order.
struct OrderedPairs(Vec<(String, String)>);

impl<'de> serde::Deserialize<'de> for OrderedPairs {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = OrderedPairs;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object mapping regexes to colour names")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut m: A,
            ) -> Result<Self::Value, A::Error> {
                let mut v = Vec::new();
                while let Some((k, c)) = m.next_entry::<String, String>()? {
                    v.push((k, c));
                }
                Ok(OrderedPairs(v))
            }
        }
        d.deserialize_map(V)
    }
}

/// Import options.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct ImportOptions {
    /// What to read (default: everything).
    pub activities: Activities,
    /// Keep only NVTX ranges and marks whose name starts with one of these (empty: all). Matches
    /// plain (`text`) and registered (`textId`) names.
    pub nvtx_prefixes: Vec<String>,
    /// Colours for NVTX ranges and marks by name.
    pub nvtx_colors: ColorScheme,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn activity_lists() {
        let a = Activities::parse("kernel, nvtx").unwrap();
        assert!(a.contains(Activity::Kernel) && a.contains(Activity::Nvtx));
        assert!(!a.contains(Activity::CudaApi));
        assert_eq!(Activities::parse("all").unwrap(), Activities::all());
        assert!(Activities::parse("kernels")
            .unwrap_err()
            .contains("unknown activity"));
        assert!(Activities::parse("").is_err());
        let b = Activities::parse("-nvtx-kernel").unwrap();
        assert!(b.contains(Activity::Kernel) && !b.contains(Activity::NvtxKernel));
        let c = Activities::parse("all,-samples,-sched").unwrap();
        assert!(
            c.contains(Activity::Nvtx)
                && !c.contains(Activity::Samples)
                && !c.contains(Activity::Sched)
        );
        assert!(Activities::parse("-kernel,-all").is_err());
    }

    #[test]
    fn generic_activity_words_name_tables() {
        let w = |v: &[&str]| {
            Activities::from_words(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>())
        };
        assert_eq!(w(&[]).unwrap(), None);
        assert_eq!(w(&["flows"]).unwrap(), None);
        let c = w(&["counters"]).unwrap().unwrap();
        assert!(c.contains(Activity::Metrics) && c.contains(Activity::Memory));
        assert!(!c.contains(Activity::Kernel));
        let no_instants = w(&["-instants"]).unwrap().unwrap();
        assert!(!no_instants.contains(Activity::Sched) && no_instants.contains(Activity::Kernel));
        assert!(w(&["kernels"]).is_err());
        assert_eq!(Activity::NAMES[4], "cuda-api");
    }

    #[test]
    fn color_scheme_keeps_order_and_checks_names() {
        let s = ColorScheme::parse(r#"{"comm": "thread_state_iowait", "c.*": "good"}"#).unwrap();
        assert_eq!(
            s.color_of("ncclAllReduce comm"),
            Some("thread_state_iowait")
        );
        assert_eq!(s.color_of("compute"), Some("good"));
        assert_eq!(s.color_of("xyz"), None);
        assert!(ColorScheme::parse(r#"{"a": "pink"}"#)
            .unwrap_err()
            .contains("not a Chrome colour"));
        assert!(ColorScheme::parse(r#"{"(": "good"}"#)
            .unwrap_err()
            .contains("bad regex"));
        assert!(ColorScheme::parse("[1]").is_err());
    }
}
