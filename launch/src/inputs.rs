//! Inputs: checked against the entry's declarations before anything is created; file inputs are
//! opened (no symlink, regular, no setuid/setgid) now and copied into the stage later from the very
//! descriptors opened here. A file input is read with dot-launch's own rights (as root: any file),
//! so the file each one resolves to (the opened descriptor's path) is matched against the sensitive
//! list — [`SENSITIVE_PATHS`] and the root policy's `sensitive_inputs` — and refused unless the
//! invoker names its key with `--allow-sensitive-input` (docs/trust.md "Sensitive inputs").
//!
//! That match means something only if the resolved path is the file in this process's own mount
//! namespace, so each file input is:
//! 1. opened without passing a magic link of `/proc` (`openat2` with `RESOLVE_NO_MAGICLINKS`):
//!    `/proc/PID/root/…`, `/proc/PID/cwd/…` or `/proc/PID/fd/N` may lead into another mount
//!    namespace, where a path names another file than here (`input-file-unsafe`). A kernel
//!    without `openat2` (before 5.6) opens it as before, and step 2 alone keeps the rule;
//! 2. resolved (`/proc/self/fd/N`), and that path walked again one component at a time without
//!    following any link must reach the very file opened (device and inode), else
//!    `input-file-unsafe`: renamed, deleted, or on a mount this namespace does not show there;
//! 3. matched: a file of one of the kernel's own filesystems (`proto::entry::KERNEL_FILESYSTEMS`:
//!    proc, sysfs, cgroup, debugfs, securityfs, efivarfs, …) is sensitive wherever it is mounted
//!    (`/proc/**`, `/sys/**`, or the filesystem's name), any other by its resolved path.

use crate::error::LaunchError;
use proto::protocol::{Request, PROTOCOL_VERSION};
use proto::runner::EnvVar;
use proto::{Entry, InputKind};
use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Inputs as given on the command line.
#[derive(Debug, Default)]
pub struct GivenInputs {
    /// `--input KEY=VALUE`.
    pub strings: Vec<String>,
    /// `--input-file KEY=PATH` (the path any bytes).
    pub files: Vec<OsString>,
    /// `--request FILE|-`: the request's string inputs.
    pub request: Option<RequestSource>,
    /// `--allow-sensitive-input KEY`: file inputs read even though their path is sensitive.
    pub allow_sensitive: Vec<String>,
    /// `--env NAME=VALUE`: the plugin's environment, for names the entry declares.
    pub env: Vec<String>,
}

/// Paths no file input reads unless the invoker says so by key (`--allow-sensitive-input`):
/// shadow and sudoers files, host and user keys, credentials, the kernel's views of processes and
/// devices. Matched against the path the opened file resolves to; `*` matches within one path
/// component, `**` across components. The root policy's `sensitive_inputs` add to it.
pub const SENSITIVE_PATHS: &[&str] = &[
    "/etc/shadow*",
    "/etc/gshadow*",
    "/etc/security/opasswd",
    "/etc/sudoers*",
    "/etc/sudoers.d/**",
    "/etc/ssh/ssh_host_*",
    "/etc/ssl/private/**",
    "/etc/pki/tls/private/**",
    "/etc/letsencrypt/**/privkey*.pem",
    "/etc/letsencrypt/keys/**",
    "/etc/krb5.keytab",
    "/etc/wireguard/**",
    "/etc/ipsec.secrets",
    "/etc/ppp/*-secrets",
    "/etc/NetworkManager/system-connections/**",
    "/proc/**",
    "/sys/**",
    "/dev/**",
    "**/.ssh/**",
    "**/.gnupg/**",
    "**/.minisign/**",
    "**/.aws/**",
    "**/.azure/**",
    "**/.config/gcloud/**",
    "**/.kube/config",
    "**/.docker/config.json",
    "**/.netrc",
    "**/.git-credentials",
    "**/.pgpass",
    "**/.my.cnf",
    "**/id_rsa",
    "**/id_dsa",
    "**/id_ecdsa",
    "**/id_ed25519",
    "**/*.key",
    "**/*.p12",
    "**/*.pfx",
];

