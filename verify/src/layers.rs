//! Resolving a name in the registry a tool was pointed at: the single root named by `--root`, or
//! the system layers (`proto::layers`) when there is none. `dot-verify entry` and `dot-launch` both
//! call [`verify_named`], so the layer that answers a check is the layer that answers a launch.
//!
//! For the system layers:
//! 1. each layer directory that exists is checked as a registry (`check_layer`); one that does not
//!    exist holds nothing
//! 2. what each layer holds for NAME (`plugins.d/NAME.json`, the admin's `plugins.d/NAME.mask`)
//!    decides which layer answers (`proto::layers::resolve`): a mask refuses (`entry-masked`)
//! 3. the answering layer's entry is verified exactly as a root's (`entry::verify_entry`) against
//!    that layer's own trust store, with every other layer's deny list and revocations applied too

use crate::entry::{self, Verified};
use crate::error::VerifyError;
use crate::root::{self, RootInfo};
use crate::trust::{load_doc, revocations, OtherLayer, TrustContext};
use cli::Next;
use proto::layers::{self, Holdings, Layer, Resolution, SystemLayers};
use proto::layout::Root;
use proto::trust::DenyList;
use proto::Name;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

/// Where a tool reads entries from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Registry {
    /// `--root DIR`: one root, as always.
    Root(Root),
    /// No `--root`: the vendor and admin layers (under `--sysroot`, when given).
    System(SystemLayers),
}

impl Registry {
    /// `--root` or, without it, the system layers under `--sysroot`. Both at once is a usage
    /// error (`None`): `--sysroot` moves the system layers, which `--root` does not use.
    pub fn from_args(root: Option<PathBuf>, sysroot: Option<PathBuf>) -> Option<Registry> {
        match (root, sysroot) {
            (Some(_), Some(_)) => None,
            (Some(r), None) => Some(Registry::Root(Root::single(r))),
            (None, s) => Some(Registry::System(SystemLayers::new(s.as_deref()))),
        }
    }
}

/// Which layer answered a name, and what its entry hides.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    pub layer: Layer,
    /// The registry the entry was read from (the root, or the layer's directory).
    pub root: Root,
    /// The lower layer whose entry of the name this one overrides.
    pub overrides: Option<Layer>,
}

/// Checks a system layer directory as a registry: `None` if it does not exist; else it is checked
/// as a root's registry part (`root::check_root`: it and its registry directories real directories
/// owned by root or by us and writable by no one else). A layer holds no state, and is never a
/// development root (a `DEV` marker in it is not honoured: local entries are refused there).
/// A layer reached through a symbolic link whose target is missing (the layer itself, or a
/// directory above it: a volume not mounted yet) is not absent but `root-unsafe`: its masks,
/// deny list and revocations would silently stop applying.
pub fn check_layer(dir: &Path) -> Result<Option<Root>, VerifyError> {
    match std::fs::metadata(dir) {
        Ok(_) => {}
        Err(e) if e.kind() == ErrorKind::NotFound => {
            return match dangling_link(dir) {
                Some((link, to)) => Err(VerifyError::RootUnsafe {
                    path: link.clone(),
                    reason: format!(
                        "the system layer {} is reached through the symbolic link {} to {}, which does not exist; a layer that cannot be read is not an absent one (its masks, deny list and revocations would stop applying): mount or restore it, or remove the link",
                        dir.display(),
                        link.display(),
                        to.display()
                    ),
                }),
                None => Ok(None),
            };
        }
        Err(e) => return Err(VerifyError::io(dir, e)),
    }
    let layer = Root::single(dir);
    match root::check_root(&layer) {
        Ok(_) => Ok(Some(layer)),
        // What makes a layer complete is `init --layer`, not a root's `init`.
        Err(VerifyError::RootMissing {
            path, root, what, ..
        }) => Err(VerifyError::RootMissing {
            path,
            next: Next::cmd("dot-register")
                .args(["init", "--layer", "--root"])
                .arg(&root),
            root,
            what,
        }),
        Err(e) => Err(e),
    }
}

/// The nearest of `path` and its parents that is a symbolic link whose target does not exist
/// (with that target), when `path` itself cannot be reached; `None` when the path simply ends
/// before it (a real directory, or a link that resolves, is the last that exists).
fn dangling_link(path: &Path) -> Option<(PathBuf, PathBuf)> {
    for p in path.ancestors() {
        match std::fs::symlink_metadata(p) {
            Ok(m) if m.file_type().is_symlink() => {
                return match std::fs::metadata(p) {
                    Err(e) if e.kind() == ErrorKind::NotFound => {
                        Some((p.to_path_buf(), std::fs::read_link(p).unwrap_or_default()))
                    }
                    _ => None,
                };
            }
            Ok(_) => return None,
            Err(_) => continue,
        }
    }
    None
}

