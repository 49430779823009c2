//! What every tool's thin `main` shares: argh parsing without argh's own `exit` (so `--help` exits 0
//! and a usage error exits with our usage code) and the report: one JSON document (or text) on stdout
//! and exit 0, or one error object line on stderr and the error's exit code.
//!
//! This is the one place of dot's libraries that writes on stdout and stderr: `Outcome::report`
//! prints what the tool computed, when `main` returns. The data it prints is `proto`'s; the
//! `next` commands and their quoting are [`next`]'s, terminal escaping is [`visible`]'s.
//!
//! # Arguments that are not UTF-8
//!
//! argh parses `&str`, but a Unix argument is any bytes. [`main`] takes the arguments as `OsString`
//! and hands argh a stand-in for each argument that is not UTF-8 (and for each that holds
//! [`MARK`], U+FDD0, a Unicode noncharacter this module reserves): `MARK`, its position, `MARK`.
//! A path field decodes its stand-in back to the original bytes with `from_str_fn(cli::path)`
//! (or [`os_string`]); every other field would take the stand-in as text, so after parsing, a
//! stand-in that no path field decoded is a usage error naming the argument. A file path can
//! therefore be any bytes, while a name, a key or an input value must be UTF-8.

#![forbid(unsafe_code)]

pub mod limits;
pub mod next;
mod visible;

pub use next::Next;
pub use visible::{visible, visible_lines, VisibleStream};

use proto::error::{ErrorKind, ErrorObject, ExitCode, Kind, ToErrorObject};
use serde::Serialize;
use std::cell::RefCell;
use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;

/// What a tool's `run` produced on success: the text for stdout and the exit code (0, or 4 for a
/// report that says state was retained).
#[derive(Debug)]
pub struct Output {
    pub stdout: String,
    pub code: ExitCode,
    /// What the tool did, said in the `result-unwritten` error printed on stderr when stdout
    /// cannot take the output (a closed pipe, a full disk, EIO): what is done stays known.
    unwritten: Option<Done>,
}

/// What a tool did, for the `result-unwritten` error ([`Output::done`]).
#[derive(Debug)]
struct Done {
    message: String,
    value: Option<String>,
    path: Option<String>,
}

impl Output {
    /// One JSON document and a newline, exit 0.
    pub fn json<T: Serialize>(value: &T) -> Output {
        let mut stdout = serde_json::to_string(value).unwrap_or_default();
        stdout.push('\n');
        Output::text(stdout)
    }

    /// Plain text, exit 0.
    pub fn text(stdout: String) -> Output {
        Output {
            stdout,
            code: ExitCode::Success,
            unwritten: None,
        }
    }

    /// The same output, saying `done` (what the tool did, e.g. "run T committed into D") in the
    /// `result-unwritten` error should stdout not take it; `value` and `path` name what was done
    /// (a txid, a target).
    pub fn done(mut self, done: String, value: Option<String>, path: Option<String>) -> Output {
        self.unwritten = Some(Done {
            message: done,
            value,
            path,
        });
        self
    }

    /// The same output with another exit code.
    pub fn with_code(mut self, code: ExitCode) -> Output {
        self.code = code;
        self
    }
}

/// How the error line on stderr is written: JSON for programs, one readable line for people.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorStyle {
    /// One JSON error object.
    Json,
    /// `TOOL: KIND: MESSAGE (next: COMMAND)`.
    Human,
}

impl ErrorStyle {
    /// `--json` or `--human` when given (the last one wins); otherwise human when stderr is a
    /// terminal, JSON when it is not (a pipe, a file: a program is reading).
    pub fn choose(forced: Option<ErrorStyle>) -> ErrorStyle {
        forced.unwrap_or_else(|| {
            if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
                ErrorStyle::Human
            } else {
                ErrorStyle::Json
            }
        })
    }
}

