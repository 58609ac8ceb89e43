//! Where an archive goes, and how it appears there only when complete.
//!
//! `OUT.otf2` gives the three paths Vampir opens: the anchor `OUT.otf2`, the global definitions
//! `OUT.def` and the event directory `OUT/`. Any other path gives a Score-P style directory
//! `OUT/` holding `traces.otf2`, `traces.def` and `traces/`. The archive is written into a
//! temporary directory beside the destination and moved into place at the end, replacing an
//! old archive whole; dropped before that, it leaves nothing.

use std::io;
use std::path::{Path, PathBuf};

use tracex_ir::io::{temp_dir_beside, temp_path_beside, unregister};

/// The archive name Score-P uses inside an archive directory.
pub const DIR_ARCHIVE_NAME: &str = "traces";

/// The paths an archive occupies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    /// The directory libotf2 writes into, and the archive name in it.
    pub dir: PathBuf,
    pub name: String,
    /// Whether the whole archive lives in its own directory (`dir` itself is the output).
    pub own_dir: bool,
}

impl Layout {
    pub fn for_path(out: &Path) -> Layout {
        let file = out.file_name().map(|n| n.to_string_lossy().into_owned());
        match file.as_deref().and_then(|f| strip_suffix_ci(f, ".otf2")) {
            Some(stem) if !stem.is_empty() => Layout {
                dir: match out.parent() {
                    Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
                    _ => PathBuf::from("."),
                },
                name: stem.to_string(),
                own_dir: false,
            },
            _ => Layout {
                dir: out.to_path_buf(),
                name: DIR_ARCHIVE_NAME.to_string(),
                own_dir: true,
            },
        }
    }

    /// The anchor file readers open.
    pub fn anchor(&self) -> PathBuf {
        self.dir.join(format!("{}.otf2", self.name))
    }

    /// Every path the output occupies (what must not exist unless replacing).
    pub fn paths(&self) -> Vec<PathBuf> {
        if self.own_dir {
            vec![self.dir.clone()]
        } else {
            vec![
                self.dir.join(format!("{}.otf2", self.name)),
                self.dir.join(format!("{}.def", self.name)),
                self.dir.join(&self.name),
            ]
        }
    }

    /// The anchor, definitions and event directory names inside an archive directory.
    fn parts(&self) -> [String; 3] {
        [
            format!("{}.otf2", self.name),
            format!("{}.def", self.name),
            self.name.clone(),
        ]
    }
}

fn strip_suffix_ci<'a>(s: &'a str, suffix: &str) -> Option<&'a str> {
    let n = s.len().checked_sub(suffix.len())?;
    (s.is_char_boundary(n) && s[n..].eq_ignore_ascii_case(suffix)).then(|| &s[..n])
}

/// A temporary directory beside the destination that the archive is written into.
pub struct Staging {
    pub layout: Layout,
    /// Where libotf2 writes (`<tmp>/<name>.otf2`, ...).
    pub tmp: PathBuf,
    done: bool,
}

impl Staging {
    pub fn create(layout: Layout) -> io::Result<Staging> {
        let beside = if layout.own_dir {
            layout.dir.clone()
        } else {
            layout.dir.join(&layout.name)
        };
        let tmp = temp_dir_beside(&beside)?;
        Ok(Staging {
            layout,
            tmp,
            done: false,
        })
    }

    /// Moves the finished archive to its destination, replacing what is there. Old files are
    /// first moved aside and deleted only once the new archive is in place.
    pub fn commit(mut self) -> io::Result<()> {
        let old = self.tmp.join(".replaced");
        if self.layout.own_dir {
            let dest = self.layout.dir.clone();
            let backup = if dest.symlink_metadata().is_ok() {
                check_replaceable_dir(&dest)?;
                let b = temp_path_beside(&dest);
                std::fs::rename(&dest, &b)?;
                Some(b)
            } else {
                None
            };
            // The staging directory holds exactly the archive: it becomes the output.
            if let Err(e) = std::fs::rename(&self.tmp, &dest) {
                if let Some(b) = &backup {
                    let _ = std::fs::rename(b, &dest);
                }
                return Err(e);
            }
            self.done = true;
            unregister(&self.tmp);
            if let Some(b) = backup {
                std::fs::remove_dir_all(b)?;
            }
            return Ok(());
        }
        std::fs::create_dir(&old)?;
        let parts = self.layout.parts();
        let mut moved_aside = Vec::new();
        for p in &parts {
            let dest = self.layout.dir.join(p);
            if dest.symlink_metadata().is_ok() {
                if dest.is_dir() {
                    check_replaceable_events(&dest)?;
                }
                std::fs::rename(&dest, old.join(p))?;
                moved_aside.push(p.clone());
            }
        }
        let mut placed = Vec::new();
        for p in &parts {
            if let Err(e) = std::fs::rename(self.tmp.join(p), self.layout.dir.join(p)) {
                // Put the old archive back as it was.
                for q in &placed {
                    let _ = std::fs::rename(self.layout.dir.join(q), self.tmp.join(q));
                }
                for q in &moved_aside {
                    let _ = std::fs::rename(old.join(q), self.layout.dir.join(q));
                }
                return Err(e);
            }
            placed.push(p.clone());
        }
        Ok(())
    }
}

