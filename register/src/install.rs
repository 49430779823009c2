//! `dot-register add`, `dev` and `remove`: registering and unregistering plugins.
//!
//! `add`, in order — everything is checked before anything is written:
//! 1. the root (owner, modes, layout)
//! 2. the entry file: a regular file of at most 64 KiB, a valid entry, `trust: "signed"`
//! 3. its signature over the file's exact bytes, by a non-revoked key of the named, non-revoked
//!    publisher
//! 4. the executable, opened once (`O_NOFOLLOW`; regular, no setuid/setgid): size, digest, and the
//!    static-ELF rule for `process`
//!    (the deny list before 2–4: entry digest, executable digest, key id; sizes against the policy;
//!    an `audit` executable that is not a static ELF needs `--allow-dynamic`)
//! 5. under the root's writer lock: an entry of the same name needs `--replace`; a version lower
//!    than the name's high-water version needs `--allow-downgrade` or `--reset-high-water`; a
//!    replacement that widens containment, inputs or protocol needs `--accept-changes`
//! 6. pin: copy the bytes read from that same descriptor into `store/sha256/HEX` (digesting them as
//!    they are copied; the copy is kept only if that digest is the entry's), mode 0555
//! 7. write the grant (if any), `NAME.json.minisig`, then `NAME.json`, each atomically (mode
//!    0600); then `trust/high-water.json`; then one line in `audit.log`

