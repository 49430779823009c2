//! The system registry's layers (docs/registry.md "System layers"): where they are, and which
//! layer answers for a name. Pure rules and path arithmetic, no I/O.
//!
//! Without `--root`, the tools read two layers: the *vendor* layer ([`VENDOR_DIR`], written only by
//! packages) under the *admin* layer ([`ADMIN_DIR`], written by `dot-register` run as root). Both
//! directories are fixed when dot is built (the Makefile sets them from `PREFIX` and `SYSCONFDIR`);
//! nothing read at run time moves them, except the explicit `--sysroot DIR` option, which puts both
//! under `DIR` (as `dpkg --root` does) for a scratch tree or a package test.

use crate::name::Name;
use serde::{Deserialize, Serialize};
use std::path::{Component, Path, PathBuf};

/// The vendor layer, fixed at build time (`DOT_VENDOR_DIR`, default `/usr/lib/dot`).
pub const VENDOR_DIR: &str = match option_env!("DOT_VENDOR_DIR") {
    Some(d) => d,
    None => "/usr/lib/dot",
};

/// The admin layer, fixed at build time (`DOT_ADMIN_DIR`, default `/etc/dot`).
pub const ADMIN_DIR: &str = match option_env!("DOT_ADMIN_DIR") {
    Some(d) => d,
    None => "/etc/dot",
};

/// The suffix of an admin mask, `plugins.d/NAME.mask`.
pub const MASK_SUFFIX: &str = ".mask";

/// Which registry answered: one of the two system layers, or the single root named by `--root`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Layer {
    Vendor,
    Admin,
    Root,
}

impl Layer {
    pub fn as_str(self) -> &'static str {
        match self {
            Layer::Vendor => "vendor",
            Layer::Admin => "admin",
            Layer::Root => "root",
        }
    }
}

impl std::fmt::Display for Layer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The two system layer directories, under an optional `--sysroot`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SystemLayers {
    pub vendor: PathBuf,
    pub admin: PathBuf,
}

impl SystemLayers {
    /// The built-in layer directories, each under `sysroot` when one is given (`/usr/lib/dot`
    /// under `/scratch` is `/scratch/usr/lib/dot`).
    pub fn new(sysroot: Option<&Path>) -> SystemLayers {
        SystemLayers {
            vendor: under(sysroot, Path::new(VENDOR_DIR)),
            admin: under(sysroot, Path::new(ADMIN_DIR)),
        }
    }

    /// The layers in the order they are read: the one that wins last.
    pub fn each(&self) -> [(Layer, &Path); 2] {
        [(Layer::Vendor, &self.vendor), (Layer::Admin, &self.admin)]
    }
}

/// `path` under `sysroot`: its components below `/` appended to `sysroot`.
fn under(sysroot: Option<&Path>, path: &Path) -> PathBuf {
    match sysroot {
        None => path.to_path_buf(),
        Some(s) => {
            let mut out = s.to_path_buf();
            out.extend(
                path.components()
                    .filter(|c| matches!(c, Component::Normal(_))),
            );
            out
        }
    }
}

/// The mask of `name` in a layer directory: `plugins.d/NAME.mask`.
pub fn mask_path(layer_dir: &Path, name: &Name) -> PathBuf {
    layer_dir
        .join(crate::layout::PLUGINS_DIR)
        .join(format!("{name}{MASK_SUFFIX}"))
}

/// What the layers hold for one name.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Holdings {
    /// The vendor layer has `plugins.d/NAME.json`.
    pub vendor_entry: bool,
    /// The admin layer has `plugins.d/NAME.json`.
    pub admin_entry: bool,
    /// The admin layer has `plugins.d/NAME.mask`.
    pub admin_mask: bool,
}

/// Which layer answers for a name, and what it hides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resolution {
    /// `layer`'s entry answers; `overrides` is the lower layer's entry it hides.
    Entry {
        layer: Layer,
        overrides: Option<Layer>,
    },
    /// The admin mask hides the name; `masks` lists the layers whose entries it hides (none: a
    /// mask set before any package shipped the name).
    Masked { masks: [Option<Layer>; 2] },
    /// No layer has the name.
    Missing,
}

