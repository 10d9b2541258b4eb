//! Writing manifests into a directory, one object per file, and checking a directory against them.

use std::collections::BTreeMap;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use super::Manifest;

/// Why manifests could not be written or checked.
#[derive(Debug, thiserror::Error)]
pub enum ManifestsError {
    /// A file or directory could not be read, written or removed.
    #[error("cannot {doing} {}: {source}", path.display())]
    Io {
        /// What was being done, e.g. `write`.
        doing: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
    /// Two manifests want the same file.
    #[error("two manifests are both written to {0}; every manifest needs its own path")]
    DuplicatePath(String),
}

fn io_error(doing: &'static str, path: &Path) -> impl FnOnce(io::Error) -> ManifestsError + use<> {
    let path = path.to_owned();
    move |source| ManifestsError::Io {
        doing,
        path,
        source,
    }
}

/// What [`write_dir`] did to one file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileChange {
    /// The file did not exist.
    Created,
    /// The file existed with other content.
    Updated,
    /// The file already had this content and was not touched.
    Unchanged,
    /// The file is not a manifest of this provider any more and was removed.
    Removed,
}

/// One file [`write_dir`] handled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileReport {
    /// The file, below the directory given to [`write_dir`].
    pub path: PathBuf,
    /// What happened to it.
    pub change: FileChange,
}

impl fmt::Display for FileReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.change {
            FileChange::Created => "created",
            FileChange::Updated => "updated",
            FileChange::Unchanged => "unchanged",
            FileChange::Removed => "removed",
        };
        write!(f, "{what:>9} {}", self.path.display())
    }
}

/// How a directory differs from the manifests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DifferenceKind {
    /// A manifest has no file.
    Missing,
    /// A file's content differs from its manifest.
    Stale,
    /// A file belongs to no manifest.
    Extra,
}

/// One file that [`check_dir`] found out of date.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Difference {
    /// The file, below the directory given to [`check_dir`].
    pub path: PathBuf,
    /// How it differs.
    pub kind: DifferenceKind,
}

impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.kind {
            DifferenceKind::Missing => "missing",
            DifferenceKind::Stale => "stale",
            DifferenceKind::Extra => "extra",
        };
        write!(f, "{what}: {}", self.path.display())
    }
}

/// The wanted files: path below the directory → YAML.
fn wanted(manifests: &[Manifest]) -> Result<BTreeMap<PathBuf, String>, ManifestsError> {
    let mut files = BTreeMap::new();
    for manifest in manifests {
        let path: PathBuf = manifest.path.split('/').collect();
        if files.insert(path, manifest.to_yaml()).is_some() {
            return Err(ManifestsError::DuplicatePath(manifest.path.clone()));
        }
    }
    Ok(files)
}

