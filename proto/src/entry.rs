//! The registry entry: `ROOT/plugins.d/NAME.json`.
//!
//! An entry binds a plugin name and version to its publisher (or to local trust in a development
//! root), the executable's SHA-256 and size, the protocol range it speaks, its declared inputs and
//! the containment it requires. In a signed root the minisign signature covers the entry file's exact
//! bytes, so every field is bound by it.

use crate::digest::Sha256;
use crate::limits::{DeclaredLimits, Limits};
use crate::name::Name;
use crate::strict::{self, StrictError};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::fmt;

/// The entry schema this code writes and accepts.
pub const ENTRY_SCHEMA: u32 = 1;

/// Words `dot-launch` takes in the plugin-name position: no entry may be named after one, or it
/// could be registered but never launched.
pub const RESERVED_PLUGIN_NAMES: &[&str] = &["recover"];

/// A registry entry, exactly as stored.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    pub schema: u32,
    pub name: Name,
    pub version: semver::Version,
    pub trust: Trust,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub publisher: Option<Name>,
    pub sha256: Sha256,
    pub size: u64,
    /// A semver requirement on the launcher's protocol version, e.g. `>=1.0, <2`.
    pub protocol: String,
    pub inputs: Vec<InputDecl>,
    pub containment: Containment,
    /// Unix seconds from which the entry is refused (`entry-expired`); signed with the rest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires: Option<u64>,
    /// The run's resource limits: a preset and fields replacing its values (`crate::limits`);
    /// absent: the `standard` preset. Signed with the rest; the invoker may only lower them.
    #[serde(
        default,
        deserialize_with = "crate::limits::present",
        skip_serializing_if = "Option::is_none"
    )]
    pub limits: Option<DeclaredLimits>,
    /// Read-only host directories (absolute, e.g. `/usr`) a `process` plugin's interpreter or
    /// shared libraries come from: each appears at the same path in the run's private root, with
    /// read and execute beneath it. Signed with the rest; adding one is a widening. Their files
    /// are the host's and not pinned.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runtime: Vec<RuntimeDir>,
    /// Environment variable names the invoker may give values for (`dot-launch --env NAME=VALUE`):
    /// the plugin's whole environment is those it is given, nothing inherited. Signed with the
    /// rest; adding one is a widening.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<EnvName>,
}

/// The most environment variable names an entry may declare.
pub const MAX_ENV_NAMES: usize = 32;

/// Names no entry may declare: each changes which code runs or where it is found (a loader, the C
/// library, an interpreter or runtime, a library's module or configuration loader, a shell, a
/// program run by name), so a value the invoker gives would run code the entry's digest does not
/// pin; and `PATH` and `HOME`, which never reach a plugin (docs/security.md). Whole families are
/// refused by prefix ([`DENIED_ENV_PREFIXES`]). The C library's part is glibc's list of variables
/// its loader drops for set-user-ID programs (`unsecvars.h`).
pub const DENIED_ENV_NAMES: &[&str] = &[
    // the C library (glibc's unsecvars.h, without its LD_ ones)
    "GCONV_PATH",
    "GETCONF_DIR",
    "GLIBC_TUNABLES",
    "HOSTALIASES",
    "LOCALDOMAIN",
    "LOCPATH",
    "MALLOC_TRACE",
    "NIS_PATH",
    "NLSPATH",
    "RESOLV_HOST_CONF",
    "RES_OPTIONS",
    "TMPDIR",
    "TZDIR",
    // interpreters and runtimes (besides their prefixes)
    "_JAVA_OPTIONS",
    "JDK_JAVA_OPTIONS",
    "CLASSPATH",
    "TCLLIBPATH",
    "TCL_LIBRARY",
    "TK_LIBRARY",
    "PHPRC",
    "PHP_INI_SCAN_DIR",
    "R_HOME",
    "R_LIBS",
    "R_LIBS_SITE",
    "R_LIBS_USER",
    "R_PROFILE",
    "R_PROFILE_USER",
    "R_ENVIRON",
    "R_ENVIRON_USER",
    "ELIXIR_ERL_OPTIONS",
    // libraries' module and configuration loaders
    "QT_PLUGIN_PATH",
    "QT_QPA_PLATFORM_PLUGIN_PATH",
    "QML_IMPORT_PATH",
    "QML2_IMPORT_PATH",
    "LIBGL_DRIVERS_PATH",
    "LIBVA_DRIVERS_PATH",
    "VDPAU_DRIVER_PATH",
    "__EGL_VENDOR_LIBRARY_DIRS",
    "__EGL_VENDOR_LIBRARY_FILENAMES",
    "__GLX_VENDOR_LIBRARY_NAME",
    "SASL_PATH",
    // shells (besides BASH_*)
    "ENV",
    "SHELLOPTS",
    "BASHOPTS",
    "IFS",
    "CDPATH",
    "PS4",
    "PROMPT_COMMAND",
    // programs run by name
    "SHELL",
    "EDITOR",
    "VISUAL",
    "PAGER",
    "MANPAGER",
    "BROWSER",
    "LESSOPEN",
    "LESSCLOSE",
    // never given to a plugin
    "PATH",
    "HOME",
];

