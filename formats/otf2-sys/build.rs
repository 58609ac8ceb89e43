//! Finds the installed libotf2 and generates raw bindings to it with bindgen. Nothing is
//! downloaded: the library comes from `OTF2_DIR`, `otf2-config` or pkg-config, in that order.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

const INSTALL_HINT: &str = "install it with `apt-get install libotf2-trace-dev` (Debian/Ubuntu; \
brings libopen-trace-format2-dev and otf2-config) and `libclang-dev` for bindgen, or point OTF2_DIR \
at an OTF2 >= 3.0 installation prefix; to build tracex without OTF2 support use \
`cargo build --no-default-features`";

/// Where the headers and the library are.
struct Found {
    include: Vec<PathBuf>,
    lib: Vec<PathBuf>,
    how: &'static str,
}

fn run(cmd: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(cmd).args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// `-I<dir>` / `-L<dir>` values from compiler flags.
fn flag_dirs(flags: &str, prefix: &str) -> Vec<PathBuf> {
    flags
        .split_whitespace()
        .filter_map(|f| f.strip_prefix(prefix))
        .map(PathBuf::from)
        .collect()
}

fn from_otf2_dir() -> Option<Found> {
    let dir = PathBuf::from(env::var_os("OTF2_DIR")?);
    let lib = [
        "lib",
        "lib64",
        "lib/x86_64-linux-gnu",
        "lib/aarch64-linux-gnu",
    ]
    .iter()
    .map(|l| dir.join(l))
    .filter(|p| p.is_dir())
    .collect();
    Some(Found {
        include: vec![dir.join("include")],
        lib,
        how: "OTF2_DIR",
    })
}

fn from_otf2_config() -> Option<Found> {
    let cflags = run("otf2-config", &["--cflags"])?;
    let ldflags = run("otf2-config", &["--ldflags"]).unwrap_or_default();
    Some(Found {
        include: flag_dirs(&cflags, "-I"),
        lib: flag_dirs(&ldflags, "-L"),
        how: "otf2-config",
    })
}

fn from_pkg_config() -> Option<Found> {
    let cflags = run("pkg-config", &["--cflags", "otf2"])?;
    let libs = run("pkg-config", &["--libs-only-L", "otf2"]).unwrap_or_default();
    Some(Found {
        include: flag_dirs(&cflags, "-I"),
        lib: flag_dirs(&libs, "-L"),
        how: "pkg-config",
    })
}

/// The header, in the found include directories or the compiler's default ones.
fn header(found: &Found) -> Option<PathBuf> {
    found
        .include
        .iter()
        .map(PathBuf::as_path)
        .chain([Path::new("/usr/include"), Path::new("/usr/local/include")])
        .map(|d| d.join("otf2/otf2.h"))
        .find(|h| h.is_file())
}

/// The directory holding `libopen-trace-format2.a`: a found library directory, or the
/// system's (pkg-config names none for a library in a default directory).
fn static_archive(found: &Found) -> Option<PathBuf> {
    let system = [
        "/usr/lib/x86_64-linux-gnu",
        "/usr/lib/aarch64-linux-gnu",
        "/usr/lib64",
        "/usr/lib",
        "/usr/local/lib",
    ];
    found
        .lib
        .iter()
        .cloned()
        .chain(system.iter().map(PathBuf::from))
        .find(|d| d.join("libopen-trace-format2.a").is_file())
}

/// `OTF2_VERSION_MAJOR` from the headers found.
fn major_version(otf2_h: &Path) -> Option<u32> {
    let defs = otf2_h.with_file_name("OTF2_GeneralDefinitions.h");
    let text = std::fs::read_to_string(defs).ok()?;
    text.lines()
        .find_map(|l| l.trim().strip_prefix("#define OTF2_VERSION_MAJOR"))
        .and_then(|v| v.trim().parse().ok())
}

/// Comparison and hashing for the reference newtypes only (structs of callbacks hold function
/// pointers, which must not be compared).
#[derive(Debug)]
struct RefDerives;

impl bindgen::callbacks::ParseCallbacks for RefDerives {
    fn add_derives(&self, info: &bindgen::callbacks::DeriveInfo<'_>) -> Vec<String> {
        if info.name.starts_with("OTF2_") && info.name.ends_with("Ref") {
            ["PartialEq", "Eq", "Hash", "PartialOrd", "Ord"]
                .map(String::from)
                .to_vec()
        } else {
            Vec::new()
        }
    }
}

/// A directory holding only `otf2/` (a link to the found headers): passing the install's
/// include directory itself (`/usr/include` on Debian) would put the host's C library headers
/// before a cross compiler's own.
fn otf2_only_include(otf2_h: &Path, out: &Path) -> PathBuf {
    let headers = otf2_h.parent().expect("otf2/otf2.h has a directory");
    let dir = out.join("otf2-include");
    let link = dir.join("otf2");
    let _ = std::fs::remove_file(&link);
    std::fs::create_dir_all(&dir)
        .and_then(|()| link_dir(headers, &link))
        .unwrap_or_else(|e| {
            fail(&format!(
                "cannot link the headers into {}: {e}",
                dir.display()
            ))
        });
    dir
}

#[cfg(unix)]
fn link_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    std::os::unix::fs::symlink(from, to)
}

