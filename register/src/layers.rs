//! The system layers as `dot-register` sees them (docs/registry.md "System layers"): the admin's
//! masks (`mask`, `unmask`) and `list` without `--root`, which shows every layer.

use crate::error::RegisterError;
use crate::report::{LayerReport, MaskItem, MaskReport, SystemList};
use crate::WriterLock;
use proto::layers::{self, Layer, SystemLayers};
use proto::layout::Root;
use proto::trust::{AuditAction, AuditOutcome, AuditRecord};
use proto::Name;
use std::io::ErrorKind;
use std::os::unix::fs::DirBuilderExt;
use std::path::PathBuf;
use verify::VerifyError;

/// Masks `name` in the admin layer (made, as `init --layer` makes one, with its missing parent
/// directories, when it does not exist):
/// writes `plugins.d/NAME.mask` (empty, 0644). Masking a name no layer has is allowed (a package
/// installed later stays hidden); masking it again changes nothing.
pub fn mask(sys: &SystemLayers, name: &Name) -> Result<MaskReport, RegisterError> {
    let admin = Root::single(sys.admin.clone());
    if !admin.path().exists() {
        // Its parents too (`SYSROOT/etc` in a scratch tree): system directories, 0755.
        if let Some(parent) = admin.path().parent().filter(|p| !p.exists()) {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o755)
                .create(parent)
                .map_err(|e| VerifyError::io(parent, e))?;
        }
        crate::init::init(&admin, false, true)?;
    }
    crate::check_registry_writable(&admin)?;
    let _lock = WriterLock::take(&admin)?;
    let path = layers::mask_path(admin.path(), name);
    let changed = !verify::layers::has_mask(&admin, name)?;
    if changed {
        crate::write_private(&path, b"")?;
        mask_audit(&admin, AuditAction::Mask, name)?;
    }
    let present = verify::layers::present_layers(sys)?;
    let h = verify::layers::holdings(&present, name)?;
    Ok(MaskReport {
        name: name.clone(),
        path: path.display().to_string(),
        masked: true,
        changed,
        hides: hidden(h),
    })
}

/// Removes the admin layer's mask of `name`, if there is one.
pub fn unmask(sys: &SystemLayers, name: &Name) -> Result<MaskReport, RegisterError> {
    let admin = Root::single(sys.admin.clone());
    let path = layers::mask_path(admin.path(), name);
    let Some(_) = verify::layers::check_layer(admin.path())? else {
        return Ok(MaskReport {
            name: name.clone(),
            path: path.display().to_string(),
            masked: false,
            changed: false,
            hides: Vec::new(),
        });
    };
    crate::check_registry_writable(&admin)?;
    let _lock = WriterLock::take(&admin)?;
    let changed = verify::layers::has_mask(&admin, name)?;
    if changed {
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            Err(e) => return Err(VerifyError::io(&path, e).into()),
        }
        let dir = admin.plugins();
        sys::fs::fsync_dir(&dir).map_err(|e| VerifyError::io(&dir, e))?;
        mask_audit(&admin, AuditAction::Unmask, name)?;
    }
    Ok(MaskReport {
        name: name.clone(),
        path: path.display().to_string(),
        masked: false,
        changed,
        hides: Vec::new(),
    })
}

/// The admin layer's change log line for a mask written or removed, as for every other change.
fn mask_audit(admin: &Root, action: AuditAction, name: &Name) -> Result<(), RegisterError> {
    let mut rec = AuditRecord::new(crate::now(), action, AuditOutcome::Allowed);
    rec.name = Some(name.to_string());
    crate::audit(admin, &rec)
}

/// The layers whose entries a mask over `h` hides.
fn hidden(h: layers::Holdings) -> Vec<Layer> {
    match layers::resolve(layers::Holdings {
        admin_mask: true,
        ..h
    }) {
        layers::Resolution::Masked { masks } => masks.into_iter().flatten().collect(),
        _ => Vec::new(),
    }
}

/// Every layer, every entry of each (verified in its own layer, with its status: active,
/// overridden or masked), and every mask.
pub fn list(sys: &SystemLayers) -> Result<SystemList, RegisterError> {
    let present = verify::layers::present_layers(sys)?;
    let layers = sys
        .each()
        .into_iter()
        .map(|(layer, dir)| LayerReport {
            layer,
            dir: dir.display().to_string(),
            present: present.iter().any(|(l, _)| *l == layer),
        })
        .collect();
    let mut entries = Vec::new();
    let mut masks = Vec::new();
    for (layer, root) in &present {
        for stem in verify::root::json_stems(&root.plugins())? {
            let mut item = match Name::new(&stem) {
                Ok(name) => {
                    let h = verify::layers::holdings(&present, &name)?;
                    let v = verify::layers::verify_in_layer(&present, *layer, &name);
                    let mut item = crate::list::item(root, &stem, v);
                    item.status = layers::status(h, *layer);
                    item
                }
                Err(e) => crate::list::item(root, &stem, Err(VerifyError::BadName(e))),
            };
            item.layer = Some(*layer);
            entries.push(item);
        }
        if *layer == Layer::Admin {
            for stem in mask_stems(root)? {
                let Ok(name) = Name::new(&stem) else { continue };
                let h = verify::layers::holdings(&present, &name)?;
                masks.push(MaskItem {
                    path: layers::mask_path(root.path(), &name).display().to_string(),
                    name,
                    hides: hidden(h),
                });
            }
        }
    }
    Ok(SystemList {
        layers,
        entries,
        masks,
    })
}

/// The names masked in the admin layer `root` (`plugins.d/*.mask`), sorted.
fn mask_stems(root: &Root) -> Result<Vec<String>, RegisterError> {
    Ok(verify::root::stems(&root.plugins(), layers::MASK_SUFFIX)?)
}

/// `--sysroot`, when given, for the system layers.
pub fn system(sysroot: Option<PathBuf>) -> SystemLayers {
    SystemLayers::new(sysroot.as_deref())
}