/// Prefixes no declared name may start with: each is a family of variables that load or choose
/// code (a new version's name, `LUA_INIT_5_4`, is caught with the old one's, `LUA_INIT`).
pub const DENIED_ENV_PREFIXES: &[&str] = &[
    // every dynamic loader variable
    "LD_",
    // interpreters and runtimes: every variable of theirs
    "PYTHON",
    "PERL",
    "RUBY",
    "GEM_",
    "BUNDLE_",
    "NODE_",
    "NPM_CONFIG_",
    "JAVA_",
    "LUA_",
    "DOTNET_",
    "CORECLR_",
    "MONO_",
    "ERL_",
    "GUILE_",
    // libraries that load modules, engines or plugins named by the environment
    "OPENSSL_",
    "GIO_",
    "GTK",
    "GDK_PIXBUF_",
    "GST_",
    "VK_",
    "KRB5",
    "MAGICK_",
    // programs that run helpers named by the environment
    "GIT_",
    "BASH_",
];

/// Whether `name` is refused as a declared environment name: on [`DENIED_ENV_NAMES`] or starting
/// with one of [`DENIED_ENV_PREFIXES`].
pub fn env_name_denied(name: &str) -> bool {
    DENIED_ENV_NAMES.contains(&name) || DENIED_ENV_PREFIXES.iter().any(|p| name.starts_with(p))
}

/// An environment variable name an entry may declare: `[A-Z_][A-Z0-9_]*`, at most 64 bytes, not
/// refused by [`env_name_denied`].
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct EnvName(String);

/// Why a string is not a name an entry may declare.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BadEnvName {
    #[error("environment name {0:?} is not [A-Z_][A-Z0-9_]* of at most 64 bytes")]
    Syntax(String),
    #[error("environment name {0:?} changes which code runs or where it is found (a loader, the C library, an interpreter or runtime, a library's module loader, a shell, a program run by name), or is never given to a plugin; it cannot be declared")]
    Denied(String),
}