/// Refuses `root` when it is one of the system layers built into the tools (by device and inode,
/// so a symbolic link, a bind mount or another spelling of the path is seen through): named by
/// `--root`, a layer would be read as a root of its own, and the admin layer's masks, deny list,
/// revocations, thresholds and pins would not apply to it. The system layers are read without
/// `--root`. A layer that does not exist, or a root that cannot be examined, refuses nothing here
/// (the root's own checks come next).
pub fn check_not_a_layer(root: &Root) -> Result<(), VerifyError> {
    check_not_among(root, &SystemLayers::new(None))
}

/// [`check_not_a_layer`] against the layers `sys`.
fn check_not_among(root: &Root, sys: &SystemLayers) -> Result<(), VerifyError> {
    use std::os::unix::fs::MetadataExt;
    let ident = |p: &Path| std::fs::metadata(p).ok().map(|m| (m.dev(), m.ino()));
    let Some(mine) = ident(root.path()) else {
        return Ok(());
    };
    for (layer, dir) in sys.each() {
        if ident(dir) == Some(mine) {
            return Err(VerifyError::RootUnsafe {
                path: root.path().to_path_buf(),
                reason: format!(
                    "it is the system's {layer} layer ({}): as a root, the admin layer's masks, deny list, revocations, thresholds and name pins would not apply to it; the system layers are read without --root",
                    dir.display()
                ),
            });
        }
    }
    Ok(())
}

/// The system layers that exist, each checked (`check_layer`), vendor first.
pub fn present_layers(sys: &SystemLayers) -> Result<Vec<(Layer, Root)>, VerifyError> {
    let mut out = Vec::new();
    for (layer, dir) in sys.each() {
        if let Some(root) = check_layer(dir)? {
            out.push((layer, root));
        }
    }
    Ok(out)
}

/// Whether `root` has `plugins.d/NAME.json` (whatever it is: the verification judges it).
pub fn has_entry(root: &Root, name: &Name) -> Result<bool, VerifyError> {
    exists(&root.entry(name))
}

/// Whether the admin layer `admin` masks `name`: `plugins.d/NAME.mask` exists, and it must be a
/// regular file of root's or ours that no one else can write, like every registry document.
pub fn has_mask(admin: &Root, name: &Name) -> Result<bool, VerifyError> {
    let path = layers::mask_path(admin.path(), name);
    Ok(entry::read_doc(&path)?.is_some())
}

fn exists(p: &Path) -> Result<bool, VerifyError> {
    match std::fs::symlink_metadata(p) {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(false),
        Err(e) => Err(VerifyError::io(p, e)),
    }
}

/// What the present layers hold for `name`.
pub fn holdings(present: &[(Layer, Root)], name: &Name) -> Result<Holdings, VerifyError> {
    let mut h = Holdings::default();
    for (layer, root) in present {
        match layer {
            Layer::Vendor => h.vendor_entry = has_entry(root, name)?,
            Layer::Admin => {
                h.admin_entry = has_entry(root, name)?;
                h.admin_mask = has_mask(root, name)?;
            }
            Layer::Root => {}
        }
    }
    Ok(h)
}

/// What the layer `root` contributes to the trust decisions about another layer's entries: its
/// deny list and every revocation in its trust store; and when it is `above` the entry's layer, its
/// publisher records (`crate::signers`). A malformed document there refuses (fail closed: an
/// unreadable revocation is not an absent one).
pub fn other_layer(root: &Root, above: bool) -> Result<OtherLayer, VerifyError> {
    let deny = load_doc(&root.deny_list(), DenyList::parse)?.unwrap_or_else(DenyList::empty);
    let publishers = crate::signers::load_store(root)?;
    Ok(OtherLayer {
        root: root.clone(),
        deny,
        revoked: revocations(&publishers),
        above: match above {
            true => publishers,
            false => Vec::new(),
        },
    })
}

/// Which layer answers `name` in the system layers `sys`, refusing a masked or missing name.
pub fn answer(
    sys: &SystemLayers,
    name: &Name,
) -> Result<(Answer, Vec<(Layer, Root)>), VerifyError> {
    answer_in(sys, present_layers(sys)?, name)
}

/// [`answer`] among the layers `present` (what [`present_layers`] found).
fn answer_in(
    sys: &SystemLayers,
    present: Vec<(Layer, Root)>,
    name: &Name,
) -> Result<(Answer, Vec<(Layer, Root)>), VerifyError> {
    let h = holdings(&present, name)?;
    let root_of = |l: Layer| {
        present
            .iter()
            .find(|(x, _)| *x == l)
            .map(|(_, r)| r.clone())
    };
    match layers::resolve(h) {
        Resolution::Entry { layer, overrides } => {
            let root = root_of(layer).unwrap_or_else(|| Root::single(sys.admin.clone()));
            Ok((
                Answer {
                    layer,
                    root,
                    overrides,
                },
                present,
            ))
        }
        Resolution::Masked { masks } => Err(VerifyError::EntryMasked {
            name: name.to_string(),
            path: layers::mask_path(&sys.admin, name),
            masks: masks.into_iter().flatten().collect(),
        }),
        Resolution::Missing => Err(missing(sys, name)),
    }
}

