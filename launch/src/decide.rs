//! Steps 1–3 of a launch, before anything is created: verification, consent, kernel support,
//! protocol, inputs, target and the sibling runner. The result is the launch decision, which
//! `audit` records whatever it is.

use crate::exec::Runner;
use crate::{hooks, inputs, target, LaunchError, Options};
use cli::next::Opt;
use cli::Next;
use proto::layout::Root;
use proto::protocol::{protocol_version, PROTOCOL_VERSION};
use proto::{Containment, Entry, Name};
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;

/// The consent flags given on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Consent {
    pub allow_audit_plugin: bool,
    pub require_process_sandbox: bool,
}

/// The consent flag each containment needs.
fn consent_flag(c: Containment) -> &'static str {
    match c {
        Containment::Audit => "--allow-audit-plugin",
        Containment::Process => "--require-process-sandbox",
    }
}

/// Consent must match the entry's containment exactly: its own flag, and not the other one. The
/// fix offered is the same launch with the entry's flag, except where that would drop the
/// `--require-process-sandbox` the invoker gave for an `audit` entry: running without the
/// sandbox is the invoker's decision, which no `next` makes for them.
fn check_consent(
    name: &Name,
    containment: Containment,
    given: Consent,
    base: Next,
) -> Result<(), LaunchError> {
    let flag = consent_flag(containment);
    let other = consent_flag(match containment {
        Containment::Audit => Containment::Process,
        Containment::Process => Containment::Audit,
    });
    let next = Next::again(vec![Opt::flag(flag)], vec![other], base.arg(name.as_str()));
    let name = name.to_string();
    match (
        containment,
        given.allow_audit_plugin,
        given.require_process_sandbox,
    ) {
        (Containment::Audit, true, false) | (Containment::Process, false, true) => Ok(()),
        (_, false, false) => Err(LaunchError::ConsentMissing {
            name,
            containment,
            flag,
            next,
        }),
        (Containment::Audit, _, true) => Err(LaunchError::ConsentMismatch {
            name,
            containment,
            given: "--require-process-sandbox",
            flag,
            next: None,
        }),
        (Containment::Process, true, _) => Err(LaunchError::ConsentMismatch {
            name,
            containment,
            given: "--allow-audit-plugin",
            flag,
            next: Some(next),
        }),
    }
}

fn check_protocol(entry: &Entry) -> Result<(), LaunchError> {
    // The requirement parsed when the entry was validated; an unparsable one cannot match.
    if entry
        .protocol_req()
        .is_ok_and(|req| req.matches(&protocol_version()))
    {
        Ok(())
    } else {
        Err(LaunchError::ProtocolUnsupported {
            req: entry.protocol.clone(),
            ours: PROTOCOL_VERSION,
        })
    }
}

/// For `process`: the kernel must be able to enforce it, checked before anything is created.
fn check_process_support() -> Result<(), LaunchError> {
    let probe = probe::decision_probe().capped(hooks::pretend_landlock_abi());
    match probe.why_not {
        None => Ok(()),
        Some(why) => Err(LaunchError::ProcessUnsupported { why }),
    }
}

/// Where the runner is: `dot-sandbox` in the directory of the running dot-launch (never PATH).
pub fn runner_path() -> Result<PathBuf, LaunchError> {
    let exe = std::fs::read_link("/proc/self/exe")
        .map_err(|e| LaunchError::io("resolving /proc/self/exe", "/proc/self/exe", e))?;
    Ok(exe
        .parent()
        .map(|d| d.join("dot-sandbox"))
        .unwrap_or_else(|| PathBuf::from("/dot-sandbox")))
}

/// Opens the sibling `dot-sandbox` (the directory of the running dot-launch; never PATH) once and
/// validates the open inode: regular, no setuid/setgid, owned by root or us, not group/world
/// writable, not empty, executable by us.
fn open_runner() -> Result<Runner, LaunchError> {
    let path = runner_path()?;
    let unusable = |why: String| LaunchError::SandboxUnusable {
        path: path.clone(),
        why,
    };
    let (file, meta) = sys::fs::open_regular(&path).map_err(|e| match e {
        // The host failed to read it (EIO, out of descriptors or memory): `io`, not the runner's.
        sys::fs::OpenError::Io(e)
            if !matches!(
                e.raw_os_error(),
                Some(nix::libc::ENOENT | nix::libc::ENOTDIR | nix::libc::EACCES | nix::libc::EPERM)
            ) =>
        {
            LaunchError::io("opening dot-sandbox", path.clone(), e)
        }
        e => unusable(e.to_string()),
    })?;
    let euid = nix::unistd::geteuid().as_raw();
    if meta.uid() != 0 && meta.uid() != euid {
        return Err(unusable(format!(
            "is owned by uid {}, not root or {euid}",
            meta.uid()
        )));
    }
    if meta.mode() & 0o022 != 0 {
        return Err(unusable(format!(
            "is group or world writable (mode {:o})",
            meta.mode() & 0o7777
        )));
    }
    if meta.len() == 0 {
        return Err(unusable("is empty".into()));
    }
    // What execve itself will check (mode bits for us, a noexec mount), asked of the open inode
    // now: a runner that cannot be executed is a refusal before anything is recorded as allowed.
    nix::unistd::faccessat(
        &file,
        "",
        nix::unistd::AccessFlags::X_OK,
        nix::fcntl::AtFlags::AT_EMPTY_PATH,
    )
    .map_err(|e| {
        unusable(format!(
            "cannot be executed (mode {:o}): {e}",
            meta.mode() & 0o7777
        ))
    })?;
    Ok(Runner { file })
}