impl EnvName {
    pub fn new(name: &str) -> Result<EnvName, BadEnvName> {
        let b = name.as_bytes();
        let syntax = !b.is_empty()
            && b.len() <= 64
            && (b[0].is_ascii_uppercase() || b[0] == b'_')
            && b.iter()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == b'_');
        if !syntax {
            return Err(BadEnvName::Syntax(name.to_owned()));
        }
        if env_name_denied(name) {
            return Err(BadEnvName::Denied(name.to_owned()));
        }
        Ok(EnvName(name.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::str::FromStr for EnvName {
    type Err = BadEnvName;
    fn from_str(s: &str) -> Result<EnvName, BadEnvName> {
        EnvName::new(s)
    }
}

impl TryFrom<String> for EnvName {
    type Error = BadEnvName;
    fn try_from(s: String) -> Result<EnvName, BadEnvName> {
        EnvName::new(&s)
    }
}

impl From<EnvName> for String {
    fn from(n: EnvName) -> String {
        n.0
    }
}

impl fmt::Display for EnvName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The most runtime directories an entry may declare.
pub const MAX_RUNTIME_DIRS: usize = 16;

/// The filesystems that are the kernel's view of the host (processes, devices, the kernel's own
/// state), by `statfs` magic number (linux/magic.h), with their names: never a runtime, and a file
/// input on one is sensitive wherever it is mounted.
pub const KERNEL_FILESYSTEMS: &[(i64, &str)] = &[
    (0x9fa0, "proc"),
    (0x6265_6572, "sysfs"),
    (0x1cd1, "devpts"),
    (0x0027_e0eb, "cgroup"),
    (0x6367_7270, "cgroup2"),
    (0x6462_6720, "debugfs"),
    (0x7472_6163, "tracefs"),
    (0x7363_6673, "securityfs"),
    (0xf97c_ff8c, "selinuxfs"),
    (0x4341_5d53, "smackfs"),
    (0xcafe_4a11, "bpf"),
    (0x6265_6570, "configfs"),
    (0x1980_0202, "mqueue"),
    (0x6165_676c, "pstore"),
    (0xde5e_81e4, "efivarfs"),
    (0x6573_5543, "fusectl"),
    (0x4249_4e4d, "binfmt_misc"),
    (0x6e73_6673, "nsfs"),
    (0x0187, "autofs"),
];

/// The name of the kernel filesystem with `statfs` magic number `magic`, if it is one of
/// [`KERNEL_FILESYSTEMS`].
pub fn kernel_filesystem(magic: i64) -> Option<&'static str> {
    KERNEL_FILESYSTEMS
        .iter()
        .find(|(m, _)| *m == magic)
        .map(|(_, name)| *name)
}

/// A runtime directory of an entry: an absolute, normalized path of a directory other than `/`
/// (no `.` or `..` component, no repeated or trailing `/`, no control character), at most 255 bytes.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct RuntimeDir(String);

/// Why a path is not a runtime directory.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("runtime directory {0:?} is not an absolute, normalized path below / (e.g. /usr)")]
pub struct BadRuntimeDir(pub String);

impl RuntimeDir {
    pub fn new(path: &str) -> Result<RuntimeDir, BadRuntimeDir> {
        let bad = || BadRuntimeDir(path.to_owned());
        let rest = path.strip_prefix('/').ok_or_else(bad)?;
        if rest.is_empty()
            || path.len() > 255
            || path.chars().any(char::is_control)
            || rest
                .split('/')
                .any(|c| c.is_empty() || c == "." || c == "..")
        {
            return Err(bad());
        }
        Ok(RuntimeDir(path.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether `path` (absolute) is this directory or lies beneath it.
    pub fn contains(&self, path: &std::path::Path) -> bool {
        path.starts_with(&self.0)
    }
}

impl std::str::FromStr for RuntimeDir {
    type Err = BadRuntimeDir;
    fn from_str(s: &str) -> Result<RuntimeDir, BadRuntimeDir> {
        RuntimeDir::new(s)
    }
}

impl TryFrom<String> for RuntimeDir {
    type Error = BadRuntimeDir;
    fn try_from(s: String) -> Result<RuntimeDir, BadRuntimeDir> {
        RuntimeDir::new(&s)
    }
}

impl From<RuntimeDir> for String {
    fn from(d: RuntimeDir) -> String {
        d.0
    }
}

impl fmt::Display for RuntimeDir {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Who vouches for an entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Trust {
    /// Signed by a publisher in the root's trust store.
    Signed,
    /// Registered by the root's owner in a development root; no publisher signature.
    Local,
}

/// The containment an entry requires.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Containment {
    /// Environment filtering, deadlines and byte limits; no OS boundary.
    Audit,
    /// The Linux `dot-sandbox` runner.
    Process,
}

/// One declared input.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InputDecl {
    pub name: Name,
    pub kind: InputKind,
    pub required: bool,
}

/// What an input carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum InputKind {
    /// A string value passed in the request.
    String,
    /// A regular file copied into the stage's `in/` directory.
    File,
}

impl fmt::Display for Trust {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Trust::Signed => "signed",
            Trust::Local => "local",
        })
    }
}

