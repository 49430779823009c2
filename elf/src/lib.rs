//! The static-ELF rule (KERNEL-FACTS.md): what `process` containment can run.
//!
//! Accept iff: ELF64 little-endian for this build's machine; no `PT_INTERP`; no `DT_NEEDED`, no text
//! relocations; `ET_EXEC`, or `ET_DYN` whose `DT_FLAGS_1` has `DF_1_PIE` (static-pie — this is what
//! rejects a plain shared object); `PT_GNU_STACK` present without execute; no `PT_LOAD` segment both
//! writable and executable (the kernel would map it so, and the plugin could write code and run it
//! without any syscall a filter could refuse); nonzero entry point.
//!
//! A refusal is `not-static-elf`, except the writable-and-executable segment: `exe-wx-segment`
//! (the fix is a different link, not a static build).
//!
//! Only the ELF header, the program headers and the dynamic segment are read (positioned reads on
//! the open descriptor into buffers of exactly their size), never the whole file; goblin decodes
//! those buffers. `dot-verify`, `dot-register` and `dot-sandbox` (on every launch, before it
//! confines itself) apply this one rule.
#![forbid(unsafe_code)]

use goblin::container::{Container, Ctx, Endian};
use goblin::elf::dynamic::{
    Dynamic, DF_1_PIE, DF_TEXTREL, DT_FLAGS, DT_FLAGS_1, DT_NEEDED, DT_TEXTREL,
};
use goblin::elf::header::{EI_CLASS, EI_DATA, EI_VERSION, ELFCLASS64, ELFDATA2LSB, EV_CURRENT};
use goblin::elf::header::{ELFMAG, ET_DYN, ET_EXEC};
use goblin::elf::program_header::{
    ProgramHeader, PF_W, PF_X, PT_DYNAMIC, PT_GNU_STACK, PT_INTERP, PT_LOAD,
};
use goblin::elf64::dynamic::SIZEOF_DYN as DYN_LEN;
use goblin::elf64::header::{Header, SIZEOF_EHDR as EHDR_LEN};
use goblin::elf64::program_header::SIZEOF_PHDR as PHDR_LEN;
use proto::{Kind, ToErrorObject};
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

const MAX_PHNUM: usize = 512;
const MAX_DYNAMIC: u64 = 64 * 1024;

/// The ELF machine this build runs on.
#[cfg(target_arch = "x86_64")]
pub const HOST_MACHINE: u16 = goblin::elf::header::EM_X86_64;
#[cfg(target_arch = "aarch64")]
pub const HOST_MACHINE: u16 = goblin::elf::header::EM_AARCH64;
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub const HOST_MACHINE: u16 = 0;

/// What a static executable looks like.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ElfFacts {
    /// `true` for static-pie (`ET_DYN` with `DF_1_PIE`), `false` for `ET_EXEC`.
    pub pie: bool,
}

