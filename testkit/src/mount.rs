//! A size-limited tmpfs mounted for one test and unmounted when dropped, for the fault suites
//! (ENOSPC, a read-only target, a target on another filesystem). Mounting needs root, which the
//! suites run as; a mount that fails panics: the test fails loudly, it never skips.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A tmpfs mounted on a directory; unmounted (lazily, if busy) on drop.
#[derive(Debug)]
pub struct Tmpfs {
    dir: PathBuf,
}

fn run(cmd: &mut Command, what: &str) {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot run: {e}"));
    assert!(
        out.status.success(),
        "{what} failed ({:?}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

impl Tmpfs {
    /// Creates `dir` (mode 0700) and mounts a tmpfs of `size_bytes` on it (mode 0700).
    pub fn mount(dir: &Path, size_bytes: u64) -> Tmpfs {
        std::fs::create_dir_all(dir)
            .unwrap_or_else(|e| panic!("cannot create mount point {}: {e}", dir.display()));
        run(
            Command::new("mount")
                .args(["-t", "tmpfs", "-o"])
                .arg(format!("size={size_bytes},mode=0700"))
                .arg("tmpfs")
                .arg(dir),
            "mount -t tmpfs",
        );
        Tmpfs {
            dir: dir.to_path_buf(),
        }
    }

    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// Remounts it read-only (`mount -o remount,ro`): writes fail with EROFS, even for root.
    pub fn remount_ro(&self) {
        self.remount("remount,ro");
    }

    /// Remounts it read-write.
    pub fn remount_rw(&self) {
        self.remount("remount,rw");
    }

    fn remount(&self, options: &str) {
        run(
            Command::new("mount").args(["-o", options]).arg(&self.dir),
            &format!("mount -o {options}"),
        );
    }

    /// Fills the filesystem with `path` (a file inside it) until the kernel says ENOSPC, leaving
    /// about `leave` bytes free: the file is truncated back by `leave` after the fill.
    pub fn fill(&self, path: &Path, leave: u64) {
        use std::io::Write;
        let mut f = std::fs::File::create(path)
            .unwrap_or_else(|e| panic!("cannot create {}: {e}", path.display()));
        let chunk = vec![0xa5u8; 64 * 1024];
        let mut written = 0u64;
        loop {
            match f.write(&chunk) {
                Ok(0) => break,
                Ok(n) => written += n as u64,
                Err(e) if e.raw_os_error() == Some(28) => break,
                Err(e) => panic!("filling {}: {e}", path.display()),
            }
        }
        f.set_len(written.saturating_sub(leave))
            .unwrap_or_else(|e| panic!("truncating {}: {e}", path.display()));
        f.sync_all().expect("sync the fill file");
    }
}

fn unmount(dir: &Path) {
    let ok = Command::new("umount")
        .arg(dir)
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        let _ = Command::new("umount").arg("-l").arg(dir).status();
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        unmount(&self.dir);
    }
}

/// A bind mount of one directory onto another (`mount --bind`); unmounted (lazily, if busy) on
/// drop.
#[derive(Debug)]
pub struct Bind {
    dir: PathBuf,
}

impl Bind {
    /// Creates `dir` and bind-mounts `source` on it.
    pub fn mount(source: &Path, dir: &Path) -> Bind {
        std::fs::create_dir_all(dir)
            .unwrap_or_else(|e| panic!("cannot create mount point {}: {e}", dir.display()));
        run(
            Command::new("mount").arg("--bind").arg(source).arg(dir),
            "mount --bind",
        );
        Bind {
            dir: dir.to_path_buf(),
        }
    }
}

impl Drop for Bind {
    fn drop(&mut self) {
        unmount(&self.dir);
    }
}