impl fmt::Display for Containment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Containment::Audit => "audit",
            Containment::Process => "process",
        })
    }
}

impl fmt::Display for InputKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            InputKind::String => "string",
            InputKind::File => "file",
        })
    }
}

impl std::str::FromStr for Containment {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "audit" => Ok(Containment::Audit),
            "process" => Ok(Containment::Process),
            other => Err(format!(
                "unknown containment {other:?}; expected audit or process"
            )),
        }
    }
}

/// Why an entry's bytes are not a valid entry.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EntryError {
    #[error(transparent)]
    Decode(#[from] StrictError),
    #[error("field `{field}`: {message}")]
    Invalid {
        field: &'static str,
        value: String,
        message: String,
    },
}

impl EntryError {
    /// The field that failed, when one did.
    pub fn field(&self) -> Option<&str> {
        match self {
            EntryError::Decode(e) => e.field(),
            EntryError::Invalid { field, .. } => Some(field),
        }
    }

    /// The offending value, when known.
    pub fn value(&self) -> Option<&str> {
        match self {
            EntryError::Decode(_) => None,
            EntryError::Invalid { value, .. } => Some(value),
        }
    }
}

impl Entry {
    /// Parses and validates an entry file's bytes.
    pub fn parse(bytes: &[u8]) -> Result<Entry, EntryError> {
        let entry: Entry = strict::from_slice(bytes, strict::MAX_DOCUMENT)?;
        entry.validate()?;
        Ok(entry)
    }