/// Whether the path glob `pattern` matches `path` (`*`: any run within a component; `**`: any
/// run, `/` included).
pub fn path_glob_matches(pattern: &str, path: &[u8]) -> bool {
    fn go(p: &[u8], s: &[u8]) -> bool {
        match p {
            [] => s.is_empty(),
            [b'*', b'*', rest @ ..] => (0..=s.len()).any(|i| go(rest, &s[i..])),
            [b'*', rest @ ..] => (0..=s.len())
                .take_while(|&i| i == 0 || s[i - 1] != b'/')
                .any(|i| go(rest, &s[i..])),
            [c, rest @ ..] => s
                .split_first()
                .is_some_and(|(d, sr)| c == d && go(rest, sr)),
        }
    }
    go(pattern.as_bytes(), path)
}

/// The first pattern of the built-in list, then of `extra`, that matches `path`.
pub fn sensitive_match<'a>(path: &Path, extra: &'a [String]) -> Option<&'a str>
where
    'static: 'a,
{
    let bytes = path.as_os_str().as_bytes();
    SENSITIVE_PATHS
        .iter()
        .copied()
        .chain(extra.iter().map(String::as_str))
        .find(|p| path_glob_matches(p, bytes))
}

/// Why a file input could not be opened as one.
#[derive(Debug)]
enum OpenInput {
    /// What `sys::fs::open_regular` refuses: a link, not a regular file, setuid/setgid, I/O.
    Open(sys::fs::OpenError),
    /// The path passes through a magic link of `/proc` (or more links than the kernel follows).
    MagicLink,
}

/// Opens a file input as `sys::fs::open_regular` does (`O_NOFOLLOW|O_NONBLOCK|O_CLOEXEC`, a
/// regular file without setuid/setgid), but never through a magic link (step 1 of the module
/// documentation).
fn open_input(path: &Path) -> Result<File, OpenInput> {
    use nix::fcntl::{openat2, OFlag, OpenHow, ResolveFlag, AT_FDCWD};
    let how = OpenHow::new()
        .flags(OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC)
        .resolve(ResolveFlag::RESOLVE_NO_MAGICLINKS);
    let file = match openat2(AT_FDCWD, path, how) {
        Ok(fd) => File::from(fd),
        // No openat2 here (before Linux 5.6): the resolved path's own check (step 2) still holds.
        Err(nix::errno::Errno::ENOSYS) => {
            return sys::fs::open_regular(path)
                .map(|(f, _)| f)
                .map_err(OpenInput::Open)
        }
        // ELOOP: the last component is a link (O_NOFOLLOW), or a magic link was on the way.
        Err(nix::errno::Errno::ELOOP) => {
            return Err(match std::fs::symlink_metadata(path) {
                Ok(m) if m.file_type().is_symlink() => OpenInput::Open(sys::fs::OpenError::Symlink),
                _ => OpenInput::MagicLink,
            })
        }
        Err(e) => return Err(OpenInput::Open(sys::fs::OpenError::Io(e.into()))),
    };
    let meta = file
        .metadata()
        .map_err(|e| OpenInput::Open(sys::fs::OpenError::Io(e)))?;
    sys::fs::check_regular(&meta).map_err(OpenInput::Open)?;
    Ok(file)
}

/// Whether `resolved`, walked from `/` one component at a time without following any link, is
/// the file `file` (step 2 of the module documentation).
fn resolves_to(resolved: &Path, file: &File) -> bool {
    use nix::fcntl::AtFlags;
    use std::os::unix::fs::MetadataExt;
    let (Some(parent), Some(name)) = (resolved.parent(), resolved.file_name()) else {
        return false;
    };
    let Ok(dir) = sys::fs::open_dir_nofollow(parent) else {
        return false;
    };
    let Ok(st) = nix::sys::stat::fstatat(&dir, name, AtFlags::AT_SYMLINK_NOFOLLOW) else {
        return false;
    };
    file.metadata()
        .is_ok_and(|m| (m.dev(), m.ino()) == (st.st_dev, st.st_ino))
}

