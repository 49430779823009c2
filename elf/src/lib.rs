//! The static-ELF rule (KERNEL-FACTS.md): what `process` containment can run.
//!
//! Accept iff: ELF64 little-endian for this build's machine; no `PT_INTERP`; no `DT_NEEDED`, no text
//! relocations; `ET_EXEC`, or `ET_DYN` whose `DT_FLAGS_1` has `DF_1_PIE` (static-pie — this is what
//! rejects a plain shared object); `PT_GNU_STACK` present, and none with execute; nonzero entry
//! point; and no header that makes the kernel's loader (`fs/binfmt_elf.c`) create writable and
//! executable memory, which the plugin could write code into and run without any syscall a filter
//! could refuse:
//!
//! - no `PT_LOAD` segment both writable and executable: it is mapped with both rights;
//! - no executable `PT_LOAD` segment with `p_memsz > p_filesz`: the loader maps the pages past the
//!   file part with `vm_brk_flags`, which makes anonymous memory that is always read-write and
//!   gets execute from the segment (`R+X`, `p_filesz` 0, `p_memsz` 0x2000 is two pages of
//!   read-write-execute memory at a fixed address);
//! - no writable and executable `PT_LOAD` segments that share a page: one page has one set of
//!   rights, those of the segment mapped (or zero-filled) last, so code ends up writable or data
//!   executable;
//! - every `PT_LOAD` has `p_filesz <= p_memsz` and ends inside the address space (the kernel
//!   refuses to exec anything else).
//!
//! What else could make such memory, and why it does not here: an executable stack
//! (`PT_GNU_STACK` with `PF_X`, refused; with it missing the x86-64 stack is not executable, but
//! it is refused too); the `READ_IMPLIES_EXEC` personality, which `elf_read_implies_exec` sets only
//! for 32-bit (compat) binaries without `PT_GNU_STACK` (ELF32 is refused) and which the 64-bit
//! loader clears when inherited (measured: `setarch -X` then exec gives personality 0);
//! `PT_GNU_PROPERTY`, which the x86-64 loader does not act on and the arm64 one turns into BTI,
//! never into write or execute.
//!
//! A refusal is `not-static-elf`, except the rules on writable and executable memory:
//! `exe-wx-segment` (the fix is a different link, not a static build).
//!
//! Only the ELF header, the program headers and the dynamic segment are read (positioned reads on
//! the open descriptor into buffers of exactly their size), never the whole file; goblin decodes
//! those buffers. `dot-verify`, `dot-register` and `dot-sandbox` (on every launch, before it
//! confines itself) apply this one rule.
#![forbid(unsafe_code)]

pub mod runtime;

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

/// The page size the loader maps segments with (`ELF_MIN_ALIGN`): the largest this architecture
/// runs with, so two segments that could share a page on some kernel are seen to.
#[cfg(not(target_arch = "aarch64"))]
const PAGE: u64 = 4096;
#[cfg(target_arch = "aarch64")]
const PAGE: u64 = 64 * 1024;
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
    #[error("has an executable PT_LOAD segment (program header {index}) with more bytes in memory ({memsz:#x}) than in the file ({filesz:#x}): the kernel zero-fills the rest as writable and executable memory")]
    ExecutableZeroFill {
        index: usize,
        filesz: u64,
        memsz: u64,
    },
    #[error("has a writable PT_LOAD segment (program header {writable}) and an executable one (program header {executable}) in the same page at {page:#x}: the kernel gives the page the rights of one of them, so code becomes writable or data executable")]
    SharedPage {
        writable: usize,
        executable: usize,
        page: u64,
    },
    #[error("has no entry point")]
    NoEntry,
    #[error("could not be read: {0}")]
    Io(#[from] io::Error),
}