/// Everything checked before anything is created: the launch decision.
pub(crate) struct Decided {
    pub verified: verify::entry::Verified,
    pub inputs: inputs::Inputs,
    pub target: target::Target,
    pub runner: Option<Runner>,
    /// The entry's limits, lowered as the invoker asked.
    pub limits: proto::limits::Limits,
    /// The system layer that answered (`None` for `--root`).
    pub layer: Option<proto::layers::Layer>,
    /// A `process` run's runner, started at its gate as soon as what it is given was checked
    /// ([`Start::Early`], `crate::pinning::start_early`): `None` at `audit`, for `--explain`, or
    /// when it could not be started then (the run starts it in its place).
    pub early: Option<crate::exec::Started>,
}

/// Whether [`decide`] starts a `process` run's runner as soon as it can.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Start {
    /// A launch: the runner starts once the checks it depends on passed, and the target and the
    /// pending runs are checked while it starts (a refusal then ends it, before its gate).
    Early,
    /// `--explain`: nothing is started.
    Never,
}

/// Steps 1–3: verification, consent, kernel support, protocol, inputs, target, runner.
/// `checked` is what `verify::layers::check_registry` found of the registry's layout.
pub(crate) fn decide(
    root: &Root,
    name: &Name,
    opts: &Options,
    checked: verify::layers::Checked,
    start: Start,
) -> Result<Decided, LaunchError> {
    // A leased executable is digested after the checks (and at `process` while its runner starts:
    // `crate::run`); nothing runs before it is confirmed.
    let (mut verified, answer) = verify::layers::verify_checked_named(
        &opts.registry,
        checked,
        name,
        verify::entry::Digest::AfterLease,
    )?;
    match checks(root, opts, &verified, start) {
        Ok(Checked {
            inputs,
            target,
            runner,
            limits,
            early,
        }) => Ok(Decided {
            verified,
            inputs,
            target,
            runner,
            layer: (answer.layer != proto::layers::Layer::Root).then_some(answer.layer),
            limits,
            early,
        }),
        // A copy that is not the entry's is reported before anything else, as when it is
        // digested first.
        Err(e) => {
            verified.confirm_digest()?;
            Err(e)
        }
    }
}

/// What [`checks`] found.
struct Checked {
    inputs: inputs::Inputs,
    target: target::Target,
    runner: Option<Runner>,
    limits: proto::limits::Limits,
    early: Option<crate::exec::Started>,
}

/// What `decide` checks after verification. The checks that decide what the runner is given come
/// first; then (at [`Start::Early`]) the runner starts, and the target and the pending runs are
/// checked while it starts — a refusal of either drops it (`exec::Started` ends and reaps it
/// before its gate, where it waits before anything of the plugin's is read or executed).
fn checks(
    root: &Root,
    opts: &Options,
    verified: &verify::entry::Verified,
    start: Start,
) -> Result<Checked, LaunchError> {
    let entry = &verified.entry;
    check_consent(&entry.name, entry.containment, opts.consent, opts.command())?;
    if opts.streams.report_denials && entry.containment == Containment::Audit {
        return Err(LaunchError::Usage(format!(
            "--report-denials needs a process entry: {} is an audit entry, which runs without a \
             seccomp filter",
            entry.name
        )));
    }
    if entry.containment == Containment::Process {
        check_process_support()?;
    }
    check_protocol(entry)?;
    let limits = check_limits(entry, opts)?;
    let sensitive = verify::layers::sensitive_inputs(&opts.registry)?;
    let inputs = inputs::check(&opts.inputs, entry, &sensitive).map_err(|e| match e {
        LaunchError::InputFileSensitive(mut s) => {
            s.next = Some(Next::again(
                vec![Opt::with("--allow-sensitive-input", s.key.clone())],
                vec![],
                opts.command()
                    .arg(entry.name.as_str())
                    .arg("--allow-sensitive-input")
                    .arg(&s.key),
            ));
            LaunchError::InputFileSensitive(s)
        }
        other => other,
    })?;
    let runner = match entry.containment {
        Containment::Process => Some(open_runner()?),
        Containment::Audit => None,
    };
    let early = match start {
        Start::Early => crate::pinning::start_early(
            verified,
            runner.as_ref(),
            &root.txn(),
            &crate::exec::RunLimits::new(&limits, opts.streams),
            &inputs,
        ),
        Start::Never => None,
    };
    if early.is_some() {
        hooks::pause_at("after-runner-start");
    }
    // Outputs never land in a system layer either, whichever registry the launch reads: the
    // layers built into the tools always, and those under `--sysroot` when it moves them. The
    // target is resolved and walked once, and held against the root, then each layer in turn.
    let builtin = proto::layers::SystemLayers::new(None);
    let moved = match &opts.registry {
        verify::layers::Registry::System(sys) if *sys != builtin => Some(sys),
        _ => None,
    };
    let layers = std::iter::once(&builtin)
        .chain(moved)
        .flat_map(|sys| sys.each().map(|(_, dir)| Root::split(dir, root.state())));
    let roots: Vec<Root> = std::iter::once(root.clone()).chain(layers).collect();
    let target = target::check(&opts.target, &roots)?;
    if let Some(txid) = txn::pending::find(&root.txn(), None, &target.path, &target.dir, false) {
        return Err(LaunchError::TargetPending {
            target: target.path,
            next: opts.recover_command(&txid),
            txid,
        });
    }
    Ok(Checked {
        inputs,
        target,
        runner,
        limits,
        early,
    })
}