/// The sensitive pattern a file of one of the kernel's filesystems (`proto::entry::
/// KERNEL_FILESYSTEMS`) counts as, wherever it is mounted (step 3 of the module documentation):
/// `/proc/**` and `/sys/**` for proc and sysfs, the filesystem's name for the others.
fn kernel_view(file: &File) -> Option<&'static str> {
    let fs = nix::sys::statfs::fstatfs(file).ok()?.filesystem_type();
    match proto::entry::kernel_filesystem(fs.0)? {
        "proc" => Some("/proc/**"),
        "sysfs" => Some("/sys/**"),
        other => Some(other),
    }
}

/// Where a `--request` document comes from.
#[derive(Debug)]
pub enum RequestSource {
    Stdin(Vec<u8>),
    File(PathBuf),
}

/// Inputs checked against the entry.
#[derive(Debug)]
pub struct Inputs {
    pub strings: BTreeMap<String, String>,
    pub files: Vec<FileInput>,
    /// The plugin's whole environment, in the order given.
    pub env: Vec<EnvVar>,
}

/// An opened file input.
#[derive(Debug)]
pub struct FileInput {
    pub key: String,
    pub path: PathBuf,
    /// What the opened descriptor resolves to (`/proc/self/fd/N`).
    pub resolved: PathBuf,
    /// The sensitive-path pattern it matched, when `--allow-sensitive-input` allowed it.
    pub sensitive: Option<String>,
    pub file: File,
}

/// `KEY=VALUE`: a key that is not empty and holds no control or formatting character (keys are
/// echoed in messages and the audit log; declared names never hold one).
fn split(arg: &str) -> Result<(String, String), LaunchError> {
    let syntax = |why| LaunchError::InputSyntax {
        arg: arg.to_owned(),
        why,
    };
    match arg.split_once('=') {
        None => Err(syntax("there is no =")),
        Some(("", _)) => Err(syntax("the key is empty")),
        Some((k, _)) if crate::names::unsafe_char(k).is_some() => {
            Err(syntax("the key holds a control or formatting character"))
        }
        Some((k, v)) => Ok((k.to_owned(), v.to_owned())),
    }
}

/// `KEY=PATH` of `--input-file`: the key is text, the path any bytes.
fn split_file(arg: &OsStr) -> Result<(String, PathBuf), LaunchError> {
    let bytes = arg.as_bytes();
    let shown = || arg.to_string_lossy().into_owned();
    match bytes.iter().position(|&b| b == b'=') {
        Some(i) if i > 0 => match std::str::from_utf8(&bytes[..i]) {
            Ok(key) if crate::names::unsafe_char(key).is_some() => Err(LaunchError::InputSyntax {
                arg: shown(),
                why: "the key holds a control or formatting character",
            }),
            Ok(key) => Ok((
                key.to_owned(),
                PathBuf::from(OsStr::from_bytes(&bytes[i + 1..])),
            )),
            Err(_) => Err(LaunchError::Usage(format!(
                "--input-file {:?}: the key is not valid UTF-8",
                shown()
            ))),
        },
        Some(_) => Err(LaunchError::InputSyntax {
            arg: shown(),
            why: "the key is empty",
        }),
        None => Err(LaunchError::InputSyntax {
            arg: shown(),
            why: "there is no =",
        }),
    }
}

/// Largest `--request` document read.
const MAX_REQUEST: usize = 1 << 20;

