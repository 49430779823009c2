//! Running as `nobody` (uid and gid 65534, through `setpriv`) from a suite that runs as root: the
//! command, the workspace's tools copied where `nobody` can reach them, and the errno of each
//! attempt of `nobody`'s to change a file.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The uid and gid of `nobody`.
pub const NOBODY: u32 = 65534;

/// `program`, run as uid and gid 65534 with no supplementary groups and an empty environment.
pub fn command(program: &Path) -> Command {
    let mut c = Command::new("setpriv");
    c.env_clear()
        .args([
            format!("--reuid={NOBODY}"),
            format!("--regid={NOBODY}"),
            "--clear-groups".into(),
            "--".into(),
        ])
        .arg(program);
    c
}

/// Copies the workspace binaries `names` into `dir/bin` (0755, the directory too) and returns
/// it: the checkout may lie under a directory only root can enter, and the tools find their
/// siblings (dot-sandbox, dot-canary) beside themselves. `dir` must be traversable by nobody.
pub fn copy_tools(dir: &Path, names: &[&str]) -> PathBuf {
    let bin = dir.join("bin");
    fs::create_dir_all(&bin).unwrap();
    fs::set_permissions(&bin, fs::Permissions::from_mode(0o755)).unwrap();
    for t in names {
        let to = bin.join(t);
        crate::copy_exe(&crate::workspace_bin(t), &to);
        fs::set_permissions(&to, fs::Permissions::from_mode(0o755)).unwrap();
    }
    bin
}

/// Runs each `(label, python statement)` as nobody (`/usr/bin/python3 -I`, the variables of
/// `paths` set) and returns each label with the errno name it failed with (`ok` if it did not).
pub fn errnos(attempts: &[(&str, &str)], paths: &[(&str, &Path)]) -> Vec<(String, String)> {
    let mut script = String::from("import errno, os\n");
    for (name, path) in paths {
        script.push_str(&format!("{name} = {:?}\n", path.to_str().unwrap()));
    }
    for (label, stmt) in attempts {
        script.push_str(&format!(
            "try:\n    {stmt}\n    print({label:?} + '=ok')\nexcept OSError as e:\n    print({label:?} + '=' + errno.errorcode[e.errno])\n"
        ));
    }
    let out = command(Path::new("/usr/bin/python3"))
        .args(["-I", "-c", &script])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "python3 as nobody: {:?}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<(String, String)> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            let (a, b) = l.rsplit_once('=').unwrap();
            (a.to_owned(), b.to_owned())
        })
        .collect();
    assert_eq!(lines.len(), attempts.len(), "{lines:?}");
    lines
}