use crate::args::{AddArgs, DevArgs};
use crate::error::RegisterError;
use crate::report::{AddReport, RemoveReport};
use crate::{audit, now, read_input_limited, write_private, WriterLock};
use cli::next::Opt;
use cli::Next;
use proto::entry::ENTRY_SCHEMA;
use proto::layout::Root;
use proto::trust::{AuditAction, AuditOutcome, AuditRecord, Changes, Grant, Limit, TRUST_SCHEMA};
use proto::{Containment, Entry, InputDecl, InputKind, Name, Sha256, Trust};
use std::fs::File;
use std::io::{ErrorKind, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use verify::entry::{check_exe_file, check_signed, parse_entry, read_doc};
use verify::trust::TrustContext;
use verify::VerifyError;

/// Registers a signed plugin (module documentation, steps 1–7).
pub fn add(a: &AddArgs) -> Result<AddReport, RegisterError> {
    let root = Root::single(&a.root);
    crate::check_registry_writable(&root)?;
    let ctx = TrustContext::load(&root)?;
    let entry_bytes = read_input_limited(&a.entry, ctx.policy.limit(Limit::Entry))?;
    ctx.check_size(&root, &a.entry, Limit::Entry, entry_bytes.len() as u64)?;
    ctx.check_digest(&root, &Sha256::of(&entry_bytes))?;
    let entry = parse_entry(&a.entry, &entry_bytes)?;
    ctx.check_digest(&root, &entry.sha256)?;
    if entry.trust == Trust::Local {
        return Err(RegisterError::LocalEntryInAdd {
            path: a.entry.clone(),
            next: cli::next::register_local(&a.root, &entry, Some(&a.exe)),
        });
    }
    let sigs = read_signatures(&root, &ctx, &a.signature)?;
    let signed = check_signed(&root, &ctx, &entry, &entry_bytes, &sigs).map_err(|e| {
        match e.with_path(&a.signature[0]) {
            VerifyError::ThresholdNotMet(mut s) => {
                s.next = Some(add_command(a).arg("--signature").raw("FILE.minisig"));
                VerifyError::ThresholdNotMet(s)
            }
            other => other,
        }
    })?;
    ctx.check_expiry(&entry, &a.entry)?;
    verify::entry::check_runtime_allowed(&root, &ctx.policy, &entry, &a.entry)?;
    ctx.check_size(&root, &a.exe, Limit::Exe, entry.size)?;
    let base = add_command(a);
    let hint = |add: Vec<Opt>| Next::again(add, vec![], base.clone());
    let exe = open_checked_exe(&a.exe, &entry)?;
    let dynamic = check_dynamic(&exe, &a.exe, &entry, a.allow_dynamic, &hint)?;

    let _lock = WriterLock::take(&root)?;
    let mut overrides = Vec::new();
    let old = check_existing(&root, &entry, a.replace, &hint)?;
    let mut high_water = verify::trust::load_high_water(&root)?;
    let mark = high_water
        .versions
        .get(&entry.name)
        .into_iter()
        .chain(old.as_ref().map(|o| &o.version))
        .max()
        .cloned();
    if let Some(mark) = &mark {
        if entry.version < *mark {
            if a.reset_high_water {
                overrides.push(format!("reset-high-water from {mark}"));
            } else if a.allow_downgrade {
                overrides.push(format!("allow-downgrade below {mark}"));
            } else {
                return Err(RegisterError::Downgrade {
                    name: entry.name.to_string(),
                    path: root.entry(&entry.name),
                    registered: mark.to_string(),
                    offered: entry.version.to_string(),
                    next: hint(vec![Opt::flag("--allow-downgrade")]),
                });
            }
        }
    }
    let consent = check_consent(
        &root,
        old.as_ref(),
        &entry,
        a.accept_changes.as_deref(),
        &hint,
    )?;
    overrides.extend(consent);
    let new_mark = match mark {
        Some(m) if m > entry.version && !a.reset_high_water => m,
        _ => entry.version.clone(),
    };
    let store = pin(&root, &exe, &entry)?;
    write_grant(&root, &entry, dynamic, &mut overrides)?;
    for (i, sig) in sigs.iter().enumerate() {
        write_private(&root.entry_sig_n(&entry.name, i), sig)?;
    }
    // Signatures left by an earlier registration with more of them no longer belong to it.
    for i in sigs.len()..proto::publisher::MAX_SIGNATURES {
        remove_if_present(&root.entry_sig_n(&entry.name, i))?;
    }
    write_private(&root.entry(&entry.name), &entry_bytes)?;
    // Staged for a package, no high-water file: a vendor layer's files are shared by every plugin
    // package (one file cannot be shipped by two), and its versions are the package manager's to
    // order. Rollback still counts the entry it replaces (`old`).
    let staging = crate::Staging::from_switch(a.staging);
    if high_water.versions.get(&entry.name) != Some(&new_mark) && staging == crate::Staging::No {
        high_water.versions.insert(entry.name.clone(), new_mark);
        write_private(&root.high_water(), &high_water.to_bytes())?;
    }
    let replaced = old.is_some();
    let mut rec = entry_record(&entry, replaced, overrides);
    rec.key_id = Some(signed.info.key_id.clone());
    if signed.key_ids.len() > 1 {
        rec.key_ids = signed.key_ids.clone();
    }
    rec.level = Some(signed.level);
    crate::audit_staged(&root, &rec, staging)?;
    Ok(report(&entry, Some(signed.info.key_id), store, replaced))
}

/// Registers a local plugin in a development root: the entry is built from the options, the
/// executable checked and pinned as for `add`. Local entries keep no high-water version.
pub fn dev(a: &DevArgs) -> Result<AddReport, RegisterError> {
    let root = Root::single(&a.root);
    // A root that is missing is made a development root (`init … --dev`), never a production
    // one that `dev` would then refuse.
    let info = crate::check_registry_writable(&root).map_err(|e| match e {
        RegisterError::Verify(VerifyError::RootMissing {
            path,
            root,
            what,
            next,
        }) => RegisterError::Verify(VerifyError::RootMissing {
            path,
            root,
            what,
            next: next.arg("--dev"),
        }),
        e => e,
    })?;
    if !info.dev {
        let empty = crate::init::registered(&root)?.is_empty();
        return Err(RegisterError::DevNeedsDevRoot {
            path: root.path().to_path_buf(),
            empty,
            next: crate::init::dev_root_next(empty.then_some(root.path())),
        });
    }
    let ctx = TrustContext::load(&root)?;
    let (plugin, version, inputs) = entry_options(&a.name, &a.version, &a.input)?;
    let (file, meta) =
        sys::fs::open_regular(&a.exe).map_err(|e| VerifyError::from_open(&a.exe, e))?;
    ctx.check_size(&root, &a.exe, Limit::Exe, meta.len())?;
    let (sha256, size) =
        verify::digest::digest_file(&file).map_err(|e| VerifyError::io(&a.exe, e))?;
    ctx.check_digest(&root, &sha256)?;
    let entry = Entry {
        schema: ENTRY_SCHEMA,
        name: plugin,
        version,
        trust: Trust::Local,
        publisher: None,
        sha256,
        size,
        protocol: a.protocol.clone(),
        inputs,
        containment: a.containment,
        expires: None,
        limits: a.limits(),
        runtime: a.runtime.clone(),
        env: a.env.clone(),
    };
    entry
        .validate()
        .map_err(|source| VerifyError::EntryMalformed {
            path: PathBuf::new(),
            source,
        })?;
    let policy = TrustContext::load(&root)?.policy;
    verify::entry::check_runtime_allowed(&root, &policy, &entry, &root.policy())?;
    check_exe_file(
        &file,
        &meta,
        &sha256,
        size,
        (entry.containment, &entry.runtime),
    )
    .map_err(|e| RegisterError::from(e.with_path(&a.exe)).with_build_hint(&file))?;
    let base = dev_command(a);
    let hint = |add: Vec<Opt>| Next::again(add, vec![], base.clone());
    let dynamic = check_dynamic(&file, &a.exe, &entry, a.allow_dynamic, &hint)?;

    let _lock = WriterLock::take(&root)?;
    let old = check_existing(&root, &entry, a.replace, &hint)?;
    let mut overrides = check_consent(
        &root,
        old.as_ref(),
        &entry,
        a.accept_changes.as_deref(),
        &hint,
    )?;
    let store = pin(&root, &file, &entry)?;
    write_grant(&root, &entry, dynamic, &mut overrides)?;
    let plugins = root.plugins();
    write_private(&root.entry(&entry.name), &entry.to_bytes())?;
    // Signatures left by an earlier signed entry of this name no longer mean anything.
    for i in 0..proto::publisher::MAX_SIGNATURES {
        remove_if_present(&root.entry_sig_n(&entry.name, i))?;
    }
    sys::fs::fsync_dir(&plugins).map_err(|e| VerifyError::io(&plugins, e))?;
    audit(&root, &entry_record(&entry, old.is_some(), overrides))?;
    Ok(report(&entry, None, store, old.is_some()))
}

/// Removes a plugin's entry, signature and grant. The pinned copy stays (store files are never
/// rewritten or removed by `dot-register`), and so does the name's high-water version.
pub fn remove(root: &Root, plugin: &Name) -> Result<RemoveReport, RegisterError> {
    crate::check_registry_writable(root)?;
    let _lock = WriterLock::take(root)?;
    let entry_path = root.entry(plugin);
    match std::fs::symlink_metadata(&entry_path) {
        Ok(_) => {}
        Err(e) if e.kind() == ErrorKind::NotFound => {
            return Err(VerifyError::EntryMissing {
                name: plugin.to_string(),
                path: entry_path,
                next: Next::cmd("dot-register")
                    .args(["list", "--root"])
                    .arg(root.path()),
                searched: None,
            }
            .into())
        }
        Err(e) => return Err(VerifyError::io(&entry_path, e).into()),
    }
    let old = read_doc(&entry_path)
        .ok()
        .flatten()
        .and_then(|b| Entry::parse(&b).ok());
    let mut removed = Vec::new();
    let sigs = (0..proto::publisher::MAX_SIGNATURES).map(|i| root.entry_sig_n(plugin, i));
    let files = [entry_path, root.entry_grant(plugin)]
        .into_iter()
        .chain(sigs);
    for p in files {
        if remove_if_present(&p)? {
            removed.push(p.display().to_string());
        }
    }
    let plugins = root.plugins();
    sys::fs::fsync_dir(&plugins).map_err(|e| VerifyError::io(&plugins, e))?;
    let mut rec = AuditRecord::new(now(), AuditAction::Remove, AuditOutcome::Allowed);
    rec.name = Some(plugin.to_string());
    if let Some(old) = old {
        rec.version = Some(old.version.to_string());
        rec.sha256 = Some(old.sha256);
        rec.publisher = old.publisher.map(|p| p.to_string());
    }
    audit(root, &rec)?;
    Ok(RemoveReport {
        name: plugin.clone(),
        removed,
    })
}

/// Reads every `--signature` (at least one, at most `proto::publisher::MAX_SIGNATURES`), each
/// within the policy's size.
fn read_signatures(
    root: &Root,
    ctx: &TrustContext,
    paths: &[PathBuf],
) -> Result<Vec<Vec<u8>>, RegisterError> {
    if paths.is_empty() || paths.len() > proto::publisher::MAX_SIGNATURES {
        return Err(RegisterError::Usage(format!(
            "give --signature from 1 to {} times (one per key); {} given",
            proto::publisher::MAX_SIGNATURES,
            paths.len()
        )));
    }
    paths
        .iter()
        .map(|p| {
            let sig = read_input_limited(p, ctx.policy.limit(Limit::Signature))?;
            ctx.check_size(root, p, Limit::Signature, sig.len() as u64)?;
            Ok(sig)
        })
        .collect()
}

/// The audit record of a registration.
fn entry_record(entry: &Entry, replaced: bool, overrides: Vec<String>) -> AuditRecord {
    let action = if replaced {
        AuditAction::Replace
    } else {
        AuditAction::Register
    };
    let mut rec = AuditRecord::new(now(), action, AuditOutcome::Allowed);
    rec.name = Some(entry.name.to_string());
    rec.version = Some(entry.version.to_string());
    rec.publisher = entry.publisher.as_ref().map(|p| p.to_string());
    rec.sha256 = Some(entry.sha256);
    rec.overrides = overrides;
    rec
}

/// An `audit` executable that is not a static ELF is accepted only with `--allow-dynamic`.
/// Returns whether it is such an executable (a grant must be written).
fn check_dynamic(
    exe: &File,
    path: &Path,
    entry: &Entry,
    allow: bool,
    hint: &impl Fn(Vec<Opt>) -> Next,
) -> Result<bool, RegisterError> {
    if entry.containment == Containment::Process {
        return Ok(false);
    }
    check_executable_format(exe, path)?;
    match verify::elf::check_static_elf(exe) {
        Ok(_) => Ok(false),
        Err(_) if allow => Ok(true),
        Err(source) => Err(VerifyError::DynamicNotGranted {
            path: path.to_path_buf(),
            source,
            next: hint(vec![Opt::flag("--allow-dynamic")]),
        }
        .into()),
    }
}

/// An `audit` executable must be one the kernel can execute: an ELF file or a script whose first
/// line names its interpreter (`#!`). Anything else would be registered, then fail at every launch
/// with "Exec format error".
fn check_executable_format(exe: &File, path: &Path) -> Result<(), RegisterError> {
    let mut start = [0u8; 4];
    let mut n = 0;
    while n < start.len() {
        match std::os::unix::fs::FileExt::read_at(exe, &mut start[n..], n as u64) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(VerifyError::io(path, e).into()),
        }
    }
    let start = &start[..n];
    if start.starts_with(b"#!") || start == b"\x7fELF" {
        return Ok(());
    }
    Err(RegisterError::UnknownFormat {
        path: path.to_path_buf(),
        start: format!("\"{}\"", start.escape_ascii()),
    })
}