/// The one readable line of an error object for a person: `TOOL: KIND: MESSAGE`, with the
/// command that resolves it, if there is one. A message's line breaks become spaces, and every
/// other character a terminal would act on is shown escaped ([`visible`]): a message, a path or a
/// value can hold a plugin's or a file's text.
pub fn human_line<K: ErrorKind>(tool: &str, err: &ErrorObject<K>) -> String {
    let mut line = format!(
        "{}: {}: {}",
        visible(tool),
        err.error,
        visible(&err.message.replace('\n', " "))
    );
    if let Some(next) = &err.next {
        line.push_str(&format!(" (next: {})", visible(next)));
    }
    line
}

/// What a person reads on stderr for an error object: [`human_line`], then, for a failed run kept
/// with `--stderr tail`, the tail of the plugin's stderr, each of its lines after `| ` and shown
/// as [`visible`] (a plugin's text never moves the cursor, clears the screen or writes the
/// clipboard). Ends without a newline.
pub fn human_text<K: ErrorKind>(tool: &str, err: &ErrorObject<K>) -> String {
    let mut text = human_line(tool, err);
    let tail = err.run.as_ref().and_then(|r| r.stderr_tail.as_deref());
    if let Some(tail) = tail.filter(|t| !t.is_empty()) {
        text.push_str(&format!(
            "\n{}: the plugin's stderr ended with ({} bytes):",
            visible(tool),
            tail.len()
        ));
        for line in tail.lines() {
            text.push_str("\n| ");
            text.push_str(&visible(line));
        }
    }
    text
}

/// What `main` returns: printing happens in `Termination::report`. `K` is the tool's error kinds:
/// [`Kind`], the catalogue, for every installed tool.
#[derive(Debug)]
pub struct Outcome<K = Kind> {
    stdout: String,
    stderr: Option<ErrorObject<K>>,
    unwritten: Option<Done>,
    code: ExitCode,
    tool: String,
    style: ErrorStyle,
}

impl<K> Outcome<K> {
    /// The error object the tool will print, if it failed.
    pub fn error(&self) -> Option<&ErrorObject<K>> {
        self.stderr.as_ref()
    }
}

impl<K: ErrorKind> std::process::Termination for Outcome<K> {
    /// Prints the output on stdout, or the error object on stderr. Output that stdout cannot take
    /// (a closed pipe, ENOSPC, EIO) becomes one `result-unwritten` error on stderr, exit 5, saying
    /// what the tool did (for a launch: that the run committed, its txid and target).
    fn report(self) -> std::process::ExitCode {
        let mut code = self.code;
        let mut stderr = self.stderr;
        if !self.stdout.is_empty() {
            let mut out = std::io::stdout().lock();
            // On a terminal, what a tool prints can hold a file's text (a journal, an audit
            // line, a path): shown escaped. A pipe or a file gets the bytes as they are.
            let shown = match std::io::IsTerminal::is_terminal(&out) {
                true => std::borrow::Cow::Owned(visible_lines(&self.stdout)),
                false => std::borrow::Cow::Borrowed(self.stdout.as_str()),
            };
            if let Err(e) = out.write_all(shown.as_bytes()).and_then(|()| out.flush()) {
                let done = self.unwritten.unwrap_or_else(|| Done {
                    message: "the tool finished".to_owned(),
                    value: None,
                    path: None,
                });
                let mut obj = ErrorObject::new(
                    K::RESULT_UNWRITTEN,
                    format!(
                        "{}, but its result could not be written to stdout: {e}",
                        done.message
                    ),
                );
                obj.value = done.value;
                obj.path = done.path;
                code = obj.exit_code();
                stderr = Some(obj);
            }
        }
        if let Some(err) = stderr {
            let line = match self.style {
                ErrorStyle::Json => err.to_line(),
                ErrorStyle::Human => human_text(&self.tool, &err),
            };
            let _ = writeln!(std::io::stderr().lock(), "{line}");
        }
        code.into()
    }
}

/// The options every tool takes besides its own, handled here before its parser sees the rest:
/// `--version`, `--json`, `--human`.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Common {
    pub version: bool,
    pub style: Option<ErrorStyle>,
}

