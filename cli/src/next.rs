//! The command that resolves an error: the `next` (a POSIX `sh` command line, quoted) and
//! `next_argv` (the same command as an argument vector) of an error object or a warning.
//!
//! Three shapes, one rule each:
//!
//! - A command ([`Next::cmd`]): one command, runnable as printed. `next` is its arguments quoted for POSIX
//!   `sh`; `next_argv` is the vector itself (absent only when an argument is not UTF-8, which JSON
//!   cannot carry: `next` then shows it with U+FFFD and is not runnable as printed).
//! - The failed command again ([`Next::again`]): the command that failed, run again with some options added (or removed):
//!   `--replace`, `--accept-changes TOKEN`, a consent flag. Only the tool's `main` knows the
//!   command line as typed ([`crate::main`] resolves it there, keeping every other argument as it
//!   was given); a library caller sees the `fallback`, a command rebuilt from what the library knew.
//! - A template ([`Next::raw`], [`Next::then`]): a command line the user must complete, with placeholders in capitals
//!   (`FILE`, `DIR`, `FILE.minisig`) or a `&&` between two commands. `next_argv` is absent.

pub use proto::error::{Again, Opt};
use proto::error::{ErrorKind, ErrorObject, NextCommand};
use proto::layout::Root;
use proto::retained::{Retained, State};
use std::ffi::{OsStr, OsString};

/// Every word a template prints raw: the placeholders and the one operator.
pub const RAW_WORDS: [&str; 4] = ["FILE", "DIR", "FILE.minisig", "&&"];

/// One word of a template: an argument (quoted when printed) or raw text (a
/// placeholder or a shell operator, printed as is).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Word {
    Arg(OsString),
    Raw(&'static str),
}

/// The command that resolves an error: one of the three shapes of the module documentation.
/// Boxed, so that an error carrying one stays small.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Next(Box<Shape>);

#[derive(Clone, Debug, PartialEq, Eq)]
enum Shape {
    /// One command, runnable as printed.
    Run(Vec<OsString>),
    /// The failed command again, changed as `again` says; `fallback` where the command line is
    /// not known (a library caller).
    Again {
        again: Again,
        fallback: Vec<OsString>,
    },
    /// A command line to complete (placeholders in capitals) or a sequence (`&&`).
    Template(Vec<Word>),
}

impl Shape {
    /// The arguments of a command, or the argument words of a template.
    fn into_args(self) -> Vec<OsString> {
        match self {
            Shape::Run(v) | Shape::Again { fallback: v, .. } => v,
            Shape::Template(w) => w
                .into_iter()
                .filter_map(|w| match w {
                    Word::Arg(a) => Some(a),
                    Word::Raw(_) => None,
                })
                .collect(),
        }
    }

    /// The words of a template (a command's arguments are its words).
    fn into_words(self) -> Vec<Word> {
        match self {
            Shape::Run(v) | Shape::Again { fallback: v, .. } => {
                v.into_iter().map(Word::Arg).collect()
            }
            Shape::Template(w) => w,
        }
    }
}

/// The directory of the running tool as it was typed (`argv[0]` without its last component),
/// when it was run by a path: a `next` naming another dot tool names it there, its sibling, so
/// that the command runs as printed where that directory is not on `PATH`.
static TOOL_DIR: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();

/// Records the running tool's `argv[0]` (its `main` does, before anything else): when it holds a
/// `/`, every later [`Next::cmd`] of a dot tool (`dot-*`) names the sibling in the same
/// directory, where there is one ([`program_path`]). Run through `PATH` (no `/`), the bare name is
/// what runs, and stays.
pub fn set_program(argv0: &OsStr) {
    let path = std::path::Path::new(argv0);
    if let Some(dir) = path.parent().filter(|_| {
        use std::os::unix::ffi::OsStrExt;
        argv0.as_bytes().contains(&b'/')
    }) {
        let _ = TOOL_DIR.set(dir.to_path_buf());
    }
}

/// `program` as a command names it. A dot tool, when [`set_program`] saw a path: the sibling in
/// that directory when it is there; else, when the running tool was reached through a link of
/// another name or directory (`/x/dot-launch2 -> …/dot-launch`), the sibling of the real
/// executable (`/proc/self/exe`) when that one is there; else the bare name, as through `PATH`.
/// Never a path that names nothing.
fn program_path(program: &OsStr) -> OsString {
    use std::os::unix::ffi::OsStrExt;
    let bytes = program.as_bytes();
    let Some(dir) = TOOL_DIR.get() else {
        return program.to_owned();
    };
    if !bytes.starts_with(b"dot-") || bytes.contains(&b'/') {
        return program.to_owned();
    }
    let typed = dir.join(program);
    if typed.exists() {
        return typed.into_os_string();
    }
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|d| d.join(program)))
        .filter(|real| real.exists())
        .map_or_else(|| program.to_owned(), std::path::PathBuf::into_os_string)
}

