//! Test helpers shared by dot's test suites, so no test file copies another: unique temp
//! directories, tree snapshots ("nothing was written"), real minisign keys and signatures, decoding
//! a tool's stdout and error line, fixture executables, entries and platform roots, and locating the
//! workspace's binaries and static fixtures.
//!
//! This crate is a dev-dependency only. Its helpers panic with a clear message on any failure: a
//! test that cannot set up its fixture must fail, never skip.
#![forbid(unsafe_code)]
#![allow(clippy::unwrap_used)]

pub mod journal;
pub mod mount;
use proto::layout::{Root, ROOT_DIRS};
use proto::{Containment, Entry, InputDecl, InputKind, Name, Sha256, Trust};
use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

// ---------------------------------------------------------------------------------------------
// Temp directories and snapshots
// ---------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------
// Real minisign keys and signatures
// ---------------------------------------------------------------------------------------------

/// A minisign key pair made by the `minisign` crate (the same key format `minisign -G` makes).
#[derive(Debug, Clone)]
pub struct KeyPair {
    inner: minisign::KeyPair,
}

impl KeyPair {
    /// A new random, unencrypted key pair.
    pub fn generate() -> KeyPair {
        KeyPair {
            inner: minisign::KeyPair::generate_unencrypted_keypair().expect("minisign keygen"),
        }
    }

    /// The key id as minisign prints it: 16 uppercase hex digits.
    pub fn key_id(&self) -> String {
        let mut b = [0u8; 8];
        b.copy_from_slice(self.inner.pk.keynum());
        format!("{:016X}", u64::from_le_bytes(b))
    }

    /// The base64 line of the public key file.
    pub fn public_key_b64(&self) -> String {
        self.inner.pk.to_base64()
    }

    /// The public key file's text, exactly as `minisign -G` writes it.
    pub fn public_key_file(&self) -> String {
        format!(
            "untrusted comment: minisign public key {}\n{}\n",
            self.key_id(),
            self.public_key_b64()
        )
    }

    /// Writes the public key file as `dir/<KEYID>.pub` and returns its path.
    pub fn pk_path(&self, dir: &Path) -> PathBuf {
        let p = dir.join(format!("{}.pub", self.key_id()));
        fs::write(&p, self.public_key_file()).unwrap();
        p
    }

    /// A `.minisig` over `bytes`, with a trusted comment like minisign's
    /// (`timestamp:<unix>\tfile:<name>` plus `\thashed` for a prehashed signature). `prehashed`
    /// selects the current format (Ed25519 over BLAKE2b-512 of the data, made by the `minisign`
    /// crate) or the legacy one (Ed25519 over the data itself).
    pub fn sign(&self, bytes: &[u8], prehashed: bool) -> Vec<u8> {
        let ts = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let comment = if prehashed {
            format!("timestamp:{ts}\tfile:entry.json\thashed")
        } else {
            format!("timestamp:{ts}\tfile:entry.json")
        };
        self.sign_with_comment(bytes, prehashed, &comment)
    }

    /// Like `sign`, with the given trusted comment.
    pub fn sign_with_comment(&self, bytes: &[u8], prehashed: bool, comment: &str) -> Vec<u8> {
        let untrusted = "signature from minisign secret key";
        if prehashed {
            let sig = minisign::sign(
                Some(&self.inner.pk),
                &self.inner.sk,
                std::io::Cursor::new(bytes),
                Some(comment),
                Some(untrusted),
            )
            .expect("minisign sign");
            sig.to_bytes()
        } else {
            self.sign_legacy(bytes, comment, untrusted)
        }
    }

    /// The legacy format (signature algorithm `Ed`): the `minisign` crate signs only prehashed, so
    /// the Ed25519 signatures are made with `ed25519-compact` from the same secret key, and the
    /// box is checked against the `minisign` crate's own verifier before it is returned.
    fn sign_legacy(&self, bytes: &[u8], comment: &str, untrusted: &str) -> Vec<u8> {
        // SecretKey::to_bytes: sig_alg 2, kdf_alg 2, chk_alg 2, salt 32, opslimit 8, memlimit 8,
        // keynum 8, then the 64-byte Ed25519 secret key (unencrypted for this key pair).
        let skb = self.inner.sk.to_bytes();
        let keynum = &skb[54..62];
        let sk = ed25519_compact::SecretKey::from_slice(&skb[62..126]).expect("ed25519 sk");
        let sig = sk.sign(bytes, None);
        let mut line1 = Vec::with_capacity(74);
        line1.extend_from_slice(b"Ed");
        line1.extend_from_slice(keynum);
        line1.extend_from_slice(sig.as_ref());
        let mut global_msg = sig.as_ref().to_vec();
        global_msg.extend_from_slice(comment.as_bytes());
        let global = sk.sign(&global_msg, None);
        let text = format!(
            "untrusted comment: {untrusted}\n{}\ntrusted comment: {comment}\n{}\n",
            base64(&line1),
            base64(global.as_ref())
        );
        let sig_box = minisign::SignatureBox::from_string(&text).expect("legacy box parses");
        minisign::verify(
            &self.inner.pk,
            &sig_box,
            std::io::Cursor::new(bytes),
            true,
            false,
            true,
        )
        .expect("legacy signature verifies with the minisign crate");
        assert!(!sig_box.is_prehashed());
        text.into_bytes()
    }