fn request_inputs(
    src: &RequestSource,
    entry: &Entry,
) -> Result<BTreeMap<String, String>, LaunchError> {
    let (label, bytes) = match src {
        RequestSource::Stdin(b) => ("-".to_owned(), b.clone()),
        RequestSource::File(p) => {
            let (b, _) = sys::fs::read_regular(p, MAX_REQUEST as u64 + 1).map_err(|e| {
                LaunchError::Request {
                    path: p.display().to_string(),
                    why: e.to_string(),
                }
            })?;
            (p.display().to_string(), b)
        }
    };
    let req: Request =
        proto::strict::from_slice(&bytes, MAX_REQUEST).map_err(|e| LaunchError::Request {
            path: label.clone(),
            why: e.to_string(),
        })?;
    if req.plugin != entry.name {
        return Err(LaunchError::Request {
            path: label,
            why: format!(
                "names plugin {:?}, not {:?}",
                req.plugin.as_str(),
                entry.name.as_str()
            ),
        });
    }
    if req.protocol != PROTOCOL_VERSION {
        return Err(LaunchError::Request {
            path: label,
            why: format!("protocol {:?} is not {PROTOCOL_VERSION}", req.protocol),
        });
    }
    Ok(req.inputs)
}

/// Checks the given inputs against `entry` and opens file inputs; a file input whose path is
/// sensitive (the built-in list and `sensitive`, the policy's) is refused unless its key is in
/// `given.allow_sensitive`.
pub fn check(
    given: &GivenInputs,
    entry: &Entry,
    sensitive: &[String],
) -> Result<Inputs, LaunchError> {
    let mut strings = BTreeMap::new();
    let mut seen = std::collections::BTreeSet::new();
    let mut add_string = |key: String, value: String| -> Result<(), LaunchError> {
        let decl = entry
            .input(&key)
            .ok_or_else(|| LaunchError::InputUndeclared { key: key.clone() })?;
        if decl.kind != InputKind::String {
            return Err(LaunchError::InputKind {
                key,
                expected: decl.kind,
                flag: "--input-file KEY=PATH",
            });
        }
        if strings.insert(key.clone(), value).is_some() {
            return Err(LaunchError::InputTwice { key });
        }
        Ok(())
    };
    if let Some(src) = &given.request {
        for (k, v) in request_inputs(src, entry)? {
            add_string(k, v)?;
        }
    }
    for arg in &given.strings {
        let (k, v) = split(arg)?;
        add_string(k, v)?;
    }
    let file_keys: Vec<String> = given
        .files
        .iter()
        .filter_map(|a| split_file(a).ok().map(|(k, _)| k))
        .collect();
    if let Some(k) = given
        .allow_sensitive
        .iter()
        .find(|k| !file_keys.contains(k))
    {
        return Err(LaunchError::Usage(format!(
            "--allow-sensitive-input {k:?} names no --input-file of this launch"
        )));
    }
    let mut files = Vec::new();
    for arg in &given.files {
        let (key, path) = split_file(arg)?;
        let decl = entry
            .input(&key)
            .ok_or_else(|| LaunchError::InputUndeclared { key: key.clone() })?;
        if decl.kind != InputKind::File {
            return Err(LaunchError::InputKind {
                key,
                expected: decl.kind,
                flag: "--input KEY=VALUE",
            });
        }
        if strings.contains_key(&key) || !seen.insert(key.clone()) {
            return Err(LaunchError::InputTwice { key });
        }
        let unsafe_input = |why: String| LaunchError::InputFileUnsafe {
            key: key.clone(),
            path: path.clone(),
            why,
        };
        let file = open_input(&path).map_err(|e| match e {
            OpenInput::Open(sys::fs::OpenError::Io(e))
                if e.kind() == std::io::ErrorKind::NotFound =>
            {
                LaunchError::Verify(verify::VerifyError::FileMissing { path: path.clone() })
            }
            OpenInput::Open(e) => unsafe_input(e.to_string()),
            OpenInput::MagicLink => unsafe_input(
                "its path passes through a magic link of /proc (/proc/PID/root, /proc/PID/cwd, \
                 /proc/PID/fd/N, /dev/stdin …), which may lead into another mount namespace, \
                 where the path names another file than here (or through more symbolic links \
                 than the kernel follows); give the file's own path"
                    .to_owned(),
            ),
        })?;
        let resolved = std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd()))
            .map_err(|e| LaunchError::io("resolving a file input", &path, e))?;
        if !resolves_to(&resolved, &file) {
            return Err(unsafe_input(format!(
                "the file it opened is not what its resolved path {} names in this mount \
                 namespace (renamed or deleted meanwhile, or on a mount this namespace does not \
                 show there), so whether it is sensitive cannot be told",
                resolved.display()
            )));
        }
        let kernel: Option<&str> = kernel_view(&file);
        let matched = kernel
            .or_else(|| sensitive_match(&resolved, sensitive))
            .map(str::to_owned);
        if let Some(pattern) = &matched {
            if !given.allow_sensitive.contains(&key) {
                return Err(LaunchError::InputFileSensitive(Box::new(
                    crate::error::SensitiveInput {
                        key,
                        path,
                        resolved,
                        pattern: pattern.clone(),
                        uid: nix::unistd::geteuid().as_raw(),
                        next: None,
                    },
                )));
            }
        }
        files.push(FileInput {
            key,
            path,
            resolved,
            sensitive: matched,
            file,
        });
    }
    for decl in &entry.inputs {
        let present = strings.contains_key(decl.name.as_str()) || seen.contains(decl.name.as_str());
        if decl.required && !present {
            return Err(LaunchError::InputMissing {
                key: decl.name.to_string(),
            });
        }
    }
    let env = check_env(&given.env, entry)?;
    Ok(Inputs {
        strings,
        files,
        env,
    })
}

