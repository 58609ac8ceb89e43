//! Options of every format, gathered from the command line and handed to the registry's import
//! and export functions.

#[derive(Clone, Debug, Default)]
pub struct Options {
    pub chrome_import: tracex_chrome::ImportOptions,
    pub chrome_export: tracex_chrome::ExportOptions,
    pub folded_import: tracex_folded::ImportOptions,
    pub folded_export: tracex_folded::ExportOptions,
    #[cfg(feature = "otf2")]
    pub otf2_import: tracex_otf2::ImportOptions,
    #[cfg(feature = "otf2")]
    pub otf2_export: tracex_otf2::ExportOptions,
    pub nsys: tracex_nsys::ImportOptions,
    pub perfetto_import: tracex_perfetto::ImportOptions,
    pub perfetto_export: tracex_perfetto::ExportOptions,
}
