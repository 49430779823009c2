//! What a publisher runs before signing: the entry of a plugin (`dot-register entry new`) and the
//! statement that moves a publisher to a new key (`dot-register publisher transition`). Neither
//! needs a root or writes anything: each prints the exact bytes to sign with `minisign -S`, so no
//! one writes these documents by hand.

use crate::args::{EntryNewArgs, PublisherTransitionArgs};
use crate::error::RegisterError;
use crate::install::entry_options;
use proto::entry::ENTRY_SCHEMA;
use proto::trust::{KeyTransition, TRUST_SCHEMA};
use proto::{Containment, Entry, Trust};
use verify::VerifyError;

/// The entry for `a.exe`: its SHA-256 and size read from the file, the rest from the options,
/// checked as `dot-register add` will check it (a `process` plugin must be a static, W^X ELF).
pub fn entry_new(a: &EntryNewArgs) -> Result<Entry, RegisterError> {
    let (name, version, inputs) = entry_options(&a.name, &a.version, &a.input)?;
    let publisher = crate::name(&a.publisher)?;
    let (file, _) = sys::fs::open_regular(&a.exe).map_err(|e| VerifyError::from_open(&a.exe, e))?;
    let (sha256, size) =
        verify::digest::digest_file(&file).map_err(|e| VerifyError::io(&a.exe, e))?;
    let entry = Entry {
        schema: ENTRY_SCHEMA,
        name,
        version,
        trust: Trust::Signed,
        publisher: Some(publisher),
        sha256,
        size,
        protocol: a.protocol.clone(),
        inputs,
        containment: a.containment,
        expires: a.expires,
        limits: a.limits(),
        runtime: a.runtime.clone(),
        env: a.env.clone(),
    };
    entry
        .validate()
        .map_err(|source| VerifyError::EntryMalformed {
            path: a.exe.clone(),
            source,
        })?;
    if entry.containment == Containment::Process {
        verify::elf::check_program(&file, &entry.runtime, verify::elf::Depth::All).map_err(
            |source| {
                RegisterError::from(VerifyError::Runtime {
                    path: a.exe.clone(),
                    source: Box::new(source),
                })
                .with_build_hint(&file)
            },
        )?;
    }
    Ok(entry)
}

/// The key-rotation statement "publisher `a.id` adds the key in `a.pubkey`", made now.
pub fn transition(a: &PublisherTransitionArgs) -> Result<KeyTransition, RegisterError> {
    let publisher = crate::name(&a.id)?;
    let limit = proto::trust::Policy::default().limit(proto::trust::Limit::Key);
    let bytes = crate::read_input_limited(&a.pubkey, limit)?;
    let (new_key_id, new_public_key) = verify::signature::parse_public_key_file(&a.pubkey, &bytes)?;
    Ok(KeyTransition {
        schema: TRUST_SCHEMA,
        publisher,
        new_key_id,
        new_public_key,
        at: crate::now(),
    })
}