/// The plugin's environment: each `NAME=VALUE` of `given` for a name `entry` declares, once.
/// A value is never echoed (it may be a secret): errors name the name only.
pub fn check_env(given: &[String], entry: &Entry) -> Result<Vec<EnvVar>, LaunchError> {
    let mut env: Vec<EnvVar> = Vec::with_capacity(given.len());
    for arg in given {
        // Shown in errors: the name part only, with any control or formatting character made
        // visible.
        let shown = arg.split_once('=').map_or(arg.as_str(), |(n, _)| n);
        let shown = shown.escape_debug().to_string();
        let var = EnvVar::parse(arg).map_err(|e| LaunchError::EnvInvalid {
            name: shown.clone(),
            why: e.to_string(),
        })?;
        if !entry.env.contains(&var.name) {
            let declared = match entry.env.len() {
                0 => "none".to_owned(),
                _ => entry
                    .env
                    .iter()
                    .map(|n| n.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            };
            return Err(LaunchError::EnvUndeclared {
                name: shown,
                declared,
            });
        }
        if env.iter().any(|v| v.name == var.name) {
            return Err(LaunchError::EnvInvalid {
                name: shown,
                why: "given twice".to_owned(),
            });
        }
        env.push(var);
    }
    Ok(env)
}

impl Inputs {
    /// The file inputs' total size in bytes and their count (a `process` stage makes room for
    /// them).
    pub fn totals(&self) -> (u64, u64) {
        let bytes = self
            .files
            .iter()
            .map(|f| f.file.metadata().map(|m| m.len()).unwrap_or(0))
            .sum();
        (bytes, self.files.len() as u64)
    }

    /// The request the plugin reads on stdin.
    pub fn request(&self, entry: &Entry) -> Request {
        let mut inputs = self.strings.clone();
        for f in &self.files {
            inputs.insert(f.key.clone(), format!("in/{}", f.key));
        }
        Request {
            protocol: PROTOCOL_VERSION.to_owned(),
            plugin: entry.name.clone(),
            inputs,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_input_is_opened_only_by_a_path_of_this_mount_namespace() {
        let dir = testkit::TempDir::new();
        let plain = dir.join("plain.txt");
        std::fs::write(&plain, b"text").expect("write");
        let file = open_input(&plain).expect("a plain file opens");
        let resolved =
            std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())).expect("resolved");
        assert!(resolves_to(&resolved, &file));
        // The same file through a magic link of /proc is refused.
        let magic = Path::new("/proc/self/root").join(plain.strip_prefix("/").expect("absolute"));
        assert!(matches!(open_input(&magic), Err(OpenInput::MagicLink)));
        // A plain symbolic link on the way is followed; a last component that is one is not.
        let link = dir.join("link");
        std::os::unix::fs::symlink(dir.path(), &link).expect("link");
        assert!(open_input(&link.join("plain.txt")).is_ok());
        assert!(matches!(
            open_input(&link),
            Err(OpenInput::Open(sys::fs::OpenError::Symlink))
        ));
        // A path that names another file than the one opened does not resolve to it.
        let other = dir.join("other.txt");
        std::fs::write(&other, b"text").expect("write");
        assert!(!resolves_to(&other, &file));
        assert!(!resolves_to(&dir.join("gone"), &file));
        // Walked without following links: a path through a link is not the file's own.
        assert!(!resolves_to(&link.join("plain.txt"), &file));
        // The kernel's views are sensitive by their filesystem, wherever they are mounted.
        let status = open_input(Path::new("/proc/self/status")).expect("proc file");
        assert_eq!(kernel_view(&status), Some("/proc/**"));
        assert_eq!(kernel_view(&file), None);
    }

    #[test]
    fn sensitive_paths_match_after_resolution_and_globs_stay_in_their_component() {
        let hit = |p: &str| sensitive_match(Path::new(p), &[]);
        assert_eq!(hit("/etc/shadow"), Some("/etc/shadow*"));
        assert_eq!(hit("/etc/shadow-"), Some("/etc/shadow*"));
        assert_eq!(hit("/etc/sudoers.bak"), Some("/etc/sudoers*"));
        assert_eq!(hit("/etc/sudoers.d/90-cloud"), Some("/etc/sudoers.d/**"));
        assert_eq!(hit("/root/.ssh/id_rsa"), Some("**/.ssh/**"));
        assert_eq!(hit("/home/a/.aws/credentials"), Some("**/.aws/**"));
        assert_eq!(
            hit("/etc/ssh/ssh_host_ed25519_key"),
            Some("/etc/ssh/ssh_host_*")
        );
        assert_eq!(hit("/proc/1/environ"), Some("/proc/**"));
        assert_eq!(hit("/srv/x/site.key"), Some("**/*.key"));
        assert_eq!(
            hit("/etc/letsencrypt/live/example.org/privkey.pem"),
            Some("/etc/letsencrypt/**/privkey*.pem")
        );
        assert_eq!(
            hit("/etc/letsencrypt/archive/example.org/privkey3.pem"),
            Some("/etc/letsencrypt/**/privkey*.pem")
        );
        assert_eq!(hit("/etc/letsencrypt/live/example.org/fullchain.pem"), None);
        assert_eq!(
            hit("/etc/ssl/private/site.key"),
            Some("/etc/ssl/private/**")
        );
        assert_eq!(
            hit("/etc/pki/tls/private/localhost.key"),
            Some("/etc/pki/tls/private/**")
        );
        assert_eq!(hit("/etc/wireguard/wg0.conf"), Some("/etc/wireguard/**"));
        assert_eq!(hit("/etc/hostname"), None);
        assert_eq!(hit("/etc/passwd"), None);
        assert_eq!(hit("/tmp/keys/x"), None);
        assert!(!path_glob_matches("/etc/*", b"/etc/a/b"));
        assert!(path_glob_matches("/etc/*", b"/etc/a"));
        let extra = vec!["/srv/secret/**".to_owned()];
        assert_eq!(
            sensitive_match(Path::new("/srv/secret/a/b"), &extra),
            Some("/srv/secret/**")
        );
    }
}
