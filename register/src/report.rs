//! What `dot-register` prints on success: typed, strictly parsed JSON.

use proto::layers::{Layer, Status};
use proto::{Containment, ErrorObject, Name, Sha256, Trust};
use serde::{Deserialize, Serialize};

/// `init`: the root and whether it is a development root.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InitReport {
    pub root: String,
    /// The state directory, when `--state` put it apart from the root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    pub dev: bool,
    /// The directories and files this run created (empty when the root was already complete).
    pub created: Vec<String>,
}

/// `add` and `dev`: what was registered.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AddReport {
    pub name: Name,
    pub version: semver::Version,
    pub trust: Trust,
    pub publisher: Option<Name>,
    /// The key that signed the entry (`None` for a local entry).
    pub key_id: Option<String>,
    pub sha256: Sha256,
    pub size: u64,
    pub containment: Containment,
    /// The pinned copy.
    pub store: String,
    /// An entry of the same name was replaced.
    pub replaced: bool,
}

/// `remove`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RemoveReport {
    pub name: Name,
    /// The files removed (the entry, and its signature if there was one).
    pub removed: Vec<String>,
}

/// One element of `list`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListItem {
    /// The entry's name (from the file name when the entry cannot be read).
    pub name: String,
    pub version: Option<semver::Version>,
    pub trust: Option<Trust>,
    pub publisher: Option<Name>,
    pub sha256: Option<Sha256>,
    pub containment: Option<Containment>,
    /// `dot-verify entry` (and so `dot-launch`) accepts this entry now.
    pub valid: bool,
    /// Why not, as the error object `dot-verify entry` prints.
    pub problem: Option<ErrorObject>,
    /// The entry's signed expiry (unix seconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires: Option<u64>,
    /// What comes due within the policy's warning window (`dot-verify doctor`'s warnings, one line:
    /// the entry's expiry, its key's `not_after`, its signature's maximum age).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
    /// For a valid entry: whether everything it executes is pinned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dependencies: Option<proto::trust::Dependencies>,
    /// Without `--root`: the system layer the entry is in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layer: Option<Layer>,
    /// Without `--root`: whether this entry answers for its name (`active`), a higher layer's
    /// does (`overridden`), or an admin mask hides it (`masked`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<Status>,
    /// For a valid entry: the checks it passed, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<verify::batch::Check>,
    /// When its store file was reached: which entry of this list it was read and hashed for (each
    /// distinct store file is digested once per list).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<verify::batch::DigestSource>,
}

/// `list` without `--root`: every system layer, every entry of each, every admin mask.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SystemList {
    pub layers: Vec<LayerReport>,
    pub entries: Vec<ListItem>,
    pub masks: Vec<MaskItem>,
}

/// One system layer of `list`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LayerReport {
    pub layer: Layer,
    pub dir: String,
    /// The directory exists (a layer that does not holds nothing).
    pub present: bool,
}

/// One admin mask of `list`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MaskItem {
    pub name: Name,
    pub path: String,
    /// The layers whose entries of the name it hides (empty: none has one).
    pub hides: Vec<Layer>,
}

/// `mask` and `unmask`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MaskReport {
    pub name: Name,
    /// The mask file, `ADMIN/plugins.d/NAME.mask`.
    pub path: String,
    /// The name is masked now.
    pub masked: bool,
    /// This command changed something (false: it was already so).
    pub changed: bool,
    /// The layers whose entries of the name the mask hides.
    pub hides: Vec<Layer>,
}