#[cfg(not(unix))]
fn link_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for e in std::fs::read_dir(from)? {
        let e = e?;
        std::fs::copy(e.path(), to.join(e.file_name()))?;
    }
    Ok(())
}

fn fail(msg: &str) -> ! {
    eprintln!("error: otf2-sys: {msg}; {INSTALL_HINT}");
    std::process::exit(1);
}

fn main() {
    println!("cargo:rerun-if-env-changed=OTF2_DIR");
    println!("cargo:rerun-if-changed=wrapper.h");
    println!("cargo:rerun-if-changed=shim.h");
    println!("cargo:rerun-if-changed=shim.c");
    println!("cargo:rerun-if-changed=build.rs");

    let found = from_otf2_dir()
        .or_else(from_otf2_config)
        .or_else(from_pkg_config)
        .unwrap_or_else(|| {
            fail("libotf2 was not found (tried $OTF2_DIR, otf2-config, pkg-config otf2)")
        });
    let Some(otf2_h) = header(&found) else {
        fail(&format!(
            "libotf2 was located through {} but its header otf2/otf2.h is missing",
            found.how
        ));
    };
    match major_version(&otf2_h) {
        Some(v) if v >= 3 => {}
        Some(v) => fail(&format!(
            "{} is OTF2 {v}.x; tracex needs the OTF2 3.x library (it still reads 2.x archives)",
            otf2_h.display()
        )),
        None => fail(&format!(
            "cannot read OTF2_VERSION_MAJOR next to {}",
            otf2_h.display()
        )),
    }

    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let include = otf2_only_include(&otf2_h, &out);

    // The error callback shim (shim.c), compiled for the target with its C compiler.
    cc::Build::new()
        .file("shim.c")
        .warnings(true)
        .include(&include)
        .compile("tracex_otf2_shim");

    for l in &found.lib {
        println!("cargo:rustc-link-search=native={}", l.display());
    }
    // libopen-trace-format2 is the real library; libotf2 is only a compatibility symlink.
    // Linked statically when its archive is there (Debian ships it), so the binary runs on
    // machines without libotf2; OTF2_STATIC=0 links the shared library instead.
    println!("cargo:rerun-if-env-changed=OTF2_STATIC");
    let kind = match static_archive(&found) {
        Some(dir) if env::var("OTF2_STATIC").as_deref() != Ok("0") => {
            println!("cargo:rustc-link-search=native={}", dir.display());
            "static"
        }
        _ => "dylib",
    };
    println!("cargo:rustc-link-lib={kind}=open-trace-format2");
    println!("cargo:rustc-env=OTF2_SYS_LINK_KIND={kind}");

    let mut builder = bindgen::Builder::default()
        .header("wrapper.h")
        .allowlist_function("OTF2_.*")
        .allowlist_type("OTF2_.*")
        .allowlist_var("OTF2_.*")
        .allowlist_function("tracex_otf2_.*")
        .allowlist_type("tracex_otf2_.*")
        // C enums as integer constants: OTF2 passes them as uint8_t typedefs, has duplicate
        // values, and a Rust enum would be undefined behaviour for a value it does not list.
        .default_enum_style(bindgen::EnumVariation::Consts)
        .prepend_enum_name(false)
        // The error code alone becomes a newtype so that it can be `must_use`.
        .newtype_enum("OTF2_ErrorCode")
        .must_use_type("OTF2_ErrorCode")
        // Distinct types for the reference kinds, so a region id cannot be passed as a string id.
        .new_type_alias("OTF2_.*Ref")
        .derive_default(true)
        .layout_tests(false)
        .parse_callbacks(Box::new(RefDerives))
        .parse_callbacks(Box::new(bindgen::CargoCallbacks::new()));
    builder = builder.clang_arg(format!("-I{}", include.display()));
    let bindings = builder
        .generate()
        .unwrap_or_else(|e| fail(&format!("bindgen could not process otf2/otf2.h: {e}")));
    bindings
        .write_to_file(out.join("otf2_bindings.rs"))
        .unwrap_or_else(|e| fail(&format!("cannot write the bindings: {e}")));
}