/// The entry's limits lowered as the invoker asked; a value above the entry's is refused, never
/// clamped, with the command that asks the entry's value instead.
fn check_limits(entry: &Entry, opts: &Options) -> Result<proto::limits::Limits, LaunchError> {
    entry.run_limits().lowered(&opts.asked).map_err(|above| {
        let next = Next::again(
            vec![Opt::with(above.limit.option, above.entry.to_string())],
            vec![],
            opts.command()
                .arg(entry.name.as_str())
                .arg(above.limit.option)
                .arg(above.entry.to_string()),
        );
        LaunchError::LimitAboveEntry { above, next }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proto::Kind;

    /// What a consent check must come to: allowed, or refused with a kind and, for a mismatch,
    /// the flag that was wrongly given.
    type Expected = Result<(), (Kind, Option<&'static str>)>;

    #[test]
    fn consent_must_name_exactly_the_entrys_containment() {
        use Containment::{Audit, Process};
        let name = Name::new("hello").expect("valid");
        let root = Root::single("/r");
        // (containment, --allow-audit-plugin, --require-process-sandbox) → outcome.
        let cases: [(Containment, bool, bool, Expected); 8] = [
            (Audit, false, false, Err((Kind::ConsentMissing, None))),
            (Audit, true, false, Ok(())),
            (
                Audit,
                false,
                true,
                Err((Kind::ConsentMismatch, Some("--require-process-sandbox"))),
            ),
            (
                Audit,
                true,
                true,
                Err((Kind::ConsentMismatch, Some("--require-process-sandbox"))),
            ),
            (Process, false, false, Err((Kind::ConsentMissing, None))),
            (
                Process,
                true,
                false,
                Err((Kind::ConsentMismatch, Some("--allow-audit-plugin"))),
            ),
            (Process, false, true, Ok(())),
            (
                Process,
                true,
                true,
                Err((Kind::ConsentMismatch, Some("--allow-audit-plugin"))),
            ),
        ];
        for (containment, audit, process, expected) in cases {
            let given = Consent {
                allow_audit_plugin: audit,
                require_process_sandbox: process,
            };
            let got = check_consent(
                &name,
                containment,
                given,
                Next::cmd("dot-launch").root(&root),
            );
            let what = format!("{containment} with {given:?}");
            match (got, expected) {
                (Ok(()), Ok(())) => {}
                (Err(e), Err((kind, wrong))) => {
                    use proto::ToErrorObject;
                    assert_eq!(e.kind(), kind, "{what}");
                    let obj = e.to_error_object();
                    assert_eq!(obj.field.as_deref(), Some("containment"), "{what}");
                    let flag = consent_flag(containment);
                    // Never a command that drops a required sandbox.
                    let next = match (containment, process) {
                        (Audit, true) => None,
                        _ => Some(format!("dot-launch --root /r hello {flag}")),
                    };
                    assert_eq!(obj.next, next, "{what}");
                    match e {
                        LaunchError::ConsentMismatch { given, .. } => {
                            assert_eq!(Some(given), wrong, "{what}")
                        }
                        LaunchError::ConsentMissing { .. } => assert_eq!(wrong, None, "{what}"),
                        other => panic!("{what}: {other:?}"),
                    }
                }
                (got, expected) => panic!("{what}: {got:?}, expected {expected:?}"),
            }
        }
    }
}