/// Every file below `dir` (relative paths, sorted); none when `dir` does not exist.
fn existing(dir: &Path) -> Result<Vec<PathBuf>, ManifestsError> {
    // Two levels of directories at most; a recursive read_dir is simpler than a dependency.
    fn walk(root: &Path, rel: &Path, out: &mut Vec<PathBuf>) -> Result<(), ManifestsError> {
        let here = root.join(rel);
        let entries = match std::fs::read_dir(&here) {
            Ok(entries) => entries,
            Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(err) => return Err(io_error("read directory", &here)(err)),
        };
        for entry in entries {
            let entry = entry.map_err(io_error("read directory", &here))?;
            let rel = rel.join(entry.file_name());
            let file_type = entry
                .file_type()
                .map_err(io_error("inspect", &entry.path()))?;
            if file_type.is_dir() {
                walk(root, &rel, out)?;
            } else {
                out.push(rel);
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    walk(dir, Path::new(""), &mut out)?;
    out.sort();
    Ok(out)
}

fn read(path: &Path) -> Result<Option<String>, ManifestsError> {
    match std::fs::read(path) {
        // A file that is not UTF-8 is certainly not what we would write.
        Ok(bytes) => Ok(Some(String::from_utf8(bytes).unwrap_or_default())),
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(io_error("read", path)(err)),
    }
}

/// Writes each manifest to its file below `dir` and removes every other file there, so that `dir`
/// holds exactly the manifests. Files that already have the right content are not rewritten.
pub fn write_dir(manifests: &[Manifest], dir: &Path) -> Result<Vec<FileReport>, ManifestsError> {
    let wanted = wanted(manifests)?;
    let mut reports = Vec::new();
    for (rel, yaml) in &wanted {
        let path = dir.join(rel);
        let change = match read(&path)? {
            Some(current) if current == *yaml => FileChange::Unchanged,
            Some(_) => FileChange::Updated,
            None => FileChange::Created,
        };
        if change != FileChange::Unchanged {
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).map_err(io_error("create directory", parent))?;
            }
            std::fs::write(&path, yaml).map_err(io_error("write", &path))?;
        }
        reports.push(FileReport { path, change });
    }
    for rel in existing(dir)? {
        if !wanted.contains_key(&rel) {
            let path = dir.join(&rel);
            std::fs::remove_file(&path).map_err(io_error("remove", &path))?;
            remove_empty_parents(dir, &path);
            reports.push(FileReport {
                path,
                change: FileChange::Removed,
            });
        }
    }
    Ok(reports)
}

// Best effort: a directory that is not empty (or not ours to remove) simply stays.
fn remove_empty_parents(dir: &Path, file: &Path) {
    let mut current = file.parent();
    while let Some(parent) = current {
        if parent == dir || std::fs::remove_dir(parent).is_err() {
            break;
        }
        current = parent.parent();
    }
}

/// Compares `dir` with the manifests without changing anything: every manifest whose file is
/// missing or differs, and every file that belongs to no manifest. Empty when up to date.
pub fn check_dir(manifests: &[Manifest], dir: &Path) -> Result<Vec<Difference>, ManifestsError> {
    let wanted = wanted(manifests)?;
    let mut differences = Vec::new();
    for (rel, yaml) in &wanted {
        let path = dir.join(rel);
        match read(&path)? {
            Some(current) if current == *yaml => {}
            Some(_) => differences.push(Difference {
                path,
                kind: DifferenceKind::Stale,
            }),
            None => differences.push(Difference {
                path,
                kind: DifferenceKind::Missing,
            }),
        }
    }
    for rel in existing(dir)? {
        if !wanted.contains_key(&rel) {
            differences.push(Difference {
                path: dir.join(rel),
                kind: DifferenceKind::Extra,
            });
        }
    }
    Ok(differences)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifests::rbac::Place;

    fn manifest(path: &str, name: &str) -> Manifest {
        Manifest::new(
            Place::Platform,
            path,
            &serde_json::json!({"kind": "ConfigMap", "metadata": {"name": name}}),
        )
    }

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("sp-manifests-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn write_then_check_is_clean_and_second_write_changes_nothing() {
        let dir = scratch("clean");
        let manifests = [manifest("a/one.yaml", "one"), manifest("two.yaml", "two")];
        let first = write_dir(&manifests, &dir).unwrap();
        assert!(
            first.iter().all(|r| r.change == FileChange::Created),
            "{first:?}"
        );
        assert_eq!(check_dir(&manifests, &dir).unwrap(), []);
        let second = write_dir(&manifests, &dir).unwrap();
        assert!(
            second.iter().all(|r| r.change == FileChange::Unchanged),
            "{second:?}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn check_names_missing_stale_and_extra_files_and_write_repairs_them() {
        let dir = scratch("drift");
        write_dir(
            &[
                manifest("a/one.yaml", "one"),
                manifest("old/gone.yaml", "gone"),
            ],
            &dir,
        )
        .unwrap();
        let now = [
            manifest("a/one.yaml", "changed"),
            manifest("new.yaml", "new"),
        ];
        let diff = check_dir(&now, &dir).unwrap();
        assert_eq!(
            diff,
            [
                Difference {
                    path: dir.join("a/one.yaml"),
                    kind: DifferenceKind::Stale
                },
                Difference {
                    path: dir.join("new.yaml"),
                    kind: DifferenceKind::Missing
                },
                Difference {
                    path: dir.join("old/gone.yaml"),
                    kind: DifferenceKind::Extra
                },
            ]
        );
        let reports = write_dir(&now, &dir).unwrap();
        let changes: Vec<_> = reports.iter().map(|r| r.change).collect();
        assert_eq!(
            changes,
            [
                FileChange::Updated,
                FileChange::Created,
                FileChange::Removed
            ]
        );
        assert!(!dir.join("old").exists(), "emptied directories are removed");
        assert_eq!(check_dir(&now, &dir).unwrap(), []);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn two_manifests_for_one_path_are_refused() {
        let err = check_dir(
            &[manifest("x.yaml", "a"), manifest("x.yaml", "b")],
            Path::new("/nonexistent"),
        )
        .unwrap_err();
        assert!(matches!(err, ManifestsError::DuplicatePath(_)), "{err}");
    }
}