/// Takes the common options out of `argv` (program name first): `--version` (or `-V`) as the
/// first argument, `--json` and `--human` anywhere before `--`; `-h` as the last argument is
/// `--help`. A tool with a `--json` option of
/// its own (dot-journal-fmt: JSON on stdout too) gets it left in place (`keep_json`): it means
/// JSON everywhere there.
pub fn common_options(argv: &mut Vec<OsString>, keep_json: bool) -> Common {
    let mut common = Common::default();
    // `--version` is the tool's only as its first argument: a subcommand may have a `--version`
    // of its own (`dot-register dev --version 1.2.0`).
    if matches!(
        argv.get(1).and_then(|a| a.to_str()),
        Some("--version" | "-V")
    ) {
        common.version = true;
        argv.remove(1);
    }
    // `-h` is `--help` as the last argument (anywhere else it may be an option's value).
    if argv.len() > 1 && argv.last().and_then(|a| a.to_str()) == Some("-h") {
        if let Some(last) = argv.last_mut() {
            *last = "--help".into();
        }
    }
    let mut i = 1;
    while i < argv.len() {
        let keep = match argv[i].to_str() {
            Some("--json") => {
                common.style = Some(ErrorStyle::Json);
                keep_json
            }
            Some("--human") => {
                common.style = Some(ErrorStyle::Human);
                false
            }
            Some("--") => break,
            _ => true,
        };
        if keep {
            i += 1;
        } else {
            argv.remove(i);
        }
    }
    common
}

/// The options [`common_options`] takes, as every tool's `--help` ends with them.
pub const COMMON_HELP: &str = "
Common options (every dot tool):
  -V, --version     the tool's name and version (first argument only)
  -h, --help        this text (-h as the last argument)
  --json            errors as one JSON object on stderr (the default unless stderr is a terminal)
  --human           errors as one readable line on stderr (the default on a terminal)
";

/// [`COMMON_HELP`] for the help text `help`. A subcommand with a `--version` option of
/// its own (the plugin's version: `dot-register dev`, `entry new`) gets the common `--version`
/// said apart from it, so the two cannot be taken for each other.
pub fn common_help(help: &str) -> std::borrow::Cow<'static, str> {
    let own = help
        .lines()
        .any(|l| l.trim_start().starts_with("--version "));
    match own {
        false => COMMON_HELP.into(),
        true => COMMON_HELP
            .replace(
                "(first argument only)",
                "(only as the first argument, before any\n                    subcommand; the --version above is the plugin's)",
            )
            .into(),
    }
}

/// What a tool adds to the common handling in [`main_with`].
#[derive(Debug, Default)]
pub struct Extras {
    /// Added to the `--version` line (dot-launch and dot-sandbox: the protocol, the policy).
    pub about: Option<fn() -> String>,
    /// The tool has a `--json` option of its own, which stays in its arguments.
    pub keep_json: bool,
}

/// The tool's name: the last component of `argv[0]`.
fn tool_name(argv: &[OsString]) -> String {
    let name = argv
        .first()
        .map(|a| a.to_string_lossy().into_owned())
        .unwrap_or_else(|| "dot".to_owned());
    name.rsplit('/').next().unwrap_or(&name).to_owned()
}

/// Parses `argv` (program name first, as `std::env::args_os` gives it) into `A`, runs `run`, and
/// turns the result into an `Outcome`. `--version` prints `TOOL VERSION` and exits 0.
pub fn main<A, K, E, F>(argv: impl IntoIterator<Item = OsString>, run: F) -> Outcome<K>
where
    A: argh::FromArgs,
    K: ErrorKind,
    E: ToErrorObject<K>,
    F: FnOnce(A) -> Result<Output, E>,
{
    main_with(argv, run, Extras::default())
}

