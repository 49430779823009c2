//! Unique temp directories, and tree snapshots to prove a command wrote nothing.

use proto::Sha256;
use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// A unique directory under `std::env::temp_dir()` (mode 0700), removed with its contents on drop.
#[derive(Debug)]
pub struct TempDir {
    path: PathBuf,
}

impl TempDir {
    /// Creates a fresh, empty directory.
    pub fn new() -> TempDir {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        loop {
            let n = COUNTER.fetch_add(1, Ordering::Relaxed);
            let path = std::env::temp_dir()
                .join(format!("dot-test-{}-{n}-{nanos:08x}", std::process::id()));
            match fs::DirBuilder::new().mode(0o700).create(&path) {
                Ok(()) => return TempDir { path },
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => panic!("cannot create temp dir {}: {e}", path.display()),
            }
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `self.path().join(rel)`.
    pub fn join(&self, rel: impl AsRef<Path>) -> PathBuf {
        self.path.join(rel)
    }
}

impl Default for TempDir {
    fn default() -> Self {
        TempDir::new()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if fs::remove_dir_all(&self.path).is_err() {
            // A test may have left read-only directories behind; make them writable and retry.
            make_writable(&self.path);
            let _ = fs::remove_dir_all(&self.path);
        }
    }
}

fn make_writable(dir: &Path) {
    let Ok(meta) = fs::symlink_metadata(dir) else {
        return;
    };
    if meta.is_dir() {
        let _ = fs::set_permissions(dir, fs::Permissions::from_mode(0o700));
        if let Ok(rd) = fs::read_dir(dir) {
            for e in rd.flatten() {
                make_writable(&e.path());
            }
        }
    }
}

/// One node of a tree snapshot: mode (type and permission bits), length (0 for directories), and
/// the content: the sha256 hex of a regular file, the target of a symbolic link, `""` otherwise.
pub type NodeFacts = (u32, u64, String);

/// Every path under `dir` (relative; `""` is `dir` itself) with its mode, length and content, to
/// compare a tree before and after a command that must not write anything. Symbolic links are not
/// followed.
pub fn tree_snapshot(dir: &Path) -> BTreeMap<PathBuf, NodeFacts> {
    let mut out = BTreeMap::new();
    snapshot_into(dir, Path::new(""), &mut out);
    out
}

fn snapshot_into(base: &Path, rel: &Path, out: &mut BTreeMap<PathBuf, NodeFacts>) {
    let path = base.join(rel);
    let meta = fs::symlink_metadata(&path)
        .unwrap_or_else(|e| panic!("snapshot: cannot stat {}: {e}", path.display()));
    let ft = meta.file_type();
    if ft.is_dir() {
        out.insert(rel.to_path_buf(), (meta.mode(), 0, String::new()));
        let mut names: Vec<_> = fs::read_dir(&path)
            .unwrap_or_else(|e| panic!("snapshot: cannot list {}: {e}", path.display()))
            .map(|e| e.unwrap().file_name())
            .collect();
        names.sort();
        for name in names {
            snapshot_into(base, &rel.join(name), out);
        }
    } else if ft.is_symlink() {
        let target = fs::read_link(&path).unwrap();
        out.insert(
            rel.to_path_buf(),
            (meta.mode(), meta.len(), target.display().to_string()),
        );
    } else if ft.is_file() {
        let bytes = fs::read(&path)
            .unwrap_or_else(|e| panic!("snapshot: cannot read {}: {e}", path.display()));
        out.insert(
            rel.to_path_buf(),
            (meta.mode(), meta.len(), Sha256::of(&bytes).to_hex()),
        );
    } else {
        out.insert(rel.to_path_buf(), (meta.mode(), 0, String::new()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::write_exe;

    #[test]
    fn snapshot_sees_a_changed_byte_and_mode() {
        let d = TempDir::new();
        let f = write_exe(d.path(), "x", b"abc", 0o500);
        let before = tree_snapshot(d.path());
        assert_eq!(before, tree_snapshot(d.path()));
        fs::set_permissions(&f, fs::Permissions::from_mode(0o700)).unwrap();
        assert_ne!(before, tree_snapshot(d.path()));
        fs::write(&f, b"abd").unwrap();
        assert_ne!(before, tree_snapshot(d.path()));
    }
}