/// Writes the owner's `--allow-dynamic` grant for this executable, or removes a stale grant.
fn write_grant(
    root: &Root,
    entry: &Entry,
    dynamic: bool,
    overrides: &mut Vec<String>,
) -> Result<(), RegisterError> {
    let path = root.entry_grant(&entry.name);
    if !dynamic {
        remove_if_present(&path)?;
        return Ok(());
    }
    let grant = Grant {
        schema: TRUST_SCHEMA,
        name: entry.name.clone(),
        sha256: entry.sha256,
        allow_dynamic_at: now(),
    };
    write_private(&path, &grant.to_bytes())?;
    overrides.push("allow-dynamic".to_owned());
    Ok(())
}

/// Re-consent on widening: replacing `old` by `new` when that raises the containment risk, adds
/// inputs or widens the protocol range needs `--accept-changes` naming exactly that difference.
/// Returns the override to record.
fn check_consent(
    root: &Root,
    old: Option<&Entry>,
    new: &Entry,
    given: Option<&str>,
    hint: &impl Fn(Vec<Opt>) -> Next,
) -> Result<Vec<String>, RegisterError> {
    let Some(changes) = old.and_then(|o| Changes::between(o, new)) else {
        return Ok(Vec::new());
    };
    let token = changes.token();
    if given == Some(token.as_str()) {
        return Ok(vec![format!("accept-changes {token}")]);
    }
    Err(RegisterError::ChangesNeedConsent {
        name: new.name.to_string(),
        path: root.entry(&new.name),
        next: hint(vec![Opt::with("--accept-changes", token.as_str())]),
        changes: Box::new(changes),
        given: given.map(str::to_owned),
    })
}

