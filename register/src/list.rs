//! `dot-register list`: every entry of the root, each verified as `dot-verify entry` does.

use crate::error::RegisterError;
use crate::report::ListItem;
use proto::layout::Root;
use proto::{Entry, Name, ToErrorObject};
use verify::trust::TrustContext;
use verify::VerifyError;

/// The registered entries, sorted by name, with `valid` and `problem` from the full verification.
pub fn list(root: &Root) -> Result<Vec<ListItem>, RegisterError> {
    crate::check_registry(root)?;
    let stems = verify::root::json_stems(&root.plugins())?;
    Ok(stems
        .iter()
        .map(|s| {
            let verified = Name::new(s)
                .map_err(VerifyError::BadName)
                .and_then(|n| verify::entry::verify_entry(root, &n));
            item(root, s, verified)
        })
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
    let ctx = ctx.as_ref();
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
    };
    let name = match Name::new(stem) {
        Ok(n) => n,
        Err(e) => {
            item.problem = Some(VerifyError::BadName(e).to_error_object());
            return item;
        }
    };
    if let Ok(Some(bytes)) = verify::entry::read_doc(&root.entry(&name)) {
        if let Ok(e) = Entry::parse(&bytes) {
            item.version = Some(e.version);
            item.trust = Some(e.trust);
            item.publisher = e.publisher;
            item.sha256 = Some(e.sha256);
            item.containment = Some(e.containment);
            item.expires = e.expires;
        }
    }
    match verified {
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