impl Next {
    /// A command: `Next::cmd("dot-register").arg("init").arg("--root").arg(root)`. A dot tool is
    /// named where the running tool was found ([`set_program`]).
    pub fn cmd(program: impl AsRef<OsStr>) -> Next {
        Next(Box::new(Shape::Run(vec![program_path(program.as_ref())])))
    }

    /// Appends an argument (to the command, the fallback, or the template).
    pub fn arg(mut self, a: impl AsRef<OsStr>) -> Next {
        let a = a.as_ref().to_owned();
        match &mut *self.0 {
            Shape::Run(v) | Shape::Again { fallback: v, .. } => v.push(a),
            Shape::Template(w) => w.push(Word::Arg(a)),
        }
        self
    }

    /// Appends several arguments.
    pub fn args<I, S>(self, args: I) -> Next
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        args.into_iter().fold(self, Next::arg)
    }

    /// Appends `flag` when `on`.
    pub fn flag_if(self, on: bool, flag: &str) -> Next {
        if on {
            self.arg(flag)
        } else {
            self
        }
    }

    /// Appends the option `name` and its value, when there is one.
    pub fn opt_if(self, name: &str, value: Option<impl AsRef<OsStr>>) -> Next {
        match value {
            Some(v) => self.arg(name).arg(v),
            None => self,
        }
    }

    /// Appends `--root DIR`, and `--state DIR` when the root's state is apart from its registry.
    pub fn root(self, root: &Root) -> Next {
        self.arg("--root")
            .arg(root.path())
            .opt_if("--state", root.separate_state())
    }

    /// Appends a placeholder or an operator (one of [`RAW_WORDS`]), printed as is; the command
    /// becomes a template.
    pub fn raw(self, text: &'static str) -> Next {
        debug_assert!(RAW_WORDS.contains(&text), "{text} is not a raw word");
        let mut words = self.0.into_words();
        words.push(Word::Raw(text));
        Next(Box::new(Shape::Template(words)))
    }

    /// Another command after this one succeeds (`A && B`): a template.
    pub fn then(self, other: Next) -> Next {
        let mut words = self.raw("&&").0.into_words();
        words.extend(other.0.into_words());
        Next(Box::new(Shape::Template(words)))
    }

    /// The failed command again, with the options of `add` (replacing the same options where
    /// given) and without those of `remove`. `base` is the failed command as the library can
    /// rebuild it from its arguments; changed the same way, it is what a library caller sees.
    pub fn again(add: Vec<Opt>, remove: Vec<&'static str>, base: Next) -> Next {
        let again = Again { add, remove };
        Next(Box::new(Shape::Again {
            fallback: apply(&base.0.into_args(), &again),
            again,
        }))
    }

    /// The command line for `sh`: `next`.
    pub fn text(&self) -> String {
        match &*self.0 {
            Shape::Run(v) | Shape::Again { fallback: v, .. } => join(v),
            Shape::Template(words) => words
                .iter()
                .map(|w| match w {
                    Word::Arg(a) => quote(a),
                    Word::Raw(r) => (*r).to_owned(),
                })
                .collect::<Vec<_>>()
                .join(" "),
        }
    }

    /// The argument vector: `next_argv`, when the command is one command, runnable as is, and
    /// every argument is UTF-8.
    pub fn argv(&self) -> Option<Vec<String>> {
        match &*self.0 {
            Shape::Run(v) | Shape::Again { fallback: v, .. } => utf8(v),
            Shape::Template(_) => None,
        }
    }

    /// The changes to the failed command line, when the fix is the failed command again.
    pub fn again_changes(&self) -> Option<&Again> {
        match &*self.0 {
            Shape::Again { again, .. } => Some(again),
            _ => None,
        }
    }
}

/// `dot-register init --root DIR`: what several tools print for a missing root.
pub fn init_root(dir: &std::path::Path) -> Next {
    Next::cmd("dot-register").args(["init", "--root"]).arg(dir)
}

/// `obj` with `next` [`init_root`] when `missing` names a root that does not exist at all (a
/// tool that found no `txn/` there: `txn::TxnError::missing_root`).
pub fn or_init_root<K: ErrorKind>(
    obj: ErrorObject<K>,
    missing: Option<&std::path::Path>,
) -> ErrorObject<K> {
    match missing {
        Some(root) => obj.next(&init_root(root)),
        None => obj,
    }
}

/// `dot-launch recover --root DIR [--state DIR] TXID`: what takes a PREPARED or COMMITTED run
/// further.
pub fn recover_run(root: &Root, txid: &str) -> Next {
    Next::cmd("dot-launch").arg("recover").root(root).arg(txid)
}