/// No layer has `name` (no `--root` was given, nor `DOT_ROOT`): the message names each layer
/// searched. Registering it signed in the admin layer is the remedy (`next`); where that layer
/// does not exist, `next` makes it first, as a layer (`init --layer`: readable by every user, as a
/// launch from the system layers needs), never as a private root; the refusal that follows offers
/// the `add`.
fn missing(sys: &SystemLayers, name: &Name) -> VerifyError {
    let admin = Root::single(sys.admin.clone());
    let layers: Vec<String> = sys
        .each()
        .iter()
        .map(|(layer, dir)| {
            let state = match dir.is_dir() {
                true => "",
                false => ", which does not exist",
            };
            format!("the {} layer {}{state}", layer.as_str(), dir.display())
        })
        .collect();
    let exists = sys.admin.is_dir();
    let then = match exists {
        true => "",
        false => {
            "; make the admin layer (next), trust the entry's publisher there, then register it"
        }
    };
    let searched = format!(
        "in the system layers (no --root nor DOT_ROOT was given): {}{then}",
        layers.join("; ")
    );
    let next = match exists {
        true => entry::signed_hint(&admin, name),
        false => root::init_layer(&sys.admin),
    };
    VerifyError::EntryMissing {
        name: name.to_string(),
        path: admin.entry(name),
        next,
        searched: Some(searched),
    }
}

/// The `--sysroot` that puts the built-in layers where `sys` has them, if any.
pub fn sysroot_of(sys: &SystemLayers) -> Option<PathBuf> {
    let builtin = SystemLayers::new(None);
    if *sys == builtin {
        return None;
    }
    let rel = Path::new(layers::ADMIN_DIR).strip_prefix("/").ok()?;
    let mut s = sys.admin.clone();
    for _ in rel.components() {
        s.pop();
    }
    Some(s)
}

/// Verifies the entry `name` of `reg` (see the module documentation): for a root, exactly
/// `entry::verify_entry`; for the system layers, the answering layer's entry against its own
/// trust store and every layer's deny list and revocations.
pub fn verify_named(reg: &Registry, name: &Name) -> Result<(Verified, Answer), VerifyError> {
    verify_checked_named(reg, check_registry(reg, name)?, name, entry::Digest::Now)
}

/// What [`check_registry`] found of a registry's layout.
#[derive(Debug)]
pub enum Checked {
    /// The root's layout, checked.
    Root(RootInfo),
    /// The system layers present, each checked (at least one).
    System(Vec<(Layer, Root)>),
}

/// The registry's layout alone, before anything is read from it: the root's, or the system
/// layers present — with none, the name's refusal (`entry-missing`), as [`answer`] gives it.
pub fn check_registry(reg: &Registry, name: &Name) -> Result<Checked, VerifyError> {
    match reg {
        Registry::Root(root) => {
            check_not_a_layer(root)?;
            Ok(Checked::Root(root::check_root(root)?))
        }
        Registry::System(sys) => {
            let present = present_layers(sys)?;
            if present.is_empty() {
                return Err(missing(sys, name));
            }
            Ok(Checked::System(present))
        }
    }
}

/// [`verify_named`] after [`check_registry`] found `checked` (the layout is not checked again).
/// `digest` says when a leased copy is digested (`entry::Digest`).
pub fn verify_checked_named(
    reg: &Registry,
    checked: Checked,
    name: &Name,
    digest: entry::Digest,
) -> Result<(Verified, Answer), VerifyError> {
    match (reg, checked) {
        (Registry::Root(root), Checked::Root(info)) => {
            let ctx = TrustContext::load(root)?;
            let v = entry::verify_checked_when(root, info, &ctx, name, digest)?;
            Ok((
                v,
                Answer {
                    layer: Layer::Root,
                    root: root.clone(),
                    overrides: None,
                },
            ))
        }
        (Registry::System(sys), Checked::System(present)) => {
            let (answer, present) = answer_in(sys, present, name)?;
            let v = verify_in_layer_when(&present, answer.layer, name, digest)?;
            Ok((v, answer))
        }
        // A check of the other kind of registry: check this one.
        (reg, _) => verify_checked_named(reg, check_registry(reg, name)?, name, digest),
    }
}

/// Verifies `layer`'s own entry of `name` (whichever layer answers for the name) against that
/// layer's trust store, with every other present layer's deny list and revocations.
pub fn verify_in_layer(
    present: &[(Layer, Root)],
    layer: Layer,
    name: &Name,
) -> Result<Verified, VerifyError> {
    verify_in_layer_when(present, layer, name, entry::Digest::Now)
}