/// Opens the executable and runs the file checks against the entry.
fn open_checked_exe(path: &Path, entry: &Entry) -> Result<File, RegisterError> {
    let (file, meta) = sys::fs::open_regular(path).map_err(|e| VerifyError::from_open(path, e))?;
    check_exe_file(
        &file,
        &meta,
        &entry.sha256,
        entry.size,
        (entry.containment, &entry.runtime),
    )
    .map_err(|e| RegisterError::from(e.with_path(path)).with_build_hint(&file))?;
    Ok(file)
}

/// Refuses to overwrite a registered name without `replace`. Returns the entry being replaced
/// (`None` when the name is free; an unreadable or malformed old entry may be replaced, but its
/// version and widening cannot be compared, so it counts as free). `hint` makes the command that
/// passes `--replace`.
fn check_existing(
    root: &Root,
    entry: &Entry,
    replace: bool,
    hint: &impl Fn(Vec<Opt>) -> Next,
) -> Result<Option<Entry>, RegisterError> {
    let path = root.entry(&entry.name);
    let exists = match std::fs::symlink_metadata(&path) {
        Ok(_) => true,
        Err(e) if e.kind() == ErrorKind::NotFound => false,
        Err(e) => return Err(VerifyError::io(&path, e).into()),
    };
    if !exists {
        return Ok(None);
    }
    if !replace {
        return Err(RegisterError::EntryExists {
            name: entry.name.to_string(),
            path,
            next: hint(vec![Opt::flag("--replace")]),
        });
    }
    Ok(read_doc(&path)
        .ok()
        .flatten()
        .and_then(|b| Entry::parse(&b).ok()))
}