/// The command that takes a run retained in `state` further, where one exists.
pub fn for_retained(root: &Root, txid: &str, state: State) -> Option<Next> {
    match state {
        State::Prepared | State::Committed => Some(recover_run(root, txid)),
        State::Abandoned | State::Unreadable => Some(Next::cmd("dot-discard").root(root)),
        State::Unrecognized | State::Live => None,
    }
}

/// A run left in place in `state`, and the command that takes it further, if there is one.
pub fn retained(txid: &str, state: State, reason: String, next: Option<Next>) -> Retained {
    Retained::new(
        txid,
        state,
        reason,
        next.as_ref().map(|n| n as &dyn NextCommand),
    )
}

/// `dot-register dev` registering `entry` (a local entry) again with everything it declares, in the
/// development root `root`, from the executable `exe` (`None`: the placeholder `FILE`).
pub fn register_local(
    root: &std::path::Path,
    entry: &proto::Entry,
    exe: Option<&std::path::Path>,
) -> Next {
    let cmd = Next::cmd("dot-register")
        .args(["dev", "--root"])
        .arg(root)
        .args(["--name", entry.name.as_str(), "--exe"]);
    let mut cmd = match exe {
        Some(exe) => cmd.arg(exe),
        None => cmd.raw("FILE"),
    };
    cmd = cmd
        .arg("--containment")
        .arg(entry.containment.to_string())
        .arg("--version")
        .arg(entry.version.to_string())
        .args(["--protocol", &entry.protocol]);
    for input in &entry.inputs {
        let optional = if input.required { "" } else { ":optional" };
        cmd = cmd
            .arg("--input")
            .arg(format!("{}:{}{optional}", input.name, input.kind));
    }
    for (option, value) in entry.limits.iter().flat_map(|l| l.options()) {
        cmd = cmd.arg(option).arg(value);
    }
    for dir in &entry.runtime {
        cmd = cmd.arg("--runtime").arg(dir.as_str());
    }
    for name in &entry.env {
        cmd = cmd.arg("--env").arg(name.as_str());
    }
    cmd
}

impl NextCommand for Next {
    fn text(&self) -> String {
        Next::text(self)
    }
    fn argv(&self) -> Option<Vec<String>> {
        Next::argv(self)
    }
    fn placeholders(&self) -> bool {
        match &*self.0 {
            Shape::Template(words) => words
                .iter()
                .any(|w| matches!(w, Word::Raw(r) if *r != "&&")),
            _ => false,
        }
    }
    fn again(&self) -> Option<&Again> {
        self.again_changes()
    }
}

/// `next` for the command line `typed` (program first, as the tool was run) when the error asks
/// for the failed command again: every typed argument kept, the options changed.
pub fn resolve_again<K: ErrorKind>(obj: &mut ErrorObject<K>, typed: &[OsString]) {
    if let Some(again) = obj.again.take() {
        let argv = apply(typed, &again);
        obj.next = Some(join(&argv));
        obj.next_argv = utf8(&argv);
    }
}

/// Every argument as UTF-8, or `None` (JSON cannot carry other bytes).
pub fn utf8(argv: &[OsString]) -> Option<Vec<String>> {
    argv.iter().map(|a| a.to_str().map(str::to_owned)).collect()
}

/// The arguments quoted for POSIX `sh` and joined by spaces.
pub fn join(argv: &[OsString]) -> String {
    argv.iter().map(|a| quote(a)).collect::<Vec<_>>().join(" ")
}

/// One argument quoted for POSIX `sh`: as is when it holds only characters no shell treats
/// specially (letters, digits, `_ @ % + = : , . / -`, and not empty), otherwise in single quotes,
/// each `'` written `'\''`. A byte that is not part of UTF-8 text is written `"$(printf '\NNN')"`
/// (octal), which any POSIX shell turns back into that byte: the line stays runnable as printed.
pub fn quote(arg: &OsStr) -> String {
    use std::os::unix::ffi::OsStrExt;
    let bytes = arg.as_bytes();
    let plain = !bytes.is_empty()
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || b"_@%+=:,./-".contains(b));
    if plain {
        return String::from_utf8_lossy(bytes).into_owned();
    }
    if bytes.is_empty() {
        return "''".to_owned();
    }
    let mut out = String::new();
    for chunk in bytes.utf8_chunks() {
        if !chunk.valid().is_empty() {
            out.push_str(&format!("'{}'", chunk.valid().replace('\'', r"'\''")));
        }
        for b in chunk.invalid() {
            out.push_str(&format!("\"$(printf '\\{b:03o}')\""));
        }
    }
    out
}

