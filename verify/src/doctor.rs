//! `dot-verify doctor`: every entry of a root verified exactly as `dot-launch` verifies it, and
//! what comes due ahead of time: an entry's signed `expires`, its signing key's `not_after`, its
//! signature reaching the policy's `max_signature_age_secs`, and any publisher key's `not_after`.
//!
//! `due` is the one place these warnings are computed; `dot-register list` uses it too.

use crate::batch::{Batch, Check, DigestSource};
use crate::entry::{self, Verified};
use crate::error::VerifyError;
use crate::layers;
use crate::root;
use crate::trust::TrustContext;
use proto::layers::{Layer, SystemLayers};
use proto::layout::Root;
use proto::{ErrorObject, Name, ToErrorObject};
use serde::{Deserialize, Serialize};

/// The schema of the doctor report.
pub const DOCTOR_SCHEMA: u32 = 1;

const DAY: u64 = 86_400;

/// What comes due.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DueKind {
    /// The entry's signed `expires`: from then on it is refused (`entry-expired`).
    EntryExpires,
    /// The signing key's `not_after`: signatures it makes from then on are refused (the entry's
    /// existing signature stays valid).
    KeyNotAfter,
    /// The signature reaches the policy's maximum age: from then on it is refused
    /// (`signature-too-old`).
    SignatureMaxAge,
}

/// One warning: something that comes due within the window.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Due {
    pub what: DueKind,
    /// Unix seconds when it comes due.
    pub at: u64,
    /// Whole days left (rounded down: 0 means less than a day).
    pub days: u64,
    /// The key, for `key-not-after` and `signature-max-age`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_id: Option<String>,
}

impl Due {
    /// One line for people.
    pub fn describe(&self) -> String {
        let key = self.key_id.as_deref().unwrap_or("");
        match self.what {
            DueKind::EntryExpires => format!("expires in {} day(s)", self.days),
            DueKind::KeyNotAfter => format!("key {key} ends in {} day(s)", self.days),
            DueKind::SignatureMaxAge => {
                format!("signature reaches the maximum age in {} day(s)", self.days)
            }
        }
    }
}

/// `Some` when `at` is still ahead of `now` and less than `warn_days` days away.
fn due_at(
    now: u64,
    warn_days: u64,
    what: DueKind,
    at: u64,
    key_id: Option<&String>,
) -> Option<Due> {
    let left = at.checked_sub(now).filter(|l| *l > 0)?;
    (left < warn_days.saturating_mul(DAY)).then(|| Due {
        what,
        at,
        days: left / DAY,
        key_id: key_id.cloned(),
    })
}

/// What of a verified entry comes due within `warn_days` days of `ctx.now`, in the order: the
/// entry's expiry, the signing key's end, the signature's maximum age.
pub fn due(ctx: &TrustContext, v: &Verified, warn_days: u64) -> Vec<Due> {
    let key = v.key_id.as_ref();
    let max_age_at = ctx
        .policy
        .max_signature_age_secs
        .zip(v.signed_at)
        .map(|(max, at)| at.saturating_add(max));
    [
        v.entry.expires.map(|t| (DueKind::EntryExpires, t, None)),
        v.key_not_after.map(|t| (DueKind::KeyNotAfter, t, key)),
        max_age_at.map(|t| (DueKind::SignatureMaxAge, t, key)),
    ]
    .into_iter()
    .flatten()
    .filter_map(|(what, at, key)| due_at(ctx.now, warn_days, what, at, key))
    .collect()
}

/// The output of `dot-verify doctor`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DoctorReport {
    pub schema: u32,
    /// The time the report is for (unix seconds).
    pub now: u64,
    /// The warning window in days.
    pub warn_days: u64,
    /// Every entry is valid and nothing comes due within the window.
    pub ok: bool,
    /// Every `plugins.d/*.json`, sorted by name.
    pub entries: Vec<DoctorEntry>,
    /// Every `trust/publishers/*.json`, sorted by id.
    pub publishers: Vec<DoctorPublisher>,
}

/// One entry of the doctor report.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DoctorEntry {
    /// From the file name.
    pub name: String,
    /// Without `--root`: the system layer whose entry a launch of the name would run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layer: Option<Layer>,
    /// `dot-verify entry` (and so `dot-launch`) accepts this entry now.
    pub valid: bool,
    /// Why not, as the error object `dot-verify entry` prints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<ErrorObject>,
    /// For a valid entry: what comes due within the window.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub due: Vec<Due>,
    /// For a valid entry: the checks it passed, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<Check>,
    /// When its store file was reached: which entry of this report it was read and hashed for
    /// (each distinct store file is digested once per report).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<DigestSource>,
}

/// One publisher of the doctor report.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DoctorPublisher {
    /// From the file name.
    pub id: String,
    /// Without `--root`: the system layer whose trust store holds the record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layer: Option<Layer>,
    /// Why the publisher record cannot be used (malformed, wrongly named).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<ErrorObject>,
    /// Keys (not revoked, of a publisher not revoked) whose `not_after` is within the window.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub due: Vec<Due>,
}