    /// Serializes the entry as it is written to disk (pretty JSON, trailing newline).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut v = serde_json::to_vec_pretty(self).unwrap_or_default();
        v.push(b'\n');
        v
    }

    /// The parsed protocol requirement.
    pub fn protocol_req(&self) -> Result<semver::VersionReq, EntryError> {
        semver::VersionReq::parse(&self.protocol).map_err(|e| EntryError::Invalid {
            field: "protocol",
            value: self.protocol.clone(),
            message: format!("not a semver requirement: {e}"),
        })
    }

    /// Checks what the types alone cannot: schema, a reserved plugin name, trust/publisher
    /// agreement, protocol range, duplicate inputs, runtime directories only for `process`, the
    /// range of each declared limit.
    pub fn validate(&self) -> Result<(), EntryError> {
        if RESERVED_PLUGIN_NAMES.contains(&self.name.as_str()) {
            return Err(EntryError::Invalid {
                field: "name",
                value: self.name.to_string(),
                message: format!(
                    "{:?} is reserved (a dot-launch subcommand); no plugin can be registered under it",
                    self.name.as_str()
                ),
            });
        }
        if self.schema != ENTRY_SCHEMA {
            return Err(EntryError::Invalid {
                field: "schema",
                value: self.schema.to_string(),
                message: format!(
                    "unsupported schema {}; this version reads {ENTRY_SCHEMA}",
                    self.schema
                ),
            });
        }
        match (self.trust, &self.publisher) {
            (Trust::Signed, None) => {
                return Err(EntryError::Invalid {
                    field: "publisher",
                    value: String::new(),
                    message: "a signed entry must name its publisher".to_owned(),
                })
            }
            (Trust::Local, Some(p)) => {
                return Err(EntryError::Invalid {
                    field: "publisher",
                    value: p.to_string(),
                    message: "a local entry has no publisher".to_owned(),
                })
            }
            _ => {}
        }
        self.protocol_req()?;
        let mut seen = BTreeSet::new();
        for input in &self.inputs {
            if !seen.insert(input.name.as_str()) {
                return Err(EntryError::Invalid {
                    field: "inputs",
                    value: input.name.to_string(),
                    message: format!("input {:?} is declared twice", input.name.as_str()),
                });
            }
        }
        if !self.runtime.is_empty() && self.containment != Containment::Process {
            return Err(EntryError::Invalid {
                field: "runtime",
                value: self.runtime[0].to_string(),
                message: "a runtime is for containment process: at audit the plugin sees the whole host already".to_owned(),
            });
        }
        let mut dirs = BTreeSet::new();
        for d in &self.runtime {
            if !dirs.insert(d.as_str()) {
                return Err(EntryError::Invalid {
                    field: "runtime",
                    value: d.to_string(),
                    message: format!("runtime directory {d} is declared twice"),
                });
            }
        }
        if self.runtime.len() > MAX_RUNTIME_DIRS {
            return Err(EntryError::Invalid {
                field: "runtime",
                value: self.runtime.len().to_string(),
                message: format!("at most {MAX_RUNTIME_DIRS} runtime directories"),
            });
        }
        let mut names = BTreeSet::new();
        for n in &self.env {
            if !names.insert(n.as_str()) {
                return Err(EntryError::Invalid {
                    field: "env",
                    value: n.to_string(),
                    message: format!("environment name {n} is declared twice"),
                });
            }
        }
        if self.env.len() > MAX_ENV_NAMES {
            return Err(EntryError::Invalid {
                field: "env",
                value: self.env.len().to_string(),
                message: format!("at most {MAX_ENV_NAMES} environment names"),
            });
        }
        if let Some(Err(e)) = self.limits.as_ref().map(DeclaredLimits::validate) {
            return Err(EntryError::Invalid {
                field: e.limit.path,
                value: e.value.to_string(),
                message: format!(
                    "{} is outside the accepted range {}..={}",
                    e.value, e.limit.min, e.limit.max
                ),
            });
        }
        Ok(())
    }

    /// The limits the entry declares (the `standard` preset when it declares none).
    pub fn run_limits(&self) -> Limits {
        Limits::of(self.limits.as_ref())
    }

    /// The declared input called `name`.
    pub fn input(&self, name: &str) -> Option<&InputDecl> {
        self.inputs.iter().find(|i| i.name.as_str() == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kernels_filesystems_are_known_by_their_magic_and_others_are_not() {
        assert_eq!(kernel_filesystem(0x9fa0), Some("proc"));
        assert_eq!(kernel_filesystem(0x6367_7270), Some("cgroup2"));
        // tmpfs and ext4 hold files of their own.
        assert_eq!(kernel_filesystem(0x0102_1994), None);
        assert_eq!(kernel_filesystem(0xef53), None);
        let mut magics: Vec<i64> = KERNEL_FILESYSTEMS.iter().map(|(m, _)| *m).collect();
        magics.sort_unstable();
        magics.dedup();
        assert_eq!(
            magics.len(),
            KERNEL_FILESYSTEMS.len(),
            "one row per filesystem"
        );
    }

    fn sample() -> String {
        format!(
            r#"{{"schema":1,"name":"hello","version":"1.2.0","trust":"signed","publisher":"acme",
            "sha256":"{}","size":10,"protocol":">=1.0, <2",
            "inputs":[{{"name":"name","kind":"string","required":false}}],"containment":"process"}}"#,
            "ab".repeat(32)
        )
    }

    /// The sample with `"limits": LIMITS`.
    fn with_limits(limits: &str) -> String {
        sample().replace(
            r#""containment":"process""#,
            &format!(r#""containment":"process","limits":{limits}"#),
        )
    }

    #[test]
    fn environment_names_are_upper_case_words_off_the_deny_list() {
        for ok in ["RUST_BACKTRACE", "_X", "A1", "RUST_LOG"] {
            assert_eq!(EnvName::new(ok).map(|n| n.to_string()), Ok(ok.to_owned()));
        }
        for bad in [
            "",
            "1A",
            "rust_log",
            "A-B",
            "A=B",
            "A B",
            "É",
            &"A".repeat(65),
        ] {
            assert_eq!(EnvName::new(bad), Err(BadEnvName::Syntax(bad.to_owned())));
        }
        for denied in [
            "LD_PRELOAD",
            "LD_LIBRARY_PATH",
            "LD_ANYTHING",
            "PYTHONPATH",
            "PATH",
            "HOME",
            "BASH_ENV",
            "ENV",
            "GCONV_PATH",
            "NODE_OPTIONS",
            "PERL5LIB",
            "RUBYOPT",
            "PYTHONHOME",
            "PYTHONSTARTUP",
            // versioned and family names: refused by their prefix
            "LUA_INIT",
            "LUA_INIT_5_4",
            "LUA_PATH_5_4",
            "LUA_CPATH_5_3",
            "PYTHONWARNINGS",
            "PERL5OPT",
            "OPENSSL_CONF",
            "OPENSSL_MODULES",
            "CLASSPATH",
            "GEM_PATH",
            "GIO_EXTRA_MODULES",
            "GTK_MODULES",
            "GTK3_MODULES",
            "QT_PLUGIN_PATH",
            "GST_PLUGIN_PATH",
            "GST_PLUGIN_PATH_1_0",
            "JAVA_TOOL_OPTIONS",
            "DOTNET_STARTUP_HOOKS",
            "GIT_SSH_COMMAND",
            "BASH_LOADABLES_PATH",
            "KRB5_CONFIG",
            "VK_ICD_FILENAMES",
        ] {
            assert_eq!(
                EnvName::new(denied),
                Err(BadEnvName::Denied(denied.to_owned()))
            );
        }
        // A name merely sharing letters with a family stays a name.
        for ok in ["APP_JAVA", "LUAX", "QT_QPA_PLATFORM", "TOKEN_GIT"] {
            assert!(EnvName::new(ok).is_ok(), "{ok}");
        }
        let with_env = |env: &str| {
            sample().replace(
                r#""containment":"process""#,
                &format!(r#""containment":"process","env":{env}"#),
            )
        };
        let e = Entry::parse(with_env(r#"["RUST_BACKTRACE"]"#).as_bytes()).expect("valid");
        assert_eq!(e.env, vec![EnvName::new("RUST_BACKTRACE").expect("name")]);
        assert_eq!(Entry::parse(&e.to_bytes()), Ok(e));
        assert_eq!(
            Entry::parse(with_env(r#"["A","A"]"#).as_bytes())
                .map_err(|e| e.field().map(str::to_owned)),
            Err(Some("env".to_owned()))
        );
        assert!(Entry::parse(with_env(r#"["LD_PRELOAD"]"#).as_bytes()).is_err());
        // An entry signed before a name was refused is refused when it is read, naming the field.
        let old = Entry::parse(with_env(r#"["RUST_LOG","LUA_INIT_5_4"]"#).as_bytes());
        assert_eq!(
            old.as_ref().map_err(|e| e.field().map(str::to_owned)),
            Err(Some("env[1]".to_owned()))
        );
        assert!(
            old.unwrap_err().to_string().contains("LUA_INIT_5_4"),
            "the message names the variable"
        );
        // Without names the entry is byte for byte what it was.
        let plain = Entry::parse(sample().as_bytes()).expect("valid");
        assert!(!String::from_utf8_lossy(&plain.to_bytes()).contains("env"));
    }

    #[test]
    fn an_entry_without_limits_is_unchanged_and_gets_the_standard_preset() {
        let e = Entry::parse(sample().as_bytes()).expect("valid");
        assert_eq!(e.limits, None);
        assert_eq!(e.run_limits(), Limits::STANDARD);
        assert!(!String::from_utf8_lossy(&e.to_bytes()).contains("limits"));
    }

    #[test]
    fn parses_declared_limits_a_preset_and_fields_over_it() {
        use crate::limits::Preset;
        let cases = [
            (r#"{"preset":"strict"}"#, Limits::STRICT),
            (r#"{"preset":"standard"}"#, Limits::STANDARD),
            (r#"{}"#, Limits::STANDARD),
            (
                r#"{"preset":"strict","cpu_seconds":60,"deadline_ms":90000}"#,
                Limits {
                    cpu_seconds: Some(60),
                    deadline_ms: 90_000,
                    ..Limits::STRICT
                },
            ),
            (
                r#"{"memory_bytes":2147483648,"tasks":4,"descriptors":16,"outputs":0,"output_bytes":1}"#,
                Limits {
                    memory_bytes: 2 << 30,
                    tasks: 4,
                    descriptors: 16,
                    outputs: 0,
                    output_bytes: 1,
                    ..Limits::STANDARD
                },
            ),
        ];
        for (json, limits) in cases {
            let e = Entry::parse(with_limits(json).as_bytes()).expect(json);
            assert_eq!(e.run_limits(), limits, "{json}");
            assert_eq!(
                Entry::parse(&e.to_bytes()).as_ref(),
                Ok(&e),
                "round trip {json}"
            );
        }
        let strict = Entry::parse(with_limits(r#"{"preset":"strict"}"#).as_bytes()).expect("valid");
        assert_eq!(strict.limits.and_then(|l| l.preset), Some(Preset::Strict));
    }

    #[test]
    fn parses_a_valid_entry() {
        let e = Entry::parse(sample().as_bytes()).expect("valid");
        assert_eq!(e.name.as_str(), "hello");
        assert_eq!(e.containment, Containment::Process);
        assert_eq!(Entry::parse(&e.to_bytes()), Ok(e));
    }

    #[test]
    fn names_the_failing_field() {
        let cases = [
            (sample().replace(r#""size":10"#, r#""size":"10""#), "size"),
            (sample().replace(r#""size":10,"#, ""), "size"),
            (sample().replace(r#""size":10"#, r#""size":10,"extra":true"#), "extra"),
            (sample().replace("process", "container"), "containment"),
            (sample().replace(">=1.0, <2", "one or two"), "protocol"),
            (sample().replace(r#""name":"hello""#, r#""name":"../x""#), "name"),
            (sample().replace(r#""name":"hello""#, r#""name":"recover""#), "name"),
            (sample().replace(r#""publisher":"acme","#, ""), "publisher"),
            (sample().replace(r#""schema":1"#, r#""schema":2"#), "schema"),
            (with_limits(r#"{"preset":"medium"}"#), "limits.preset"),
            (with_limits(r#"{"preset":null}"#), "limits.preset"),
            (with_limits(r#"{"cpu_seconds":null}"#), "limits.cpu_seconds"),
            (with_limits(r#"{"cpu_seconds":-1}"#), "limits.cpu_seconds"),
            (with_limits(r#"{"cpu_seconds":"60"}"#), "limits.cpu_seconds"),
            (with_limits(r#"{"cpu_seconds":0}"#), "limits.cpu_seconds"),
            (with_limits(r#"{"memory_bytes":1024}"#), "limits.memory_bytes"),
            (with_limits(r#"{"tasks":0}"#), "limits.tasks"),
            (with_limits(r#"{"descriptors":15}"#), "limits.descriptors"),
            (with_limits(r#"{"outputs":65537}"#), "limits.outputs"),
            (with_limits(r#"{"output_bytes":0}"#), "limits.output_bytes"),
            (with_limits(r#"{"deadline_ms":0}"#), "limits.deadline_ms"),
            (with_limits(r#"{"stdout_bytes":1}"#), "limits.stdout_bytes"),
            (with_limits(r#""strict""#), "limits"),
            (with_limits("null"), "limits"),
            (
                sample().replace(
                    r#"{"name":"name","kind":"string","required":false}"#,
                    r#"{"name":"a","kind":"string","required":false},{"name":"a","kind":"file","required":true}"#,
                ),
                "inputs",
            ),
        ];
        for (json, field) in cases {
            let err = Entry::parse(json.as_bytes()).expect_err(field);
            assert_eq!(err.field(), Some(field), "{err}: {json}");
        }
    }
}