/// `argv` (the program first, as typed) changed as `again` says: each added option replaces
/// every occurrence of the same option (and its value, for an option that takes one), and is
/// inserted before a `--` if there is one, else at the end; each removed flag is dropped.
pub fn apply(argv: &[OsString], again: &Again) -> Vec<OsString> {
    let mut out: Vec<OsString> = Vec::with_capacity(argv.len() + 2 * again.add.len());
    let mut rest = argv.iter().peekable();
    let mut tail = Vec::new();
    if let Some(program) = rest.next() {
        out.push(program.clone());
    }
    while let Some(a) = rest.next() {
        if a == "--" {
            tail.push(a.clone());
            tail.extend(rest.by_ref().cloned());
            break;
        }
        if again.remove.iter().any(|r| a == *r) {
            continue;
        }
        if let Some(opt) = again.add.iter().find(|o| a == o.name) {
            if opt.value.is_some() {
                rest.next(); // its old value
            }
            continue;
        }
        out.push(a.clone());
    }
    for opt in &again.add {
        out.push(OsString::from(opt.name));
        if let Some(v) = &opt.value {
            out.push(v.clone());
        }
    }
    out.extend(tail);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    #[test]
    fn quoting_leaves_plain_words_and_single_quotes_the_rest() {
        for (arg, quoted) in [
            ("dot-register", "dot-register"),
            ("/tmp/a.b/c_d@e%f+g=h:i,j", "/tmp/a.b/c_d@e%f+g=h:i,j"),
            ("", "''"),
            ("a b", "'a b'"),
            ("it's", r"'it'\''s'"),
            ("$HOME", "'$HOME'"),
            ("~", "'~'"),
            ("a;b", "'a;b'"),
            ("x\ny", "'x\ny'"),
            ("*", "'*'"),
        ] {
            assert_eq!(quote(OsStr::new(arg)), quoted, "{arg:?}");
        }
    }

    #[test]
    fn again_replaces_the_same_option_and_keeps_everything_else() {
        let typed = os(&[
            "./dot-register",
            "dev",
            "--root",
            "/r",
            "--input",
            "a:string",
            "--accept-changes",
            "old",
            "--name",
            "x",
        ]);
        let again = Again {
            add: vec![Opt::flag("--replace"), Opt::with("--accept-changes", "new")],
            remove: vec![],
        };
        assert_eq!(
            apply(&typed, &again),
            os(&[
                "./dot-register",
                "dev",
                "--root",
                "/r",
                "--input",
                "a:string",
                "--name",
                "x",
                "--replace",
                "--accept-changes",
                "new"
            ])
        );
    }

    #[test]
    fn again_inserts_before_a_double_dash_and_removes_flags() {
        let typed = os(&[
            "dot-launch",
            "--allow-audit-plugin",
            "--root",
            "/r",
            "--",
            "hello",
        ]);
        let again = Again {
            add: vec![Opt::flag("--require-process-sandbox")],
            remove: vec!["--allow-audit-plugin"],
        };
        assert_eq!(
            apply(&typed, &again),
            os(&[
                "dot-launch",
                "--root",
                "/r",
                "--require-process-sandbox",
                "--",
                "hello"
            ])
        );
    }

    #[test]
    fn shapes_print_and_vectorise_by_their_rule() {
        let run = Next::cmd("dot-register")
            .args(["init", "--root"])
            .arg("/a b");
        assert_eq!(run.text(), "dot-register init --root '/a b'");
        assert_eq!(
            run.argv(),
            Some(vec![
                "dot-register".into(),
                "init".into(),
                "--root".into(),
                "/a b".into()
            ])
        );
        let t = Next::cmd("dot-register")
            .args(["publisher", "add", "--pubkey"])
            .raw("FILE");
        assert_eq!(t.text(), "dot-register publisher add --pubkey FILE");
        assert_eq!(t.argv(), None);
        let seq = Next::cmd("mkdir").args(["-p", "/x y"]).then(run.clone());
        assert_eq!(
            seq.text(),
            "mkdir -p '/x y' && dot-register init --root '/a b'"
        );
        assert_eq!(seq.argv(), None);
        let again = Next::again(vec![Opt::flag("--replace")], vec![], run.clone());
        assert_eq!(again.text(), format!("{} --replace", run.text()));
        assert!(again.again_changes().is_some());
    }

    #[test]
    fn an_argument_that_is_not_utf8_has_no_argv_but_a_runnable_line() {
        use std::os::unix::ffi::OsStringExt;
        let n = Next::cmd("rm").arg(OsString::from_vec(vec![b'a', 0xff, b'b', 0x80]));
        assert_eq!(n.argv(), None);
        assert_eq!(n.text(), r#"rm 'a'"$(printf '\377')"'b'"$(printf '\200')""#);
    }
}