/// [`main`] for a tool with [`Extras`].
pub fn main_with<A, K, E, F>(
    argv: impl IntoIterator<Item = OsString>,
    run: F,
    extras: Extras,
) -> Outcome<K>
where
    A: argh::FromArgs,
    K: ErrorKind,
    E: ToErrorObject<K>,
    F: FnOnce(A) -> Result<Output, E>,
{
    let typed: Vec<OsString> = argv.into_iter().collect();
    if let Some(argv0) = typed.first() {
        crate::next::set_program(argv0);
    }
    let mut argv = typed.clone();
    let common = common_options(&mut argv, extras.keep_json);
    if let Some(root) = env_root_for::<A>(&mut argv, std::env::var_os(ROOT_VAR)) {
        let _ = ENV_ROOT.set(root);
    }
    let tool = tool_name(&argv);
    let style = ErrorStyle::choose(common.style);
    let outcome = |stdout: String, stderr: Option<ErrorObject<K>>, code: ExitCode| Outcome {
        stdout,
        stderr,
        unwritten: None,
        code,
        tool: tool.clone(),
        style,
    };
    if common.version {
        let extra = extras.about.map(|f| f()).unwrap_or_default();
        let sep = if extra.is_empty() { "" } else { " " };
        let line = format!("{tool} {}{sep}{extra}\n", env!("CARGO_PKG_VERSION"));
        return outcome(line, None, ExitCode::Success);
    }
    let args = match parse::<A>(&argv) {
        Ok(a) => a,
        Err(Early::Help(text)) => {
            let common = common_help(&text);
            return outcome(format!("{text}{common}"), None, ExitCode::Success);
        }
        Err(Early::Usage(obj)) => {
            return outcome(
                String::new(),
                Some((*obj).with_kind(K::USAGE)),
                ExitCode::Usage,
            )
        }
    };
    match run(args) {
        Ok(out) => Outcome {
            unwritten: out.unwritten,
            ..outcome(out.stdout, None, out.code)
        },
        Err(e) => {
            let mut obj = e.to_error_object();
            next::resolve_again(&mut obj, &typed);
            outcome(String::new(), Some(obj), e.kind().exit_code())
        }
    }
}

/// The environment variable that names the platform root of a command that takes `--root` when
/// the command line gives neither `--root` nor `--sysroot`: as if `--root $DOT_ROOT` had been
/// typed last before any `--`. An empty value is no value.
pub const ROOT_VAR: &str = "DOT_ROOT";

/// The root this process took from [`ROOT_VAR`], if it did.
static ENV_ROOT: std::sync::OnceLock<OsString> = std::sync::OnceLock::new();

/// The root taken from `DOT_ROOT` by this process's command line ([`main`]), when `--root` was
/// not given and the command takes one: what `--explain` reports as the root's source.
pub fn env_root() -> Option<&'static std::ffi::OsStr> {
    ENV_ROOT.get().map(OsString::as_os_str)
}

/// Adds `--root VALUE` to `argv` (before any `--`) when `value` is set and not empty, the
/// command line has neither `--root` nor `--sysroot`, and its command takes `--root` (its own
/// `--help` lists it: the one description of its options). Returns the value added.
pub fn env_root_for<A: argh::FromArgs>(
    argv: &mut Vec<OsString>,
    value: Option<OsString>,
) -> Option<OsString> {
    let value = value.filter(|v| !v.is_empty())?;
    let end = argv.iter().position(|a| a == "--").unwrap_or(argv.len());
    // `--help` asks for the text alone, which an added option would spoil.
    let given = argv.get(1..end).unwrap_or_default().iter().any(|a| {
        let a = a.to_string_lossy();
        a == "--help"
            || ["--root", "--sysroot"]
                .iter()
                .any(|o| a == *o || a.starts_with(&format!("{o}=")))
    });
    if given {
        return None;
    }
    let mut probe = argv[..end].to_vec();
    probe.push("--help".into());
    let takes_root = match parse::<A>(&probe) {
        Err(Early::Help(text)) => text.lines().any(|l| l.trim_start().starts_with("--root ")),
        _ => false,
    };
    if !takes_root {
        return None;
    }
    argv.splice(end..end, [OsString::from("--root"), value.clone()]);
    Some(value)
}