impl ToErrorObject for ElfError {
    fn kind(&self) -> Kind {
        match self {
            ElfError::WritableExecutable { .. }
            | ElfError::ExecutableZeroFill { .. }
            | ElfError::SharedPage { .. } => Kind::ExeWxSegment,
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
    let phs = ProgramHeader::parse(&table, 0, phnum, CTX).map_err(malformed)?;
    let mut dynamic = None;
    for ph in &phs {
        match ph.p_type {
            PT_INTERP => return Err(ElfError::Interpreter),
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
                dynamic = Some(ph.clone());
            }
            _ => {}
        }
    }
    check_segments(&phs)?;
    Ok(dynamic)
}

/// The segment rules: every `PT_LOAD` against the loader's rules ([`check_load`]), no page both
/// writable and executable ([`check_shared_pages`]), a stack header without execute (the kernel
/// takes the last one; any with execute is refused). `runtime` applies them to a dynamic program.
pub(crate) fn check_segments(phs: &[ProgramHeader]) -> Result<(), ElfError> {
    let (mut stack, mut exec_stack) = (false, false);
    // The page span of every writable or executable PT_LOAD: (index, first page, end, flags).
    let mut spans: Vec<(usize, u64, u64, u32)> = Vec::new();
    for (index, ph) in phs.iter().enumerate() {
        match ph.p_type {
            PT_LOAD => {
                if let Some(span) = check_load(index, ph)? {
                    spans.push(span);
                }
            }
            PT_GNU_STACK => {
                stack = true;
                exec_stack |= ph.p_flags & PF_X != 0;
            }
            _ => {}
        }
    }
    check_shared_pages(&spans)?;
    match (stack, exec_stack) {
        (false, _) => Err(ElfError::NoStackHeader),
        (true, true) => Err(ElfError::ExecStack),
        (true, false) => Ok(()),
    }
}

/// One `PT_LOAD` against the loader's rules; returns its page span when it is writable or
/// executable (for [`check_shared_pages`]).
fn check_load(
    index: usize,
    ph: &ProgramHeader,
) -> Result<Option<(usize, u64, u64, u32)>, ElfError> {
    let (flags, filesz, memsz) = (ph.p_flags, ph.p_filesz, ph.p_memsz);
    if flags & (PF_W | PF_X) == PF_W | PF_X {
        return Err(ElfError::WritableExecutable { index, flags });
    }
    if filesz > memsz {
        return Err(ElfError::Malformed(format!(
            "program header {index}: p_filesz {filesz:#x} is larger than p_memsz {memsz:#x}"
        )));
    }
    let end = ph
        .p_vaddr
        .checked_add(memsz)
        .and_then(|end| end.checked_add(PAGE - 1))
        .ok_or_else(|| {
            ElfError::Malformed(format!(
                "program header {index}: the segment ends past the address space"
            ))
        })?
        & !(PAGE - 1);
    if flags & PF_X != 0 && memsz > filesz {
        return Err(ElfError::ExecutableZeroFill {
            index,
            filesz,
            memsz,
        });
    }
    let start = ph.p_vaddr & !(PAGE - 1);
    Ok((flags & (PF_W | PF_X) != 0 && memsz > 0).then_some((index, start, end, flags)))
}

/// No page holds both a writable and an executable segment (`spans` from [`check_load`]).
/// Quadratic in the (few) loaded segments, and only over those that are writable or executable.
fn check_shared_pages(spans: &[(usize, u64, u64, u32)]) -> Result<(), ElfError> {
    let writable = spans.iter().filter(|s| s.3 & PF_W != 0);
    for &(w, w_start, w_end, _) in writable {
        for &(x, x_start, x_end, _) in spans.iter().filter(|s| s.3 & PF_X != 0) {
            if w_start < x_end && x_start < w_end {
                return Err(ElfError::SharedPage {
                    writable: w,
                    executable: x,
                    page: w_start.max(x_start),
                });
            }
        }
    }
    Ok(())
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

    /// An `ET_EXEC` image with `loads` as its `PT_LOAD` headers — (flags, vaddr, filesz, memsz) —
    /// then a non-executable `PT_GNU_STACK`.
    fn image_loads(loads: &[(u32, u64, u64, u64)]) -> Vec<u8> {
        let mut phdrs: Vec<(u32, u32)> = loads.iter().map(|l| (PT_LOAD, l.0)).collect();
        phdrs.push(STACK);
        let mut b = image(ET_EXEC, HOST_MACHINE, &phdrs, &[]);
        for (i, &(_, vaddr, filesz, memsz)) in loads.iter().enumerate() {
            let at = 64 + i * PHDR_LEN;
            b[at + 16..at + 24].copy_from_slice(&vaddr.to_le_bytes());
            b[at + 24..at + 32].copy_from_slice(&vaddr.to_le_bytes());
            b[at + 32..at + 40].copy_from_slice(&filesz.to_le_bytes());
            b[at + 40..at + 48].copy_from_slice(&memsz.to_le_bytes());
        }
        b
    }

    /// What gcc -static links: read-only headers, text, read-only data, data with its bss.
    const GCC_LAYOUT: [(u32, u64, u64, u64); 4] = [
        (4, 0x40_0000, 0x518, 0x518),
        (5, 0x40_1000, 0x7_7d01, 0x7_7d01),
        (4, 0x47_9000, 0x2_6fbc, 0x2_6fbc),
        (6, 0x4a_06d8, 0x5b98, 0xb3c8),
    ];

    #[test]
    fn refuses_an_executable_segment_zero_filled_past_its_file_part() {
        assert!(check_bytes(&image_loads(&GCC_LAYOUT)).is_ok());
        // A patched PT_NOTE: R+X, nothing from the file, two pages in memory (read-write-execute
        // pages from the loader's zero fill); and one byte more than the file part, even inside
        // the last file page; with execute alone as well.
        for (flags, filesz, memsz) in [(5, 0, 0x2000), (5, 0x100, 0x101), (1, 0x1000, 0x3000)] {
            let mut loads = GCC_LAYOUT.to_vec();
            loads.push((flags, 0x1000_0000, filesz, memsz));
            let err = check_bytes(&image_loads(&loads)).expect_err("zero-filled code");
            assert!(
                matches!(err, ElfError::ExecutableZeroFill { index: 4, filesz: f, memsz: m }
                    if (f, m) == (filesz, memsz)),
                "{err:?}"
            );
            assert_eq!(err.kind(), Kind::ExeWxSegment);
            assert!(err.to_string().contains("writable and executable"), "{err}");
        }
        // A writable or read-only segment may have a bss: its zero fill is not executable.
        for flags in [4, 6] {
            let loads = [
                (5, 0x40_1000, 0x1000, 0x1000),
                (flags, 0x50_0000, 0, 0x2000),
            ];
            assert!(check_bytes(&image_loads(&loads)).is_ok(), "flags {flags}");
        }
    }

    #[test]
    fn refuses_writable_and_executable_segments_sharing_a_page() {
        let text = (5, 0x40_1000, 0x800, 0x800);
        let cases = [
            // Data starting in the text's last page, after it or before it in the table.
            (vec![text, (6, 0x40_1800, 0x100, 0x100)], (1, 0)),
            (vec![(6, 0x40_1800, 0x100, 0x100), text], (0, 1)),
            // A writable segment whose zero fill (nothing from the file) lands in the text's last
            // page, and one whose bss runs on into the text's first page.
            (vec![text, (6, 0x40_1900, 0, 0x10)], (1, 0)),
            (vec![(6, 0x40_0000, 0x100, 0x1001), text], (0, 1)),
        ];
        for (loads, (w, x)) in cases {
            let err = check_bytes(&image_loads(&loads)).expect_err("shared page");
            assert!(
                matches!(err, ElfError::SharedPage { writable, executable, page: 0x40_1000 }
                    if (writable, executable) == (w, x)),
                "{loads:x?}: {err:?}"
            );
            assert_eq!(err.kind(), Kind::ExeWxSegment);
        }
        // Next pages, a read-only segment in the text's page, and an empty writable segment
        // are fine.
        for loads in [
            vec![text, (6, 0x40_2000, 0x100, 0x100)],
            vec![(6, 0x40_0000, 0x100, 0x1000), text],
            vec![text, (4, 0x40_1800, 0x100, 0x100)],
            vec![text, (6, 0x40_1800, 0, 0)],
        ] {
            assert!(check_bytes(&image_loads(&loads)).is_ok(), "{loads:x?}");
        }
    }

    #[test]
    fn refuses_load_headers_the_kernel_would_not_exec() {
        let r = |loads: &[(u32, u64, u64, u64)]| check_bytes(&image_loads(loads)).expect_err("bad");
        let err = r(&[(6, 0x40_0000, 0x200, 0x100)]);
        assert!(
            matches!(&err, ElfError::Malformed(m) if m.contains("p_filesz")),
            "{err:?}"
        );
        assert_eq!(err.kind(), Kind::NotStaticElf);
        let err = r(&[(4, u64::MAX - 0x10, 0x100, 0x100)]);
        assert!(
            matches!(&err, ElfError::Malformed(m) if m.contains("address space")),
            "{err:?}"
        );
    }

    #[test]
    fn refuses_an_executable_stack_in_any_stack_header() {
        // The kernel takes the last PT_GNU_STACK; any one asking for execute is refused.
        for stacks in [
            [(PT_GNU_STACK, 6), (PT_GNU_STACK, 7)],
            [(PT_GNU_STACK, 7), (PT_GNU_STACK, 6)],
        ] {
            let err =
                check_bytes(&image(ET_EXEC, HOST_MACHINE, &stacks, &[])).expect_err("exec stack");
            assert!(matches!(err, ElfError::ExecStack), "{err:?}");
            assert_eq!(err.kind(), Kind::NotStaticElf);
        }
    }

    #[test]
    fn checks_real_binaries_on_this_machine() {
        // /bin/sh on Debian is dynamic.
        if let Ok(f) = File::open("/bin/sh") {
            assert!(matches!(check_static_elf(&f), Err(ElfError::Interpreter)));
        }
    }
}