/// Checks the root, then every entry with `verify_entry` and every publisher record, against the
/// warning window (`warn_days`, default the policy's `expiry_warning_days`).
/// The entries share one [`Batch`]: each distinct store file is digested once.
pub fn doctor(root: &Root, warn_days: Option<u64>) -> Result<DoctorReport, VerifyError> {
    // A system layer is reported as the system layers are read, not as a root of its own.
    layers::check_not_a_layer(root)?;
    let batch = Batch::new(root)?;
    let ctx = batch.ctx();
    let warn_days = warn_days.unwrap_or(ctx.policy.expiry_warning_days);
    let entries: Vec<DoctorEntry> = root::json_stems(&root.plugins())?
        .into_iter()
        .map(|stem| doctor_entry(&batch, warn_days, stem))
        .collect();
    let publishers: Vec<DoctorPublisher> = root::json_stems(&root.publishers())?
        .into_iter()
        .map(|stem| doctor_publisher(root, ctx, warn_days, stem))
        .collect();
    let ok = entries.iter().all(|e| e.valid && e.due.is_empty())
        && publishers
            .iter()
            .all(|p| p.problem.is_none() && p.due.is_empty());
    Ok(DoctorReport {
        schema: DOCTOR_SCHEMA,
        now: ctx.now,
        warn_days,
        ok,
        entries,
        publishers,
    })
}

/// [`doctor`] of the system layers (`dot-verify doctor` without `--root`), as `entry` and
/// `list` read them: every name that a present layer's `plugins.d` holds is verified as a launch
/// of it would be (admin over vendor, every layer's deny list and revocations applied; a name the
/// admin masks is not reported: no launch runs it), and every publisher of each layer. The window
/// defaults to the admin layer's policy, else the vendor's. No layer present: an empty report.
pub fn doctor_system(
    sys: &SystemLayers,
    warn_days: Option<u64>,
) -> Result<DoctorReport, VerifyError> {
    let present = layers::present_layers(sys)?;
    let mut ctxs = Vec::new();
    for (layer, root) in &present {
        ctxs.push((*layer, root, TrustContext::load(root)?));
    }
    let policy_days = ctxs
        .iter()
        .rev()
        .map(|(_, _, c)| c.policy.expiry_warning_days)
        .next();
    let warn_days = warn_days
        .or(policy_days)
        .unwrap_or(proto::trust::Policy::default().expiry_warning_days);
    let mut names = std::collections::BTreeSet::new();
    for (_, root) in &present {
        names.extend(root::json_stems(&root.plugins())?);
    }
    let reg = layers::Registry::System(sys.clone());
    let mut entries = Vec::new();
    for stem in names {
        let verified = Name::new(&stem)
            .map_err(VerifyError::BadName)
            .and_then(|n| layers::verify_named(&reg, &n));
        entries.push(match verified {
            Ok((v, answer)) => {
                let ctx = ctxs.iter().find(|(l, _, _)| *l == answer.layer);
                DoctorEntry {
                    due: ctx
                        .map(|(_, _, c)| due(c, &v, warn_days))
                        .unwrap_or_default(),
                    name: stem,
                    layer: Some(answer.layer),
                    valid: true,
                    problem: None,
                    // The system layers are verified entry by entry (no batch across layers).
                    checks: Vec::new(),
                    digest: None,
                }
            }
            Err(VerifyError::EntryMasked { .. }) => continue,
            Err(e) => DoctorEntry {
                name: stem,
                layer: None,
                valid: false,
                problem: Some(e.to_error_object()),
                due: Vec::new(),
                checks: Vec::new(),
                digest: None,
            },
        });
    }
    let mut publishers = Vec::new();
    for (layer, root, ctx) in &ctxs {
        for stem in root::json_stems(&root.publishers())? {
            publishers.push(DoctorPublisher {
                layer: Some(*layer),
                ..doctor_publisher(root, ctx, warn_days, stem)
            });
        }
    }
    let ok = entries.iter().all(|e| e.valid && e.due.is_empty())
        && publishers
            .iter()
            .all(|p| p.problem.is_none() && p.due.is_empty());
    Ok(DoctorReport {
        schema: DOCTOR_SCHEMA,
        now: ctxs
            .first()
            .map_or_else(crate::trust::now, |(_, _, c)| c.now),
        warn_days,
        ok,
        entries,
        publishers,
    })
}

fn doctor_entry(batch: &Batch, warn_days: u64, name: String) -> DoctorEntry {
    let outcome = batch.verify(&name);
    let checks = outcome.checks();
    match outcome.verified {
        Ok(v) => DoctorEntry {
            due: due(batch.ctx(), &v, warn_days),
            name,
            layer: None,
            valid: true,
            problem: None,
            checks,
            digest: outcome.digest,
        },
        Err(e) => DoctorEntry {
            name,
            layer: None,
            valid: false,
            problem: Some(e.to_error_object()),
            due: Vec::new(),
            checks,
            digest: outcome.digest,
        },
    }
}

fn doctor_publisher(
    root: &Root,
    ctx: &TrustContext,
    warn_days: u64,
    id: String,
) -> DoctorPublisher {
    let loaded = Name::new(&id)
        .map_err(VerifyError::BadName)
        .and_then(|n| entry::load_publisher(root, &n));
    match loaded {
        Ok((p, _)) => DoctorPublisher {
            id,
            layer: None,
            problem: None,
            due: p
                .keys
                .iter()
                .filter(|k| p.revoked.is_none() && k.revoked.is_none())
                .filter_map(|k| {
                    let at = k.not_after?;
                    due_at(
                        ctx.now,
                        warn_days,
                        DueKind::KeyNotAfter,
                        at,
                        Some(&k.key_id),
                    )
                })
                .collect(),
        },
        Err(e) => DoctorPublisher {
            id,
            layer: None,
            problem: Some(e.to_error_object()),
            due: Vec::new(),
        },
    }
}