/// Why parsing did not produce arguments.
#[derive(Debug)]
pub enum Early {
    /// `--help`: print the text on stdout, exit 0.
    Help(String),
    /// A usage error: the error object, exit 2.
    Usage(Box<ErrorObject>),
}

/// The character that brackets a stand-in: U+FDD0, a noncharacter (never assigned, reserved by
/// Unicode for a program's internal use).
pub const MARK: char = '\u{FDD0}';

/// The arguments that argh sees only as stand-ins, for the parse in progress on this thread.
#[derive(Default)]
struct StandIns {
    raw: Vec<OsString>,
    decoded: Vec<bool>,
}

thread_local! {
    static STAND_INS: RefCell<StandIns> = RefCell::new(StandIns::default());
}

fn stand_in(index: usize) -> String {
    format!("{MARK}{index}{MARK}")
}

/// The index a stand-in names, if `s` is one.
fn stand_in_index(s: &str) -> Option<usize> {
    s.strip_prefix(MARK)?.strip_suffix(MARK)?.parse().ok()
}

/// argh's `from_str_fn` for a path: the original bytes of the argument.
pub fn path(s: &str) -> Result<PathBuf, String> {
    os_string(s).map(PathBuf::from)
}

/// argh's `from_str_fn` for any-bytes text: the original bytes of the argument.
pub fn os_string(s: &str) -> Result<OsString, String> {
    let Some(index) = stand_in_index(s) else {
        return Ok(OsString::from(s));
    };
    STAND_INS.with(|t| {
        let mut t = t.borrow_mut();
        let raw = t.raw.get(index).cloned();
        if let Some(d) = t.decoded.get_mut(index) {
            *d = true;
        }
        raw.ok_or_else(|| "not an argument of this command line".to_owned())
    })
}

/// Parses `argv` (program name first) into `A`.
pub fn parse<A: argh::FromArgs>(argv: &[OsString]) -> Result<A, Early> {
    let name = tool_name(argv);
    let mut raw = Vec::new();
    let rest: Vec<String> = argv
        .iter()
        .skip(1)
        .map(|a| match a.to_str() {
            // A lone `-` (stdin, for a path) is a stand-in too: argh reads it as an option.
            Some(s) if !s.contains(MARK) && s != "-" => s.to_owned(),
            _ => {
                raw.push(a.clone());
                stand_in(raw.len() - 1)
            }
        })
        .collect();
    STAND_INS.with(|t| {
        *t.borrow_mut() = StandIns {
            decoded: vec![false; raw.len()],
            raw,
        }
    });
    let refs: Vec<&str> = rest.iter().map(String::as_str).collect();
    let parsed = A::from_args(&[&name], &refs);
    let t = STAND_INS.with(|t| std::mem::take(&mut *t.borrow_mut()));
    let help = crate::next::Next::cmd(argv.first().cloned().unwrap_or_else(|| name.clone().into()))
        .args(subcommand_words(argv))
        .arg("--help");
    let usage = |message: String| ErrorObject::new(Kind::Usage, message).next(&help);
    let args = parsed.map_err(|e| match e.status {
        Ok(()) => Early::Help(e.output),
        Err(()) => Early::Usage(Box::new(usage(one_line(&shown(&e.output, &t.raw))))),
    })?;
    if let Some(index) = t.decoded.iter().position(|d| !d) {
        let at = rest.iter().position(|r| *r == stand_in(index)).unwrap_or(0);
        let arg = &t.raw[index];
        let why = match arg.to_str() {
            Some("-") => "(stdin) is accepted only where a file is".to_owned(),
            Some(_) => format!("holds U+FDD0, a noncharacter {name} does not accept"),
            None => "is not valid UTF-8".to_owned(),
        };
        let mut obj = usage(format!(
            "argument {} {:?} {why}; only a file path may be any bytes",
            at + 1,
            arg.to_string_lossy()
        ))
        .value(arg.to_string_lossy());
        if let Some(option) = at.checked_sub(1).and_then(|i| rest.get(i)) {
            if option.starts_with('-') {
                obj = obj.field(option.trim_start_matches('-'));
            }
        }
        return Err(Early::Usage(Box::new(obj)));
    }
    Ok(args)
}