/// Why a file is not a static ELF executable for this machine.
#[derive(Debug, thiserror::Error)]
pub enum ElfError {
    #[error("is a script (starts with #!), not a static ELF executable")]
    Script,
    #[error("is not an ELF file")]
    NotElf,
    #[error("is truncated: {0}")]
    Truncated(&'static str),
    #[error("is malformed: {0}")]
    Malformed(String),
    #[error("is not ELF64 little-endian")]
    WrongClass,
    #[error("is for ELF machine {found}, this machine is {HOST_MACHINE}")]
    ForeignArch { found: u16 },
    #[error("has an interpreter (PT_INTERP): it is dynamically linked")]
    Interpreter,
    #[error("needs shared libraries (DT_NEEDED): it is dynamically linked")]
    Needed,
    #[error("has text relocations")]
    TextRel,
    #[error("is a shared object, not an executable (ET_DYN without DF_1_PIE)")]
    SharedObject,
    #[error("has ELF type {0}, not an executable")]
    NotExecutable(u16),
    #[error("has no PT_GNU_STACK header (executable stack by default)")]
    NoStackHeader,
    #[error("asks for an executable stack")]
    ExecStack,
    #[error("has a PT_LOAD segment that is both writable and executable (program header {index}, flags {flags:#x})")]
    WritableExecutable { index: usize, flags: u32 },
    #[error("has no entry point")]
    NoEntry,
    #[error("could not be read: {0}")]
    Io(#[from] io::Error),
}

impl ToErrorObject for ElfError {
    fn kind(&self) -> Kind {
        match self {
            ElfError::WritableExecutable { .. } => Kind::ExeWxSegment,
            ElfError::Script
            | ElfError::NotElf
            | ElfError::Truncated(_)
            | ElfError::Malformed(_)
            | ElfError::WrongClass
            | ElfError::ForeignArch { .. }
            | ElfError::Interpreter
            | ElfError::Needed
            | ElfError::TextRel
            | ElfError::SharedObject
            | ElfError::NotExecutable(_)
            | ElfError::NoStackHeader
            | ElfError::ExecStack
            | ElfError::NoEntry => Kind::NotStaticElf,
            // The host could not read the file (EIO): nothing about the file's bytes.
            ElfError::Io(_) => Kind::Io,
        }
    }
}

/// Checks that the open `file` is a static ELF executable for this machine.
pub fn check_static_elf(file: &File) -> Result<ElfFacts, ElfError> {
    check_image(file, file.metadata()?.len())
}

/// The same rule on an image held in memory (what the fuzz target and unit tests feed it).
pub fn check_static_elf_bytes(bytes: &[u8]) -> Result<ElfFacts, ElfError> {
    check_image(&bytes, bytes.len() as u64)
}

/// Positioned reads: an open file, or bytes in memory.
trait ReadAt {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize>;
}

impl ReadAt for File {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        FileExt::read_at(self, buf, offset)
    }
}

impl ReadAt for &[u8] {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let start = usize::try_from(offset).map_or(self.len(), |o| o.min(self.len()));
        let n = buf.len().min(self.len() - start);
        buf[..n].copy_from_slice(&self[start..start + n]);
        Ok(n)
    }
}

/// ELF64, little endian: the only layout the rule accepts.
const CTX: Ctx = Ctx {
    container: Container::Big,
    le: Endian::Little,
};

fn check_image(file: &impl ReadAt, size: u64) -> Result<ElfFacts, ElfError> {
    let mut ehdr = [0u8; EHDR_LEN];
    let got = read_up_to(file, &mut ehdr, 0)?;
    if got >= 2 && &ehdr[..2] == b"#!" {
        return Err(ElfError::Script);
    }
    if got < ELFMAG.len() || ehdr[..ELFMAG.len()] != *ELFMAG {
        return Err(ElfError::NotElf);
    }
    if got < EHDR_LEN {
        return Err(ElfError::Truncated("ELF header"));
    }
    let h = check_header(&ehdr, size)?;
    let dynamic = check_program_headers(file, &h, size)?;
    check_dynamic(file, &h, dynamic)
}

/// What goblin could not decode (after the sizes were checked here, only a malformed header).
fn malformed(e: goblin::error::Error) -> ElfError {
    ElfError::Malformed(e.to_string())
}

fn check_header(ehdr: &[u8; EHDR_LEN], size: u64) -> Result<Header, ElfError> {
    if ehdr[EI_CLASS] != ELFCLASS64 || ehdr[EI_DATA] != ELFDATA2LSB {
        return Err(ElfError::WrongClass);
    }
    let h = Header::parse(ehdr).map_err(malformed)?;
    if ehdr[EI_VERSION] != EV_CURRENT || h.e_version != u32::from(EV_CURRENT) {
        return Err(ElfError::Malformed("unknown ELF version".into()));
    }
    if h.e_machine != HOST_MACHINE {
        return Err(ElfError::ForeignArch { found: h.e_machine });
    }
    if h.e_type != ET_EXEC && h.e_type != ET_DYN {
        return Err(ElfError::NotExecutable(h.e_type));
    }
    if h.e_entry == 0 {
        return Err(ElfError::NoEntry);
    }
    let (phentsize, phnum) = (usize::from(h.e_phentsize), usize::from(h.e_phnum));
    if phentsize != PHDR_LEN {
        return Err(ElfError::Malformed(format!(
            "program header size {phentsize}"
        )));
    }
    if phnum == 0 || phnum > MAX_PHNUM {
        return Err(ElfError::Malformed(format!("{phnum} program headers")));
    }
    let end = h.e_phoff.checked_add((phnum * PHDR_LEN) as u64);
    if end.is_none_or(|end| end > size) {
        return Err(ElfError::Truncated("program headers"));
    }
    Ok(h)
}

