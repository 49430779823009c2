//! `dot-register policy set|show`: `trust/policy.json`, the root's size limits, maximum signature
//! age and expiry warning window (`proto::trust::Policy`).

use crate::args::PolicySetArgs;
use crate::error::RegisterError;
use crate::{audit, now, write_private, WriterLock};
use proto::layout::Root;
use proto::trust::{AuditAction, AuditOutcome, AuditRecord, Policy};
use verify::trust::TrustContext;

/// The effective policy.
pub fn show(root: &Root) -> Result<Policy, RegisterError> {
    crate::check_registry(root)?;
    Ok(TrustContext::load(root)?.policy)
}

/// Changes the settings `a` names and writes the whole policy.
pub fn set(root: &Root, a: &PolicySetArgs) -> Result<Policy, RegisterError> {
    crate::check_registry_writable(root)?;
    let _lock = WriterLock::take(root)?;
    let mut p = TrustContext::load(root)?.policy;
    if let Some(v) = a.max_signature_age_secs {
        p.max_signature_age_secs = (v > 0).then_some(v);
    }
    let fields = [
        (a.expiry_warning_days, &mut p.expiry_warning_days),
        (a.max_entry_bytes, &mut p.max_entry_bytes),
        (a.max_signature_bytes, &mut p.max_signature_bytes),
        (a.max_key_bytes, &mut p.max_key_bytes),
        (a.max_exe_bytes, &mut p.max_exe_bytes),
    ];
    for (given, field) in fields {
        if let Some(v) = given {
            *field = v;
        }
    }
    if a.clear_sensitive_inputs {
        p.sensitive_inputs.clear();
    }
    for g in &a.sensitive_input {
        if !p.sensitive_inputs.contains(g) {
            p.sensitive_inputs.push(g.clone());
        }
    }
    if a.clear_runtime_roots {
        p.runtime_roots.clear();
    }
    for d in &a.runtime_root {
        if !p.runtime_roots.contains(d) {
            p.runtime_roots.push(d.clone());
        }
    }
    p.validate()
        .map_err(|e| RegisterError::Usage(format!("policy: {e}")))?;
    write_private(&root.policy(), &p.to_bytes())?;
    let mut rec = AuditRecord::new(now(), AuditAction::PolicySet, AuditOutcome::Allowed);
    rec.detail = Some(String::from_utf8_lossy(&p.to_bytes()).replace(['\n', ' '], ""));
    audit(root, &rec)?;
    Ok(p)
}