/// The words naming the subcommand of `argv` (program name first): the leading arguments that
/// look like a subcommand name (`publisher add`), up to the first option. The help a usage error
/// points at is that subcommand's (`dot-register add --help`), not the tool's.
fn subcommand_words(argv: &[OsString]) -> Vec<OsString> {
    argv.iter()
        .skip(1)
        .take_while(|a| {
            a.to_str().is_some_and(|s| {
                s.starts_with(|c: char| c.is_ascii_lowercase())
                    && s.chars().all(|c| c.is_ascii_lowercase() || c == '-')
            })
        })
        .cloned()
        .collect()
}

/// argh's error text as one line: a message is one sentence, never a raw newline. argh lists
/// what is missing one per indented line after a colon (`Required options not provided:\n
/// --pgid`): the list is joined by commas after the colon, and a second list follows after `; `.
fn one_line(text: &str) -> String {
    let mut out = String::new();
    let mut listing = false;
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if out.is_empty() {
            out.push_str(line);
        } else if line.ends_with(':') {
            // Another list follows: a clause of its own.
            out.push_str("; ");
            out.push_str(line);
        } else if listing && !out.ends_with(':') {
            out.push_str(", ");
            out.push_str(line);
        } else {
            out.push(' ');
            out.push_str(line);
        }
        listing = listing || line.ends_with(':');
    }
    out
}

