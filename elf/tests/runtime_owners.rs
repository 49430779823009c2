//! A runtime only root or the invoker can change: its directory's path (no symbolic link, nothing
//! writable by others on the way but a sticky directory), and the interpreter with every directory
//! from the runtime down to it. Anything else is `runtime-unsafe` (a symbolic link on the way:
//! `runtime-unresolved`, name the real directory), whoever else owns or can write it.

use elf::runtime::{check_program, Depth, Program, RuntimeError};
use proto::{Kind, ToErrorObject};
use std::fs::File;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// Someone who is neither root nor the invoker.
const OTHER: u32 = 65534;

/// A runtime `parent/rt` holding `bin/interp`, and a script plugin naming that interpreter.
struct Runtime {
    _dir: testkit::TempDir,
    parent: PathBuf,
    rt: PathBuf,
    interp: PathBuf,
    script: PathBuf,
}

impl Runtime {
    fn new() -> Runtime {
        let dir = testkit::TempDir::new();
        let parent = dir.join("parent");
        let rt = parent.join("rt");
        std::fs::create_dir_all(rt.join("bin")).expect("mkdir");
        for d in [&parent, &rt, &rt.join("bin")] {
            chmod(d, 0o755);
        }
        let interp = testkit::write_exe(&rt.join("bin"), "interp", b"\x7fELF", 0o755);
        let script = testkit::write_exe(
            dir.path(),
            "plugin.sh",
            format!("#!{}\n", interp.display()).as_bytes(),
            0o755,
        );
        Runtime {
            _dir: dir,
            parent,
            rt,
            interp,
            script,
        }
    }

    /// The plugin checked against the runtime declared as `declared`.
    fn check(&self, declared: &Path) -> Result<Program, RuntimeError> {
        let plugin = File::open(&self.script).expect("open the script");
        let runtime = [declared
            .to_str()
            .expect("utf-8")
            .parse()
            .expect("runtime dir")];
        check_program(&plugin, &runtime, Depth::Plugin)
    }
}

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

fn chown(path: &Path, uid: u32) {
    std::os::unix::fs::lchown(path, Some(uid), None).expect("chown");
}

/// The error's kind and the path it names.
fn refused(r: Result<Program, RuntimeError>) -> (Kind, String) {
    let e = r.expect_err("refused");
    let obj = e.to_error_object();
    assert_eq!(obj.field.as_deref(), Some("runtime"), "{e}");
    (e.kind(), obj.value.unwrap_or_default())
}

#[test]
fn a_runtime_only_root_can_change_is_accepted() {
    let r = Runtime::new();
    match r.check(&r.rt) {
        Ok(Program::Script { interpreter }) => assert_eq!(interpreter, r.interp),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_runtime_directory_another_user_owns_or_can_write_is_unsafe() {
    let r = Runtime::new();
    chown(&r.rt, OTHER);
    assert_eq!(
        refused(r.check(&r.rt)),
        (Kind::RuntimeUnsafe, r.rt.display().to_string())
    );
    chown(&r.rt, 0);
    chmod(&r.rt, 0o775);
    assert_eq!(
        refused(r.check(&r.rt)),
        (Kind::RuntimeUnsafe, r.rt.display().to_string())
    );
}

#[test]
fn a_directory_on_the_runtimes_path_others_can_write_is_unsafe_unless_sticky() {
    let r = Runtime::new();
    chmod(&r.parent, 0o777);
    assert_eq!(
        refused(r.check(&r.rt)),
        (Kind::RuntimeUnsafe, r.parent.display().to_string())
    );
    // As /tmp: others may add entries, but only an entry's owner may rename or remove it.
    chmod(&r.parent, 0o1777);
    assert!(r.check(&r.rt).is_ok());
    chown(&r.parent, OTHER);
    assert_eq!(
        refused(r.check(&r.rt)),
        (Kind::RuntimeUnsafe, r.parent.display().to_string())
    );
}

#[test]
fn an_interpreter_or_directory_inside_the_runtime_another_user_can_change_is_unsafe() {
    let r = Runtime::new();
    chown(&r.interp, OTHER);
    assert_eq!(
        refused(r.check(&r.rt)),
        (Kind::RuntimeUnsafe, r.interp.display().to_string())
    );
    chown(&r.interp, 0);
    chmod(&r.interp, 0o775);
    assert_eq!(
        refused(r.check(&r.rt)),
        (Kind::RuntimeUnsafe, r.interp.display().to_string())
    );
    chmod(&r.interp, 0o755);
    let bin = r.rt.join("bin");
    chmod(&bin, 0o1777);
    assert_eq!(
        refused(r.check(&r.rt)),
        (Kind::RuntimeUnsafe, bin.display().to_string())
    );
}

#[test]
fn a_runtime_named_through_a_symbolic_link_is_refused_with_the_real_directory_to_name() {
    let r = Runtime::new();
    let link = r.parent.join("link");
    std::os::unix::fs::symlink(&r.rt, &link).expect("symlink");
    let e = r.check(&link).expect_err("refused");
    assert_eq!(e.kind(), Kind::RuntimeUnresolved);
    assert!(e.to_string().contains("symbolic link"), "{e}");
}

/// An interpreter named through a link in a directory others can write is theirs to replace,
/// wherever the link leads.
#[test]
fn an_interpreter_named_through_a_link_in_a_directory_others_can_write_is_unsafe() {
    let r = Runtime::new();
    let named_in = r.rt.join("alt");
    std::fs::create_dir(&named_in).expect("mkdir");
    chmod(&named_in, 0o755);
    std::os::unix::fs::symlink(&r.interp, named_in.join("interp")).expect("link");
    std::fs::write(
        &r.script,
        format!("#!{}\n", named_in.join("interp").display()),
    )
    .expect("script");
    assert!(r.check(&r.rt).is_ok());
    chmod(&named_in, 0o777);
    assert_eq!(
        refused(r.check(&r.rt)),
        (Kind::RuntimeUnsafe, named_in.display().to_string())
    );
}