/// Pins the executable: `store/sha256/HEX` with mode 0555. An existing pinned copy is never
/// rewritten: it is checked instead (a differing copy is `store-tampered`). A new copy is made from
/// the already-open, already-checked descriptor, digesting exactly the bytes written; it is renamed
/// into place only if they are the entry's bytes.
fn pin(root: &Root, exe: &File, entry: &Entry) -> Result<PathBuf, RegisterError> {
    let dest = root.store_file(&entry.sha256);
    match sys::fs::open_regular(&dest) {
        Ok((f, meta)) => {
            verify::entry::check_exe_owner(&meta).map_err(|e| e.with_path(&dest))?;
            let (found, len) =
                verify::digest::digest_file(&f).map_err(|e| VerifyError::io(&dest, e))?;
            if found != entry.sha256 || len != entry.size {
                return Err(VerifyError::StoreTampered {
                    path: dest.clone(),
                    what: format!("its sha256 is {found} ({len} bytes)"),
                    next: Some(Next::cmd("rm").arg(&dest)),
                }
                .into());
            }
            return Ok(dest);
        }
        Err(sys::fs::OpenError::Io(e)) if e.kind() == ErrorKind::NotFound => {}
        Err(e) => return Err(VerifyError::from_open(&dest, e).into()),
    }
    let store = root.store();
    let tmp = store.join(sys::fs::temp_name(&entry.sha256.to_hex()));
    let result = copy_verified(exe, &tmp, &entry.sha256, entry.size).and_then(|()| {
        std::fs::rename(&tmp, &dest).map_err(|e| VerifyError::io(&dest, e))?;
        sys::fs::fsync_dir(&store).map_err(|e| VerifyError::io(&store, e))
    });
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result?;
    Ok(dest)
}

/// Copies `exe` (from offset 0, positioned reads) into a new file `tmp`, digesting what it copies;
/// fsync and mode 0555 only if the digest and size are the expected ones.
fn copy_verified(exe: &File, tmp: &Path, sha: &Sha256, size: u64) -> Result<(), VerifyError> {
    let io = |e| VerifyError::io(tmp, e);
    let mut out = sys::fs::create_new(tmp, 0o600).map_err(io)?;
    let (found, len) =
        verify::digest::digest_file_with(exe, |chunk| out.write_all(chunk)).map_err(io)?;
    if len != size {
        return Err(VerifyError::SizeMismatch {
            path: tmp.to_path_buf(),
            expected: size,
            found: len,
        });
    }
    if found != *sha {
        return Err(VerifyError::DigestMismatch {
            path: tmp.to_path_buf(),
            expected: *sha,
            found,
        });
    }
    out.set_permissions(std::fs::Permissions::from_mode(0o555))
        .map_err(io)?;
    out.sync_all().map_err(io)
}

/// The name, version and inputs of an entry built from command-line options (`dev`, `entry new`).
pub(crate) fn entry_options(
    name: &str,
    version: &str,
    inputs: &[String],
) -> Result<(Name, semver::Version, Vec<InputDecl>), RegisterError> {
    let plugin = crate::name(name)?;
    let version = semver::Version::parse(version).map_err(|e| RegisterError::VersionSpec {
        value: version.to_owned(),
        reason: e.to_string(),
    })?;
    let inputs = inputs
        .iter()
        .map(|s| parse_input(s))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((plugin, version, inputs))
}