/// Checks the program headers; returns the dynamic segment's header, if any.
fn check_program_headers(
    file: &impl ReadAt,
    h: &Header,
    size: u64,
) -> Result<Option<ProgramHeader>, ElfError> {
    let phnum = usize::from(h.e_phnum);
    let mut table = vec![0u8; phnum * PHDR_LEN];
    if read_up_to(file, &mut table, h.e_phoff)? != table.len() {
        return Err(ElfError::Truncated("program headers"));
    }
    let mut dynamic = None;
    let mut stack = None;
    for (index, ph) in ProgramHeader::parse(&table, 0, phnum, CTX)
        .map_err(malformed)?
        .into_iter()
        .enumerate()
    {
        match ph.p_type {
            PT_INTERP => return Err(ElfError::Interpreter),
            PT_LOAD if ph.p_flags & (PF_W | PF_X) == PF_W | PF_X => {
                return Err(ElfError::WritableExecutable {
                    index,
                    flags: ph.p_flags,
                })
            }
            PT_GNU_STACK => stack = Some(ph.p_flags),
            PT_DYNAMIC => {
                let (offset, len) = (ph.p_offset, ph.p_filesz);
                if offset.checked_add(len).is_none_or(|end| end > size) {
                    return Err(ElfError::Truncated("dynamic segment"));
                }
                if len > MAX_DYNAMIC || len % DYN_LEN as u64 != 0 {
                    return Err(ElfError::Malformed(format!(
                        "dynamic segment of {len} bytes"
                    )));
                }
                dynamic = Some(ph);
            }
            _ => {}
        }
    }
    match stack {
        None => Err(ElfError::NoStackHeader),
        Some(flags) if flags & PF_X != 0 => Err(ElfError::ExecStack),
        Some(_) => Ok(dynamic),
    }
}

fn check_dynamic(
    file: &impl ReadAt,
    h: &Header,
    dynamic: Option<ProgramHeader>,
) -> Result<ElfFacts, ElfError> {
    let mut pie = false;
    if let Some(ph) = dynamic {
        // At most MAX_DYNAMIC bytes (checked with the program headers).
        let mut buf = vec![0u8; ph.p_filesz as usize];
        if read_up_to(file, &mut buf, ph.p_offset)? != buf.len() {
            return Err(ElfError::Truncated("dynamic segment"));
        }
        // The buffer holds the segment alone: goblin reads it from offset 0 (up to DT_NULL).
        let at_zero = ProgramHeader { p_offset: 0, ..ph };
        let dyns = Dynamic::parse(&buf, &[at_zero], CTX)
            .map_err(malformed)?
            .map(|d| d.dyns)
            .unwrap_or_default();
        for d in dyns {
            match d.d_tag {
                DT_NEEDED => return Err(ElfError::Needed),
                DT_TEXTREL => return Err(ElfError::TextRel),
                DT_FLAGS if d.d_val & DF_TEXTREL != 0 => return Err(ElfError::TextRel),
                DT_FLAGS_1 if d.d_val & DF_1_PIE != 0 => pie = true,
                _ => {}
            }
        }
    }
    if h.e_type == ET_DYN && !pie {
        return Err(ElfError::SharedObject);
    }
    Ok(ElfFacts {
        pie: h.e_type == ET_DYN,
    })
}