/// [`verify_in_layer`], a leased copy digested when `digest` says.
fn verify_in_layer_when(
    present: &[(Layer, Root)],
    layer: Layer,
    name: &Name,
    digest: entry::Digest,
) -> Result<Verified, VerifyError> {
    let Some((_, root)) = present.iter().find(|(l, _)| *l == layer) else {
        return Err(VerifyError::EntryMissing {
            name: name.to_string(),
            path: PathBuf::from(name.as_str()),
            next: Next::cmd("dot-register").arg("list"),
            searched: None,
        });
    };
    let mut ctx = TrustContext::load(root)?;
    for (l, other) in present {
        if *l != layer {
            // The admin layer is above the vendor layer: its decisions about a publisher bind it.
            let above = layer == Layer::Vendor && *l == Layer::Admin;
            ctx.others.push(other_layer(other, above)?);
        }
    }
    match entry::verify_checked_when(root, RootInfo { dev: false }, &ctx, name, digest) {
        Err(e) if layer == Layer::Vendor => Err(entry::in_vendor_layer(e)),
        Ok(mut v) if layer == Layer::Vendor => {
            v.unconfirmed = v.unconfirmed.map(entry::Unconfirmed::in_vendor_layer);
            Ok(v)
        }
        other => other,
    }
}

/// The policy's `sensitive_inputs` of every registry that applies to a launch from `reg`: the
/// root's, or every present system layer's (a layer's list applies to every layer's entries).
pub fn sensitive_inputs(reg: &Registry) -> Result<Vec<String>, VerifyError> {
    let roots = match reg {
        Registry::Root(root) => vec![root.clone()],
        Registry::System(sys) => present_layers(sys)?.into_iter().map(|(_, r)| r).collect(),
    };
    let mut out = Vec::new();
    for r in roots {
        out.extend(TrustContext::load(&r)?.policy.sensitive_inputs);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_layer_named_as_a_root_is_refused_by_its_identity() {
        let dir = testkit::TempDir::new();
        let sys = SystemLayers::new(Some(dir.path()));
        std::fs::create_dir_all(&sys.vendor).expect("vendor");
        std::fs::create_dir_all(&sys.admin).expect("admin");
        let link = dir.join("link");
        std::os::unix::fs::symlink(&sys.admin, &link).expect("link");
        for (named, layer) in [(&sys.vendor, "vendor"), (&link, "admin")] {
            match check_not_among(&Root::single(named), &sys) {
                Err(VerifyError::RootUnsafe { reason, .. }) => {
                    assert!(
                        reason.contains(&format!("system's {layer} layer")),
                        "{reason}"
                    )
                }
                other => panic!("{}: {other:?}", named.display()),
            }
        }
        let other = dir.join("other");
        std::fs::create_dir(&other).expect("other");
        assert!(check_not_among(&Root::single(&other), &sys).is_ok());
        assert!(check_not_among(&Root::single(dir.join("missing")), &sys).is_ok());
    }

    #[test]
    fn a_dangling_link_on_the_way_to_a_layer_is_found() {
        let dir = testkit::TempDir::new();
        let etc = dir.join("etc");
        std::fs::create_dir(&etc).expect("etc");
        assert_eq!(dangling_link(&etc.join("dot")), None, "simply absent");
        std::os::unix::fs::symlink(dir.join("gone"), etc.join("dot")).expect("link");
        assert_eq!(
            dangling_link(&etc.join("dot")),
            Some((etc.join("dot"), dir.join("gone")))
        );
        let up = dir.join("usr-local-etc");
        std::os::unix::fs::symlink(dir.join("volume"), &up).expect("link");
        assert_eq!(
            dangling_link(&up.join("dot")),
            Some((up.clone(), dir.join("volume")))
        );
        std::fs::create_dir(dir.join("volume")).expect("volume");
        assert_eq!(dangling_link(&up.join("dot")), None, "the link resolves");
    }

    #[test]
    fn the_sysroot_is_recovered_from_the_layers() {
        assert_eq!(sysroot_of(&SystemLayers::new(None)), None);
        let s = Path::new("/scratch dir");
        assert_eq!(sysroot_of(&SystemLayers::new(Some(s))).as_deref(), Some(s));
    }

    #[test]
    fn root_and_sysroot_are_exclusive() {
        assert_eq!(
            Registry::from_args(Some("/r".into()), Some("/s".into())),
            None
        );
        assert_eq!(
            Registry::from_args(Some("/r".into()), None),
            Some(Registry::Root(Root::single("/r")))
        );
        assert_eq!(
            Registry::from_args(None, None),
            Some(Registry::System(SystemLayers::new(None)))
        );
    }
}