    /// A prehashed `.minisig` whose trusted comment carries `timestamp:<at>` (a signing time far in
    /// the past or future, for the key-validity and signature-age rules).
    pub fn sign_at(&self, bytes: &[u8], at: u64) -> Vec<u8> {
        self.sign_with_comment(
            bytes,
            true,
            &format!("timestamp:{at}\tfile:entry.json\thashed"),
        )
    }

    /// A key-rotation statement by `self` (a key of `publisher`) adding `new`: the statement's
    /// bytes and its signature, as `dot-register publisher rotate --transition` takes them.
    pub fn transition_to(&self, publisher: &str, new: &KeyPair) -> (Vec<u8>, Vec<u8>) {
        let stmt = proto::trust::KeyTransition {
            schema: proto::trust::TRUST_SCHEMA,
            publisher: Name::new(publisher).unwrap(),
            new_key_id: new.key_id(),
            new_public_key: new.public_key_b64(),
            at: 1,
        }
        .to_bytes();
        let sig = self.sign(&stmt, true);
        (stmt, sig)
    }

    /// Signs the file at `path` and writes `path.minisig`; returns the signature's path.
    pub fn sign_file(&self, path: &Path, prehashed: bool) -> PathBuf {
        let bytes = fs::read(path).unwrap();
        let sig = self.sign(&bytes, prehashed);
        let mut p = path.as_os_str().to_owned();
        p.push(".minisig");
        let p = PathBuf::from(p);
        fs::write(&p, sig).unwrap();
        p
    }
}

fn base64(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut s = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                s.push(A[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                s.push('=');
            }
        }
    }
    s
}

// ---------------------------------------------------------------------------------------------
// Decoding tool output
// ---------------------------------------------------------------------------------------------

/// The error object of a failed tool: stderr must be exactly one JSON line.
pub fn decode_error(stderr: &[u8]) -> proto::ErrorObject {
    let text =
        std::str::from_utf8(stderr).unwrap_or_else(|_| panic!("stderr is not UTF-8: {stderr:?}"));
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines.len(),
        1,
        "stderr must be exactly one error line, got: {text:?}"
    );
    serde_json::from_str(lines[0])
        .unwrap_or_else(|e| panic!("stderr is not an error object ({e}): {text:?}"))
}

/// Asserts a tool refused: exit `code`, nothing on stdout, and one error object of `kind` on
/// stderr, which is returned for further checks.
pub fn assert_refused(out: &std::process::Output, code: i32, kind: &str) -> proto::ErrorObject {
    assert_eq!(
        out.status.code(),
        Some(code),
        "exit status; stdout {:?}, stderr {:?}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stdout.is_empty(),
        "a refusal prints nothing on stdout: {:?}",
        String::from_utf8_lossy(&out.stdout)
    );
    let e = decode_error(&out.stderr);
    assert_eq!(e.error, kind, "error kind: {e:?}");
    e
}

/// Asserts a tool succeeded (exit 0, nothing on stderr) and decodes its stdout as `T`.
pub fn assert_ok<T: serde::de::DeserializeOwned>(out: &std::process::Output) -> T {
    assert_eq!(
        out.status.code(),
        Some(0),
        "exit status; stderr {:?}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stderr.is_empty(),
        "stderr: {:?}",
        String::from_utf8_lossy(&out.stderr)
    );
    decode_json(&out.stdout)
}

/// A tool's stdout decoded as one JSON document of type `T`.
pub fn decode_json<T: serde::de::DeserializeOwned>(stdout: &[u8]) -> T {
    serde_json::from_slice(stdout).unwrap_or_else(|e| {
        panic!(
            "stdout does not decode as {} ({e}): {:?}",
            std::any::type_name::<T>(),
            String::from_utf8_lossy(stdout)
        )
    })
}

/// A tool's stdout decoded as one JSON document of type `T` per line.
pub fn decode_json_lines<T: serde::de::DeserializeOwned>(stdout: &[u8]) -> Vec<T> {
    let text = std::str::from_utf8(stdout).unwrap();
    text.lines().map(|l| decode_json(l.as_bytes())).collect()
}