/// Reads into `buf` from `offset` until it is full or the file ends; returns the bytes read.
fn read_up_to(file: &impl ReadAt, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    let mut done = 0;
    while done < buf.len() {
        match file.read_at(&mut buf[done..], offset + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn check_bytes(bytes: &[u8]) -> Result<ElfFacts, ElfError> {
        static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("elf-test-{}-{n}", std::process::id()));
        let mut f = File::create(&path).expect("create");
        f.write_all(bytes).expect("write");
        let f = File::open(&path).expect("open");
        let _ = std::fs::remove_file(&path);
        let from_file = check_static_elf(&f);
        // The in-memory reader (the fuzz target's) decides exactly as the file reader does.
        assert_eq!(
            format!("{:?}", check_static_elf_bytes(bytes)),
            format!("{from_file:?}")
        );
        from_file
    }

    /// A minimal ELF64 image: header, `phdrs`, then the dynamic entries at offset 0x200.
    fn image(e_type: u16, machine: u16, phdrs: &[(u32, u32)], dynamic: &[(u64, u64)]) -> Vec<u8> {
        let mut b = vec![0u8; 0x400];
        b[..4].copy_from_slice(b"\x7fELF");
        b[4] = 2;
        b[5] = 1;
        b[6] = 1;
        b[16..18].copy_from_slice(&e_type.to_le_bytes());
        b[18..20].copy_from_slice(&machine.to_le_bytes());
        b[20..24].copy_from_slice(&1u32.to_le_bytes());
        b[24..32].copy_from_slice(&0x1000u64.to_le_bytes());
        b[32..40].copy_from_slice(&64u64.to_le_bytes());
        b[54..56].copy_from_slice(&(PHDR_LEN as u16).to_le_bytes());
        b[56..58].copy_from_slice(&(phdrs.len() as u16).to_le_bytes());
        for (i, (t, flags)) in phdrs.iter().enumerate() {
            let at = 64 + i * PHDR_LEN;
            b[at..at + 4].copy_from_slice(&t.to_le_bytes());
            b[at + 4..at + 8].copy_from_slice(&flags.to_le_bytes());
            if *t == PT_DYNAMIC {
                b[at + 8..at + 16].copy_from_slice(&0x200u64.to_le_bytes());
                let len = (dynamic.len() * DYN_LEN) as u64;
                b[at + 32..at + 40].copy_from_slice(&len.to_le_bytes());
            }
        }
        for (i, (tag, val)) in dynamic.iter().enumerate() {
            let at = 0x200 + i * DYN_LEN;
            b[at..at + 8].copy_from_slice(&tag.to_le_bytes());
            b[at + 8..at + 16].copy_from_slice(&val.to_le_bytes());
        }
        b
    }

    const STACK: (u32, u32) = (PT_GNU_STACK, 6);

    #[test]
    fn accepts_static_exec_and_static_pie() {
        assert_eq!(
            check_bytes(&image(ET_EXEC, HOST_MACHINE, &[(1, 5), STACK], &[])).ok(),
            Some(ElfFacts { pie: false })
        );
        let pie = image(
            ET_DYN,
            HOST_MACHINE,
            &[(1, 5), (PT_DYNAMIC, 6), STACK],
            &[(DT_FLAGS_1, DF_1_PIE), (0, 0)],
        );
        assert_eq!(check_bytes(&pie).ok(), Some(ElfFacts { pie: true }));
    }

    #[test]
    fn refuses_each_rule() {
        let r = |b: Vec<u8>| check_bytes(&b).expect_err("refused");
        assert!(matches!(
            r(b"#!/bin/sh\necho hi\n".to_vec()),
            ElfError::Script
        ));
        assert!(matches!(r(b"hello".to_vec()), ElfError::NotElf));
        assert!(matches!(
            r(b"\x7fELF\x02\x01".to_vec()),
            ElfError::Truncated(_)
        ));
        assert!(matches!(
            r(image(ET_EXEC, 3, &[STACK], &[])),
            ElfError::ForeignArch { found: 3 }
        ));
        assert!(matches!(
            r(image(ET_EXEC, HOST_MACHINE, &[(PT_INTERP, 4), STACK], &[])),
            ElfError::Interpreter
        ));
        assert!(matches!(
            r(image(ET_EXEC, HOST_MACHINE, &[(1, 5)], &[])),
            ElfError::NoStackHeader
        ));
        assert!(matches!(
            r(image(ET_EXEC, HOST_MACHINE, &[(PT_GNU_STACK, 7)], &[])),
            ElfError::ExecStack
        ));
        let so = image(ET_DYN, HOST_MACHINE, &[(PT_DYNAMIC, 6), STACK], &[(0, 0)]);
        assert!(matches!(r(so), ElfError::SharedObject));
        let needed = image(
            ET_DYN,
            HOST_MACHINE,
            &[(PT_DYNAMIC, 6), STACK],
            &[(DT_NEEDED, 1), (DT_FLAGS_1, DF_1_PIE)],
        );
        assert!(matches!(r(needed), ElfError::Needed));
        let textrel = image(
            ET_EXEC,
            HOST_MACHINE,
            &[(PT_DYNAMIC, 6), STACK],
            &[(DT_TEXTREL, 0)],
        );
        assert!(matches!(r(textrel), ElfError::TextRel));
        assert!(matches!(
            r(image(1, HOST_MACHINE, &[STACK], &[])),
            ElfError::NotExecutable(1)
        ));
        let mut big_phnum = image(ET_EXEC, HOST_MACHINE, &[STACK], &[]);
        big_phnum[56..58].copy_from_slice(&60u16.to_le_bytes());
        assert!(matches!(r(big_phnum), ElfError::Truncated(_)));
        let mut class32 = image(ET_EXEC, HOST_MACHINE, &[STACK], &[]);
        class32[4] = 1;
        assert!(matches!(r(class32), ElfError::WrongClass));
    }

    #[test]
    fn refuses_a_writable_and_executable_load_segment() {
        // Text (R+X) and data (R+W) apart are fine; one segment with both is not, whatever else
        // it has (read or not), and in an ET_EXEC as in a static-pie.
        let ok = image(
            ET_EXEC,
            HOST_MACHINE,
            &[(PT_LOAD, 5), (PT_LOAD, 6), STACK],
            &[],
        );
        assert!(check_bytes(&ok).is_ok());
        for flags in [3, 7, 0xf000_0007] {
            let wx = image(
                ET_EXEC,
                HOST_MACHINE,
                &[(PT_LOAD, 5), (PT_LOAD, flags), STACK],
                &[],
            );
            let err = check_bytes(&wx).expect_err("W+X");
            assert!(
                matches!(err, ElfError::WritableExecutable { index: 1, flags: f } if f == flags),
                "{err:?}"
            );
            assert_eq!(
                (err.kind(), err.kind().exit_code()),
                (Kind::ExeWxSegment, proto::ExitCode::Refused)
            );
            assert!(err.to_string().contains("writable and executable"));
        }
        let pie = image(
            ET_DYN,
            HOST_MACHINE,
            &[(PT_LOAD, 7), (PT_DYNAMIC, 6), STACK],
            &[(DT_FLAGS_1, DF_1_PIE), (0, 0)],
        );
        assert!(matches!(
            check_bytes(&pie),
            Err(ElfError::WritableExecutable { index: 0, .. })
        ));
        // Only loaded segments count: a note or the GNU_RELRO header with odd flags does not.
        let note = image(ET_EXEC, HOST_MACHINE, &[(PT_LOAD, 5), (4, 7), STACK], &[]);
        assert!(check_bytes(&note).is_ok());
        // Every other refusal keeps its kind.
        let err = check_bytes(&image(ET_EXEC, HOST_MACHINE, &[(1, 5)], &[])).expect_err("stack");
        assert_eq!(err.kind(), Kind::NotStaticElf);
    }

    #[test]
    fn checks_real_binaries_on_this_machine() {
        // /bin/sh on Debian is dynamic.
        if let Ok(f) = File::open("/bin/sh") {
            assert!(matches!(check_static_elf(&f), Err(ElfError::Interpreter)));
        }
    }
}