/// argh's text with each stand-in shown as its argument (invalid bytes as U+FFFD).
fn shown(text: &str, raw: &[OsString]) -> String {
    let mut out = text.to_owned();
    for (i, r) in raw.iter().enumerate() {
        out = out.replace(&stand_in(i), &r.to_string_lossy());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;

    /// A command with a path option, a repeated path, a text option and a positional name.
    #[derive(argh::FromArgs, Debug)]
    /// test
    struct T {
        /// a path
        #[argh(option, from_str_fn(path))]
        root: PathBuf,
        /// more paths
        #[argh(option, from_str_fn(path))]
        file: Vec<PathBuf>,
        /// text
        #[argh(option)]
        text: Option<String>,
        /// a name
        #[argh(positional)]
        name: String,
    }

    fn argv(args: &[&[u8]]) -> Vec<OsString> {
        std::iter::once(&b"/usr/bin/dot-test"[..])
            .chain(args.iter().copied())
            .map(|a| OsStr::from_bytes(a).to_owned())
            .collect()
    }

    #[test]
    fn paths_keep_their_bytes() {
        let t: T = parse(&argv(&[
            b"--root",
            b"/tmp/r\xff",
            b"--file",
            b"a\xfe",
            b"--file",
            "b\u{FDD0}0\u{FDD0}".as_bytes(),
            b"hello",
        ]))
        .expect("parses");
        assert_eq!(t.root.as_os_str().as_bytes(), b"/tmp/r\xff");
        assert_eq!(t.file[0].as_os_str().as_bytes(), b"a\xfe");
        assert_eq!(
            t.file[1].as_os_str().as_bytes(),
            "b\u{FDD0}0\u{FDD0}".as_bytes()
        );
        assert_eq!((t.name.as_str(), t.text), ("hello", None));
    }

    #[test]
    fn text_that_is_not_utf8_is_a_usage_error_naming_the_option() {
        for (args, field) in [
            (
                &[&b"--root"[..], b"/r", b"--text", b"v\xff", b"n"][..],
                Some("text"),
            ),
            (&[&b"--root"[..], b"/r", b"n\xff"][..], None),
            (
                &[&b"--root"[..], b"/r", "\u{FDD0}0\u{FDD0}".as_bytes()][..],
                None,
            ),
        ] {
            match parse::<T>(&argv(args)) {
                Err(Early::Usage(obj)) => {
                    assert_eq!(obj.error, Kind::Usage);
                    assert_eq!(obj.field.as_deref(), field);
                    assert_eq!(
                        obj.next.as_deref(),
                        Some("/usr/bin/dot-test --help"),
                        "the program as typed"
                    );
                    assert!(!obj.message.contains(MARK), "{}", obj.message);
                }
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn argh_errors_show_the_argument_not_the_stand_in() {
        match parse::<T>(&argv(&[b"--root", b"/r", b"n", b"x\xffy"])) {
            Err(Early::Usage(obj)) => {
                assert!(obj.message.contains("x\u{FFFD}y"), "{}", obj.message);
                assert!(!obj.message.contains(MARK));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn common_options_are_taken_out_wherever_they_are() {
        let mut a = argv(&[b"--version", b"--json", b"--root", b"/r", b"--human", b"n"]);
        let c = common_options(&mut a, false);
        assert_eq!(
            c,
            Common {
                version: true,
                style: Some(ErrorStyle::Human)
            }
        );
        assert_eq!(a, argv(&[b"--root", b"/r", b"n"]));
        // Past the first argument, `--version` is the subcommand's own.
        let mut d = argv(&[b"dev", b"--version", b"1.2.0"]);
        assert_eq!(common_options(&mut d, false), Common::default());
        assert_eq!(d, argv(&[b"dev", b"--version", b"1.2.0"]));
        let mut b = argv(&[b"x", b"--", b"--json"]);
        assert_eq!(common_options(&mut b, false), Common::default());
        assert_eq!(b, argv(&[b"x", b"--", b"--json"]));
        let mut c = argv(&[b"--json", b"--root", b"/r"]);
        assert_eq!(common_options(&mut c, true).style, Some(ErrorStyle::Json));
        assert_eq!(c, argv(&[b"--json", b"--root", b"/r"]));
        // `-V` first is `--version`; `-h` last is `--help`, elsewhere an option's value.
        let mut v = argv(&[b"-V"]);
        assert!(common_options(&mut v, false).version);
        let mut h = argv(&[b"add", b"-h"]);
        assert_eq!(common_options(&mut h, false), Common::default());
        assert_eq!(h, argv(&[b"add", b"--help"]));
        let mut r = argv(&[b"deny", b"--reason", b"-h", b"--sha256", b"x"]);
        common_options(&mut r, false);
        assert_eq!(r, argv(&[b"deny", b"--reason", b"-h", b"--sha256", b"x"]));
    }

    #[test]
    fn a_subcommands_own_version_is_told_apart_from_the_tools() {
        assert_eq!(
            common_help("Options:\n  --root <root>  a root\n"),
            COMMON_HELP
        );
        let both = common_help("Options:\n  --version         the plugin's version\n");
        assert!(both.contains("before any"), "{both}");
        assert!(
            both.contains("the --version above is the plugin's"),
            "{both}"
        );
    }

    #[test]
    fn a_usage_message_is_one_line() {
        assert_eq!(
            one_line("Required options not provided:\n    --pgid\n"),
            "Required options not provided: --pgid"
        );
        assert_eq!(
            one_line("Required options not provided:\n    --a\n    --b"),
            "Required options not provided: --a, --b"
        );
        assert_eq!(
            one_line("Required positional arguments not provided:\n    file\nRequired options not provided:\n    --a"),
            "Required positional arguments not provided: file; Required options not provided: --a"
        );
        assert_eq!(
            one_line("Unrecognized argument: --x"),
            "Unrecognized argument: --x"
        );
        match parse::<T>(&argv(&[b"n"])) {
            Err(Early::Usage(obj)) => {
                assert_eq!(obj.message, "Required options not provided: --root");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_usage_error_points_at_the_subcommands_help() {
        let words = subcommand_words(&argv(&[b"publisher", b"add", b"--id", b"x"]));
        assert_eq!(
            words,
            vec![OsString::from("publisher"), OsString::from("add")]
        );
        assert!(subcommand_words(&argv(&[b"--root", b"/r", b"add"])).is_empty());
    }

    #[test]
    fn the_human_line_is_one_line_with_the_next_command() {
        let e = ErrorObject::new(Kind::ConsentMissing, "hello needs\nconsent")
            .next(&crate::next::Next::cmd("dot-launch").arg("x"));
        assert_eq!(
            human_line("dot-launch", &e),
            "dot-launch: consent-missing: hello needs consent (next: dot-launch x)"
        );
    }

    #[test]
    fn the_human_line_shows_terminal_controls_escaped() {
        // OSC 52 (a clipboard write), a screen clear, a C1 CSI, a bidi override, a BEL.
        let message = "ok\x1b]52;c;ZWNobyBwd25lZA==\x07 \x1b[2J\x1b[H \u{9b}31m \u{202e}txt.exe";
        let e = ErrorObject::new(Kind::PluginError, message)
            .next(&crate::next::Next::cmd("dot-launch").arg("a\x1bb"));
        let line = human_line("dot-launch", &e);
        assert_eq!(
            line,
            "dot-launch: plugin-error: ok\\x1b]52;c;ZWNobyBwd25lZA==\\x07 \\x1b[2J\\x1b[H \
             \\u{9b}31m \\u{202e}txt.exe (next: dot-launch 'a\\x1bb')"
        );
        assert!(!line.chars().any(|c| c.is_control()), "{line:?}");
    }

    #[test]
    fn the_stderr_tail_follows_the_human_line_line_by_line() {
        let mut e = ErrorObject::new(Kind::PluginExit, "failed");
        assert_eq!(
            human_text("dot-launch", &e),
            "dot-launch: plugin-exit: failed"
        );
        let run: proto::result::RunResult = serde_json::from_value(serde_json::json!({
            "schema": 1, "txid": "t", "name": "hello", "version": "1.0.0",
            "sha256": "0".repeat(64), "trust": "local", "containment": "audit",
            "dependencies": "pinned", "status": "failed", "exit": {"code": 1},
            "duration_ms": 1, "stdout_bytes": 0, "stderr_bytes": 9, "outputs": [],
            "stderr_tail": "one\n\x1b[2Jtwo\n",
        }))
        .unwrap_or_else(|err| panic!("{err}"));
        e.run = Some(Box::new(run));
        assert_eq!(
            human_text("dot-launch", &e),
            "dot-launch: plugin-exit: failed\n\
             dot-launch: the plugin's stderr ended with (12 bytes):\n\
             | one\n\
             | \\x1b[2Jtwo"
        );
    }

    /// A command without `--root`.
    #[derive(argh::FromArgs, Debug)]
    /// test
    struct NoRoot {
        /// files
        #[argh(positional, greedy)]
        files: Vec<String>,
    }

    #[test]
    fn dot_root_is_added_only_where_the_command_takes_root_and_none_is_given() {
        let v = || Some(OsString::from("/env/root"));
        let mut a = argv(&[b"hello", b"--", b"x"]);
        assert_eq!(env_root_for::<T>(&mut a, v()), v());
        assert_eq!(a, argv(&[b"hello", b"--root", b"/env/root", b"--", b"x"]));
        let t: T = parse(&argv(&[b"hello", b"--root", b"/env/root"])).expect("parses");
        assert_eq!(t.root, PathBuf::from("/env/root"));
        for given in [
            &[&b"--root"[..], b"/r", b"n"][..],
            &[&b"--root=/r"[..], b"n"][..],
            &[&b"--sysroot"[..], b"/s", b"n"][..],
            &[&b"n"[..], b"--help"][..],
        ] {
            let mut a = argv(given);
            assert_eq!(env_root_for::<T>(&mut a, v()), None, "{given:?}");
            assert_eq!(a, argv(given));
        }
        let mut a = argv(&[b"n"]);
        assert_eq!(
            env_root_for::<T>(&mut a, Some(OsString::new())),
            None,
            "empty"
        );
        assert_eq!(env_root_for::<T>(&mut a, None), None);
        let mut a = argv(&[b"f1", b"f2"]);
        assert_eq!(env_root_for::<NoRoot>(&mut a, v()), None, "takes no --root");
        let n: NoRoot = parse(&a).expect("parses");
        assert_eq!(n.files, ["f1", "f2"]);
    }
}