// ---------------------------------------------------------------------------------------------
// Fixture executables, entries and roots
// ---------------------------------------------------------------------------------------------

/// Writes `bytes` to `dir/name` with `mode` and returns the path.
pub fn write_exe(dir: &Path, name: &str, bytes: &[u8], mode: u32) -> PathBuf {
    let p = dir.join(name);
    fs::write(&p, bytes).unwrap();
    fs::set_permissions(&p, fs::Permissions::from_mode(mode)).unwrap();
    p
}

/// Files that are not regular files, made in `dir`: a directory, a fifo, `/dev/null` and a symbolic
/// link to `real`, each with the words a message uses for it.
pub fn odd_files(dir: &Path, real: &Path) -> Vec<(PathBuf, &'static str)> {
    let d = dir.join("dir");
    fs::create_dir(&d).unwrap();
    let fifo = dir.join("fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success(), "mkfifo {}", fifo.display());
    let link = dir.join("link");
    std::os::unix::fs::symlink(real, &link).unwrap();
    vec![
        (d, "is a directory"),
        (fifo, "is a fifo"),
        (PathBuf::from("/dev/null"), "is a character device"),
        (link, "is a symbolic link"),
    ]
}

/// A shell script: never a static ELF.
pub const SCRIPT: &[u8] =
    b"#!/bin/sh\necho '{\"protocol\":\"1.0\",\"status\":\"ok\",\"outputs\":[]}'\n";

/// A valid entry for the executable at `exe` (its sha256 and size): version 1.0.0, protocol
/// `>=1.0, <2`, one optional string input `name`. `publisher` `Some` makes a signed entry, `None`
/// a local one.
pub fn entry_for(
    name: &str,
    exe: &Path,
    containment: Containment,
    publisher: Option<&str>,
) -> Entry {
    let bytes = fs::read(exe).unwrap_or_else(|e| panic!("read {}: {e}", exe.display()));
    entry_for_bytes(name, &bytes, containment, publisher)
}

/// `entry_for` for executable bytes in memory.
pub fn entry_for_bytes(
    name: &str,
    exe: &[u8],
    containment: Containment,
    publisher: Option<&str>,
) -> Entry {
    Entry {
        schema: proto::entry::ENTRY_SCHEMA,
        name: Name::new(name).unwrap(),
        version: semver::Version::new(1, 0, 0),
        trust: if publisher.is_some() {
            Trust::Signed
        } else {
            Trust::Local
        },
        publisher: publisher.map(|p| Name::new(p).unwrap()),
        sha256: Sha256::of(exe),
        size: exe.len() as u64,
        protocol: ">=1.0, <2".to_owned(),
        inputs: vec![InputDecl {
            name: Name::new("name").unwrap(),
            kind: InputKind::String,
            required: false,
        }],
        containment,
        expires: None,
    }
}

/// Creates a platform root at `dir` by hand (what `dot-register init` makes): the layout
/// directories with mode 0700, and the DEV marker when `dev`.
pub fn make_root(dir: &Path, dev: bool) -> Root {
    let root = Root::new(dir);
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .unwrap();
    fs::set_permissions(dir, fs::Permissions::from_mode(0o700)).unwrap();
    for d in ROOT_DIRS {
        let p = dir.join(d);
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&p)
            .unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(0o700)).unwrap();
    }
    if dev {
        fs::write(root.dev_marker(), b"").unwrap();
        fs::set_permissions(root.dev_marker(), fs::Permissions::from_mode(0o600)).unwrap();
    }
    root
}

/// The publisher record trusting `keys` (none revoked).
pub fn publisher_record(id: &str, keys: &[&KeyPair]) -> proto::Publisher {
    proto::Publisher {
        schema: proto::publisher::PUBLISHER_SCHEMA,
        id: Name::new(id).unwrap(),
        added_at: 1,
        keys: keys
            .iter()
            .map(|k| proto::PublisherKey {
                key_id: k.key_id(),
                public_key: k.public_key_b64(),
                added_at: 1,
                not_before: None,
                not_after: None,
                revoked: None,
            })
            .collect(),
        revoked: None,
    }
}

/// Writes `trust/publishers/ID.json` by hand (what `dot-register publisher add` makes).
pub fn install_publisher(root: &Root, publisher: &proto::Publisher) -> PathBuf {
    let p = root.publisher(&publisher.id);
    fs::write(&p, publisher.to_bytes()).unwrap();
    fs::set_permissions(&p, fs::Permissions::from_mode(0o600)).unwrap();
    p
}

