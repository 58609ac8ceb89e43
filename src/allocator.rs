//! The global allocator: mimalloc, returning freed memory to the system promptly.
//!
//! Importers allocate many small argument lists and strings per event, often freed on another
//! thread (the sorter's merge); mimalloc serves that pattern faster than glibc's allocator. But
//! mimalloc v3 keeps freed pages for 1 s before purging them (in its arenas too: v3's
//! `arena_purge_mult` is 1, where v2's was 10), and it copies a large vector to grow it where
//! glibc remaps: every doubling of a big buffer left the old copy resident, and peak RSS of the
//! GPU merge (1M launches) was 250-300 MB for 170 MB of live heap. Purging after 50 ms gives
//! 166 MB, at no measurable cost in time.

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `mi_option_purge_delay` in mimalloc v3's `mi_option_e` (libmimalloc-sys 0.1.49, which
/// does not name it).
const PURGE_DELAY: std::ffi::c_int = 15;
/// Its v3 default in ms: seen before setting, it confirms the index names that option (and
/// that the user set no other `MIMALLOC_PURGE_DELAY`, which is then left alone).
const V3_DEFAULT_MS: std::ffi::c_long = 1000;
const PURGE_AFTER_MS: std::ffi::c_long = 50;

extern "C" {
    fn mi_option_get(option: std::ffi::c_int) -> std::ffi::c_long;
    fn mi_option_set(option: std::ffi::c_int, value: std::ffi::c_long);
}

/// Shortens mimalloc's purge delay; call first thing in `main`.
pub fn init() {
    // SAFETY: both functions are mimalloc's, linked in by the `mimalloc` crate with these C
    // signatures (`long mi_option_get(mi_option_t)`, `void mi_option_set(mi_option_t, long)`,
    // `mi_option_t` a C enum, passed as int); they only read and write mimalloc's option table,
    // which is safe from any thread at any time.
    unsafe {
        if mi_option_get(PURGE_DELAY) == V3_DEFAULT_MS {
            mi_option_set(PURGE_DELAY, PURGE_AFTER_MS);
        }
    }
}