/// An existing output directory is replaced only if it is an OTF2 archive directory.
fn check_replaceable_dir(dir: &Path) -> io::Result<()> {
    if dir.is_dir() && dir.join(format!("{DIR_ARCHIVE_NAME}.otf2")).is_file() {
        return Ok(());
    }
    Err(io::Error::other(format!(
        "{} exists and is not an OTF2 archive directory (no {DIR_ARCHIVE_NAME}.otf2 in it); \
         tracex will not replace it",
        dir.display()
    )))
}

/// An existing event directory is replaced only if it holds nothing but OTF2 files.
fn check_replaceable_events(dir: &Path) -> io::Result<()> {
    for e in std::fs::read_dir(dir)? {
        let e = e?;
        let name = e.file_name().to_string_lossy().into_owned();
        let ok = e.file_type()?.is_file()
            && [".evt", ".def", ".snap", ".thumb"]
                .iter()
                .any(|x| name.ends_with(x));
        if !ok {
            return Err(io::Error::other(format!(
                "{} holds {name}, which is not part of an OTF2 archive; tracex will not replace it",
                dir.display()
            )));
        }
    }
    Ok(())
}

impl Drop for Staging {
    fn drop(&mut self) {
        if !self.done {
            let _ = std::fs::remove_dir_all(&self.tmp);
            unregister(&self.tmp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    fn fake_archive(s: &Staging, marker: &str) {
        let l = &s.layout;
        std::fs::write(s.tmp.join(format!("{}.otf2", l.name)), marker).unwrap();
        std::fs::write(s.tmp.join(format!("{}.def", l.name)), marker).unwrap();
        std::fs::create_dir(s.tmp.join(&l.name)).unwrap();
        std::fs::write(s.tmp.join(&l.name).join("0.evt"), marker).unwrap();
    }

    #[test]
    fn layouts() {
        let l = Layout::for_path(Path::new("out/run.OTF2"));
        assert_eq!(
            (l.dir.as_path(), l.name.as_str(), l.own_dir),
            (Path::new("out"), "run", false)
        );
        assert_eq!(l.anchor(), Path::new("out/run.otf2"));
        let l = Layout::for_path(Path::new("run.otf2"));
        assert_eq!(l.dir, Path::new("."));
        let l = Layout::for_path(Path::new("out/scorep-run"));
        assert!(l.own_dir);
        assert_eq!(l.anchor(), Path::new("out/scorep-run/traces.otf2"));
    }

    #[test]
    fn anchor_form_replaces_whole_and_cleans_up() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("a.otf2");
        for marker in ["first", "second"] {
            let s = Staging::create(Layout::for_path(&out)).unwrap();
            fake_archive(&s, marker);
            s.commit().unwrap();
        }
        assert_eq!(names(dir.path()), vec!["a", "a.def", "a.otf2"]);
        assert_eq!(std::fs::read_to_string(out).unwrap(), "second");
        assert_eq!(names(&dir.path().join("a")), vec!["0.evt"]);
        // dropped without commit: nothing left
        {
            let s = Staging::create(Layout::for_path(&dir.path().join("b.otf2"))).unwrap();
            fake_archive(&s, "x");
        }
        assert_eq!(names(dir.path()), vec!["a", "a.def", "a.otf2"]);
    }

    #[test]
    fn directory_form_refuses_foreign_directories() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("run");
        for marker in ["first", "second"] {
            let s = Staging::create(Layout::for_path(&out)).unwrap();
            fake_archive(&s, marker);
            s.commit().unwrap();
        }
        assert_eq!(
            std::fs::read_to_string(out.join("traces.otf2")).unwrap(),
            "second"
        );
        assert_eq!(names(dir.path()), vec!["run"]);
        let mine = dir.path().join("photos");
        std::fs::create_dir(&mine).unwrap();
        std::fs::write(mine.join("cat.jpg"), "meow").unwrap();
        let s = Staging::create(Layout::for_path(&mine)).unwrap();
        fake_archive(&s, "x");
        assert!(s.commit().is_err());
        assert_eq!(names(&mine), vec!["cat.jpg"]);
        assert_eq!(names(dir.path()), vec!["photos", "run"]);
    }
}