/// `NAME:string|file[:optional]`.
fn parse_input(spec: &str) -> Result<InputDecl, RegisterError> {
    let bad = |reason: &str| RegisterError::InputSpec {
        spec: spec.to_owned(),
        reason: reason.to_owned(),
    };
    let mut parts = spec.split(':');
    let n = parts.next().unwrap_or_default();
    let name = Name::new(n).map_err(|e| bad(&e.to_string()))?;
    let kind = match parts.next() {
        Some("string") => InputKind::String,
        Some("file") => InputKind::File,
        Some(other) => {
            return Err(bad(&format!(
                "unknown kind {other:?}; expected string or file"
            )))
        }
        None => return Err(bad("expected NAME:string or NAME:file")),
    };
    let required = match parts.next() {
        None => true,
        Some("optional") => false,
        Some(other) => return Err(bad(&format!("unknown flag {other:?}; expected optional"))),
    };
    if parts.next().is_some() {
        return Err(bad("too many `:` parts"));
    }
    Ok(InputDecl {
        name,
        kind,
        required,
    })
}

fn remove_if_present(p: &Path) -> Result<bool, RegisterError> {
    match std::fs::remove_file(p) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(false),
        Err(e) => Err(VerifyError::io(p, e).into()),
    }
}

fn report(entry: &Entry, key_id: Option<String>, store: PathBuf, replaced: bool) -> AddReport {
    AddReport {
        name: entry.name.clone(),
        version: entry.version.clone(),
        trust: entry.trust,
        publisher: entry.publisher.clone(),
        key_id,
        sha256: entry.sha256,
        size: entry.size,
        containment: entry.containment,
        store: store.display().to_string(),
        replaced,
    }
}

/// `dot-register add` with every option of `a`: what a library caller sees as the command that
/// failed (`dot-register` itself prints the command line as it was typed).
fn add_command(a: &AddArgs) -> Next {
    let mut cmd = Next::cmd("dot-register")
        .args(["add", "--root"])
        .arg(&a.root)
        .arg("--entry")
        .arg(&a.entry);
    for s in &a.signature {
        cmd = cmd.arg("--signature").arg(s);
    }
    cmd = cmd.arg("--exe").arg(&a.exe);
    cmd = cmd
        .flag_if(a.replace, "--replace")
        .flag_if(a.allow_downgrade, "--allow-downgrade")
        .flag_if(a.reset_high_water, "--reset-high-water")
        .flag_if(a.allow_dynamic, "--allow-dynamic")
        .flag_if(a.staging, "--staging");
    cmd.opt_if("--accept-changes", a.accept_changes.as_ref())
}

/// `dot-register dev` with every option of `a` (see [`add_command`]).
fn dev_command(a: &DevArgs) -> Next {
    let mut cmd = Next::cmd("dot-register")
        .args(["dev", "--root"])
        .arg(&a.root)
        .args(["--name", &a.name, "--exe"])
        .arg(&a.exe)
        .arg("--containment")
        .arg(a.containment.to_string())
        .args(["--version", &a.version, "--protocol", &a.protocol]);
    for dir in &a.runtime {
        cmd = cmd.arg("--runtime").arg(dir.as_str());
    }
    for name in &a.env {
        cmd = cmd.arg("--env").arg(name.as_str());
    }
    for input in &a.input {
        cmd = cmd.args(["--input", input]);
    }
    for (option, value) in a.limits().iter().flat_map(|l| l.options()) {
        cmd = cmd.arg(option).arg(value);
    }
    cmd.flag_if(a.replace, "--replace")
        .flag_if(a.allow_dynamic, "--allow-dynamic")
        .opt_if("--accept-changes", a.accept_changes.as_ref())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_specs_parse_and_refuse() {
        let d = parse_input("name:string").expect("plain");
        assert_eq!(
            (d.name.as_str(), d.kind, d.required),
            ("name", InputKind::String, true)
        );
        let d = parse_input("doc:file:optional").expect("optional file");
        assert_eq!((d.kind, d.required), (InputKind::File, false));
        for bad in [
            "name",
            "name:int",
            "Name:string",
            "n:file:maybe",
            "n:file:optional:x",
            ":file",
        ] {
            let e = parse_input(bad).expect_err(bad);
            assert!(matches!(e, RegisterError::InputSpec { .. }), "{bad}");
        }
    }
}