/// The precedence rule: an admin mask hides the name in every layer (its own entry too: a mask is
/// the admin's "never", undone only by `dot-register unmask`); else the admin entry answers and
/// hides the vendor's; else the vendor entry answers.
pub fn resolve(h: Holdings) -> Resolution {
    if h.admin_mask {
        return Resolution::Masked {
            masks: [
                h.vendor_entry.then_some(Layer::Vendor),
                h.admin_entry.then_some(Layer::Admin),
            ],
        };
    }
    match (h.admin_entry, h.vendor_entry) {
        (true, vendor) => Resolution::Entry {
            layer: Layer::Admin,
            overrides: vendor.then_some(Layer::Vendor),
        },
        (false, true) => Resolution::Entry {
            layer: Layer::Vendor,
            overrides: None,
        },
        (false, false) => Resolution::Missing,
    }
}

/// How `dot-register list` reports one layer's entry of a name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// This entry answers for the name.
    Active,
    /// A higher layer's entry answers instead.
    Overridden,
    /// An admin mask hides it.
    Masked,
}

/// The status of `layer`'s entry of a name whose layers hold `h` (`None`: that layer has no entry).
pub fn status(h: Holdings, layer: Layer) -> Option<Status> {
    let has = match layer {
        Layer::Vendor => h.vendor_entry,
        Layer::Admin => h.admin_entry,
        Layer::Root => return None,
    };
    if !has {
        return None;
    }
    Some(match resolve(h) {
        Resolution::Masked { .. } => Status::Masked,
        Resolution::Entry { layer: l, .. } if l == layer => Status::Active,
        _ => Status::Overridden,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(vendor_entry: bool, admin_entry: bool, admin_mask: bool) -> Holdings {
        Holdings {
            vendor_entry,
            admin_entry,
            admin_mask,
        }
    }

    #[test]
    fn precedence_table() {
        use Layer::*;
        use Resolution::*;
        let table = [
            (h(false, false, false), Missing),
            (
                h(true, false, false),
                Entry {
                    layer: Vendor,
                    overrides: None,
                },
            ),
            (
                h(false, true, false),
                Entry {
                    layer: Admin,
                    overrides: None,
                },
            ),
            (
                h(true, true, false),
                Entry {
                    layer: Admin,
                    overrides: Some(Vendor),
                },
            ),
            (
                h(true, false, true),
                Masked {
                    masks: [Some(Vendor), None],
                },
            ),
            (
                h(false, false, true),
                Masked {
                    masks: [None, None],
                },
            ),
            (
                h(false, true, true),
                Masked {
                    masks: [None, Some(Admin)],
                },
            ),
            (
                h(true, true, true),
                Masked {
                    masks: [Some(Vendor), Some(Admin)],
                },
            ),
        ];
        for (holdings, want) in table {
            assert_eq!(resolve(holdings), want, "{holdings:?}");
        }
    }

    #[test]
    fn status_of_each_layers_entry() {
        use Layer::*;
        assert_eq!(status(h(true, false, false), Vendor), Some(Status::Active));
        assert_eq!(status(h(true, false, false), Admin), None);
        assert_eq!(
            status(h(true, true, false), Vendor),
            Some(Status::Overridden)
        );
        assert_eq!(status(h(true, true, false), Admin), Some(Status::Active));
        assert_eq!(status(h(true, true, true), Vendor), Some(Status::Masked));
        assert_eq!(status(h(true, true, true), Admin), Some(Status::Masked));
        assert_eq!(status(h(true, true, true), Root), None);
    }

    #[test]
    fn sysroot_prefixes_both_layers() {
        let plain = SystemLayers::new(None);
        assert_eq!(plain.vendor, Path::new(VENDOR_DIR));
        assert_eq!(plain.admin, Path::new(ADMIN_DIR));
        let s = SystemLayers::new(Some(Path::new("/scratch")));
        assert_eq!(s.vendor, Path::new("/scratch").join(&VENDOR_DIR[1..]));
        assert_eq!(s.admin, Path::new("/scratch").join(&ADMIN_DIR[1..]));
        let name = Name::new("hello").unwrap();
        assert_eq!(
            mask_path(&s.admin, &name),
            s.admin.join("plugins.d/hello.mask")
        );
    }
}