/// Installs an entry by hand (what `dot-register add`/`dev` makes): `plugins.d/NAME.json` with
/// exactly `entry_bytes`, `NAME.json.minisig` when `sig` is given, the pinned copy of `exe_bytes`
/// at `store/sha256/HEX` (HEX from the entry) with mode 0500, and for an `audit` entry the owner's
/// `--allow-dynamic` grant (`NAME.json.grant`), since fixture bytes are rarely a static ELF.
pub fn install_entry(
    root: &Root,
    name: &str,
    entry_bytes: &[u8],
    sig: Option<&[u8]>,
    exe_bytes: &[u8],
) {
    let name = Name::new(name).unwrap();
    let entry = Entry::parse(entry_bytes).expect("install_entry: entry parses");
    fs::write(root.entry(&name), entry_bytes).unwrap();
    fs::set_permissions(root.entry(&name), fs::Permissions::from_mode(0o600)).unwrap();
    if let Some(sig) = sig {
        fs::write(root.entry_sig(&name), sig).unwrap();
        fs::set_permissions(root.entry_sig(&name), fs::Permissions::from_mode(0o600)).unwrap();
    }
    if entry.containment == Containment::Audit {
        install_grant(root, &entry);
    }
    let store = root.store_file(&entry.sha256);
    if !store.exists() {
        fs::write(&store, exe_bytes).unwrap();
        fs::set_permissions(&store, fs::Permissions::from_mode(0o555)).unwrap();
    }
}

/// Writes the owner's `--allow-dynamic` grant for `entry` by hand (`plugins.d/NAME.json.grant`).
pub fn install_grant(root: &Root, entry: &Entry) -> PathBuf {
    let p = root.entry_grant(&entry.name);
    let grant = proto::trust::Grant {
        schema: proto::trust::TRUST_SCHEMA,
        name: entry.name.clone(),
        sha256: entry.sha256,
        allow_dynamic_at: 1,
    };
    fs::write(&p, grant.to_bytes()).unwrap();
    fs::set_permissions(&p, fs::Permissions::from_mode(0o600)).unwrap();
    p
}

// ---------------------------------------------------------------------------------------------
// Workspace binaries and static fixtures
// ---------------------------------------------------------------------------------------------

/// A binary the workspace built, next to the running test executable (`target/[TRIPLE/]PROFILE/`;
/// the test runs from `…/PROFILE/deps/`). Panics if it was not built.
pub fn workspace_bin(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("test executable lives in target/…/PROFILE/deps");
    let p = profile_dir.join(name);
    assert!(
        p.is_file(),
        "{} not found: build the workspace's binaries first (`cargo build` or `make test`)",
        p.display()
    );
    p
}

/// A static test binary built by the Makefile for the host target (`hello` is built static).
/// Looked up in `$DOT_STATIC_DIR` if set, else `$CARGO_TARGET_DIR/x86_64-unknown-linux-gnu/release`
/// and `<workspace>/target/x86_64-unknown-linux-gnu/release`. Panics (never skips) if missing.
pub fn static_fixture(name: &str) -> PathBuf {
    let triple_release = Path::new("x86_64-unknown-linux-gnu").join("release");
    let mut tried = Vec::new();
    if let Some(dir) = std::env::var_os("DOT_STATIC_DIR") {
        tried.push(PathBuf::from(dir).join(name));
    } else {
        if let Some(t) = std::env::var_os("CARGO_TARGET_DIR") {
            tried.push(PathBuf::from(t).join(&triple_release).join(name));
        }
        let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .expect("testkit lives in the workspace");
        tried.push(workspace.join("target").join(&triple_release).join(name));
    }
    for p in &tried {
        if p.is_file() {
            return p.clone();
        }
    }
    panic!(
        "static fixture {name:?} not found (tried {tried:?}); run `make test`, which builds it \
         static for the host target, or set DOT_STATIC_DIR to the directory holding it"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_known_vectors() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
    }

    #[test]
    fn both_signature_formats_verify_with_minisign_verify() {
        let kp = KeyPair::generate();
        let pk = minisign_verify::PublicKey::decode(&kp.public_key_file()).unwrap();
        for prehashed in [true, false] {
            let sig = kp.sign(b"data", prehashed);
            let text = String::from_utf8(sig).unwrap();
            let s = minisign_verify::Signature::decode(&text).unwrap();
            pk.verify(b"data", &s, true).unwrap();
            assert!(pk.verify(b"datA", &s, true).is_err());
            assert!(s.trusted_comment().starts_with("timestamp:"));
            // Legacy is refused when legacy is not allowed: proof the format differs.
            assert_eq!(pk.verify(b"data", &s, false).is_ok(), prehashed);
        }
        assert_eq!(kp.key_id().len(), 16);
    }

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
