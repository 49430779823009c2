//! `dot-register list`: every entry of the root, each verified as `dot-verify entry` does.

use crate::error::RegisterError;
use crate::report::ListItem;
use proto::layout::Root;
use proto::{Entry, Name, ToErrorObject};
use verify::VerifyError;

/// The registered entries, sorted by name, with `valid` and `problem` from the full verification.
pub fn list(root: &Root) -> Result<Vec<ListItem>, RegisterError> {
    verify::root::check_root(root)?;
    let dir = root.plugins();
    let mut stems = Vec::new();
    for e in std::fs::read_dir(&dir).map_err(|e| VerifyError::io(&dir, e))? {
        let e = e.map_err(|e| VerifyError::io(&dir, e))?;
        let file = e.file_name();
        let Some(file) = file.to_str() else { continue };
        // Temp files of an interrupted write start with '.' and never end in ".json".
        if let Some(stem) = file.strip_suffix(".json") {
            stems.push(stem.to_owned());
        }
    }
    stems.sort();
    Ok(stems.iter().map(|s| item(root, s)).collect())
}

fn item(root: &Root, stem: &str) -> ListItem {
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
    match verify::entry::verify_entry(root, &name) {
        Ok(v) => {
            item.valid = true;
            item.dependencies = Some(v.dependencies);
            item.warning = v.expires_in_days.map(|d| format!("expires in {d} day(s)"));
        }
        Err(e) => item.problem = Some(e.to_error_object()),
    }
    item
}
