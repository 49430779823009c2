//! `dot-register list`: every entry of the root, each verified as `dot-verify entry` does.

use crate::error::RegisterError;
use crate::report::ListItem;
use proto::layout::Root;
use proto::{Entry, Name, ToErrorObject};
use verify::batch::{Batch, Outcome};
use verify::trust::TrustContext;
use verify::VerifyError;

/// The registered entries, sorted by name, with `valid` and `problem` from the full verification.
/// They share one `verify::batch::Batch`: the root checked and the trust inputs loaded once, each
/// distinct store file digested once. A root or trust input that cannot be loaded is every entry's
/// `problem`, as each entry's own `verify_entry` gives it.
pub fn list(root: &Root) -> Result<Vec<ListItem>, RegisterError> {
    crate::check_registry(root)?;
    let stems = verify::root::json_stems(&root.plugins())?;
    let Ok(batch) = Batch::new(root) else {
        return Ok(stems
            .iter()
            .map(|s| {
                let verified = Name::new(s)
                    .map_err(VerifyError::BadName)
                    .and_then(|n| verify::entry::verify_entry(root, &n));
                item(root, s, verified)
            })
            .collect());
    };
    Ok(stems
        .iter()
        .map(|s| item_of(root, s, batch.verify(s), Some(batch.ctx())))
        .collect())
}

/// The list item of the entry file `stem` of `root`, whose verification gave `verified`.
pub(crate) fn item(
    root: &Root,
    stem: &str,
    verified: Result<verify::entry::Verified, VerifyError>,
) -> ListItem {
    // A malformed policy or deny list is every entry's `problem` (verify_entry reads them too).
    let ctx = TrustContext::load(root).ok();
    let outcome = Outcome {
        verified,
        digest: None,
    };
    item_of(root, stem, outcome, ctx.as_ref())
}

/// The list item of the entry file `stem` of `root` from its verification's `outcome`, its
/// warnings in `ctx`'s window.
fn item_of(root: &Root, stem: &str, outcome: Outcome, ctx: Option<&TrustContext>) -> ListItem {
    let checks = outcome.checks();
    let mut item = ListItem {
        name: stem.to_owned(),
        version: None,
        trust: None,
        publisher: None,
        sha256: None,
        containment: None,
        valid: false,
        problem: None,
        expires: None,
        warning: None,
        dependencies: None,
        layer: None,
        status: None,
        checks,
        digest: outcome.digest,
    };
    let name = match Name::new(stem) {
        Ok(n) => n,
        Err(e) => {
            item.problem = Some(VerifyError::BadName(e).to_error_object());
            return item;
        }
    };
    // A valid entry's fields are the verified entry's; an invalid one's are what the file holds,
    // if it parses.
    let entry = match &outcome.verified {
        Ok(v) => Some(v.entry.clone()),
        Err(_) => verify::entry::read_doc(&root.entry(&name))
            .ok()
            .flatten()
            .and_then(|bytes| Entry::parse(&bytes).ok()),
    };
    if let Some(e) = entry {
        item.version = Some(e.version);
        item.trust = Some(e.trust);
        item.publisher = e.publisher;
        item.sha256 = Some(e.sha256);
        item.containment = Some(e.containment);
        item.expires = e.expires;
    }
    match outcome.verified {
        Ok(v) => {
            item.valid = true;
            item.dependencies = Some(v.dependencies);
            // The doctor's warnings, in the policy's window, as one line.
            let due = ctx
                .map(|c| verify::doctor::due(c, &v, c.policy.expiry_warning_days))
                .unwrap_or_default();
            item.warning = (!due.is_empty()).then(|| {
                due.iter()
                    .map(verify::doctor::Due::describe)
                    .collect::<Vec<_>>()
                    .join("; ")
            });
        }
        Err(e) => item.problem = Some(e.to_error_object()),
    }
    item
}
