//! The static-ELF rule, from the `elf` crate (which `dot-sandbox` applies too, without `verify`),
//! and, for an executable the rule refuses, which toolchain built it and how that toolchain builds
//! a static one.

pub use elf::runtime::{check_program, Depth, Program, RuntimeError};
pub use elf::{check_static_elf, check_static_elf_bytes, ElfError, ElfFacts, HOST_MACHINE};

use std::fs::File;
use std::os::unix::fs::FileExt;

/// The toolchain an executable's bytes name, as far as they tell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Toolchain {
    /// Go: the build-info blob every Go 1.13+ binary carries (`\xff Go buildinf:`, the
    /// `.go.buildinfo` section), kept by `strip`.
    Go,
    /// Rust: rustc's `.comment` line (`rustc version …`) or the standard library's source paths
    /// (`/rustc/HASH/library/…`) that its panic messages keep, stripped or not.
    Rust,
    /// C or C++: a GCC or clang `.comment` line, and neither of the above.
    C,
    /// Nothing the bytes tell.
    Unknown,
}

/// What each toolchain leaves in an executable, in the order they are told apart: a Rust or Go
/// binary links C start files too, whose `.comment` says GCC.
const MARKS: [(&[u8], Toolchain); 6] = [
    (b"\xff Go buildinf:", Toolchain::Go),
    (b"rustc version ", Toolchain::Rust),
    (b"/rustc/", Toolchain::Rust),
    (b"RUST_BACKTRACE", Toolchain::Rust),
    (b"GCC: (", Toolchain::C),
    (b"clang version ", Toolchain::C),
];

/// The rustc target of this machine, for the Rust hint.
#[cfg(target_arch = "aarch64")]
const RUST_TARGET: &str = "aarch64-unknown-linux-gnu";
#[cfg(not(target_arch = "aarch64"))]
const RUST_TARGET: &str = "x86_64-unknown-linux-gnu";

impl Toolchain {
    /// Reads `file` (positioned reads, in chunks) for the marks of [`MARKS`]: the first
    /// toolchain in that order whose mark it holds. A read error tells nothing: `Unknown`.
    pub fn of(file: &File) -> Toolchain {
        const CHUNK: usize = 1 << 20;
        let overlap = MARKS.iter().map(|(m, _)| m.len()).max().unwrap_or(0);
        let mut found = [false; MARKS.len()];
        let mut buf = vec![0u8; CHUNK + overlap];
        let mut kept = 0;
        let mut offset = 0u64;
        loop {
            let n = match file.read_at(&mut buf[kept..], offset) {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            offset += n as u64;
            let window = &buf[..kept + n];
            for (i, (mark, _)) in MARKS.iter().enumerate() {
                found[i] = found[i] || window.windows(mark.len()).any(|w| w == *mark);
            }
            if found[0] {
                break;
            }
            kept = overlap.min(window.len());
            let from = window.len() - kept;
            buf.copy_within(from..from + kept, 0);
        }
        MARKS
            .iter()
            .zip(found)
            .find(|(_, f)| *f)
            .map_or(Toolchain::Unknown, |((_, t), _)| *t)
    }

    /// How this toolchain builds a static executable, as one clause.
    pub fn static_build(self) -> String {
        match self {
            Toolchain::Go => "it is a Go program: build it with CGO_ENABLED=0 go build (cgo links \
                 it dynamically, and the net and os/user packages use cgo by default on Linux, as \
                 does any import \"C\"; with CGO_ENABLED=0 Go uses its own resolvers)"
                .to_owned(),
            Toolchain::Rust => format!(
                "it is a Rust program: build it with RUSTFLAGS='-C target-feature=+crt-static' \
                 cargo build --release --target {RUST_TARGET} (the explicit --target keeps build \
                 scripts and proc macros dynamic host code)"
            ),
            Toolchain::C => "it is a C or C++ program: link it with -static (cc -static …; \
                 -static-pie for a position-independent one), against libraries that have static \
                 archives"
                .to_owned(),
            Toolchain::Unknown => format!(
                "link it statically: C and C++ with -static, Go with CGO_ENABLED=0, Rust with \
                 RUSTFLAGS='-C target-feature=+crt-static' and an explicit --target {RUST_TARGET}"
            ),
        }
    }
}

/// For a refusal of the static-ELF rule that a static build fixes (an interpreter, shared
/// libraries), how to make one, from what the bytes of `file` tell of its toolchain; `None` for
/// any other refusal.
pub fn static_build_hint(file: &File, err: &ElfError) -> Option<String> {
    match err {
        ElfError::Interpreter | ElfError::Needed | ElfError::SharedObject => {
            Some(Toolchain::of(file).static_build())
        }
        ElfError::Script => Some(
            "a script runs only at audit (with --allow-dynamic: its interpreter is not pinned); \
             for process, build a static executable"
                .to_owned(),
        ),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `Toolchain::of` a file holding `bytes`.
    fn of(bytes: &[u8], tag: &str) -> Toolchain {
        let path =
            std::env::temp_dir().join(format!("verify-toolchain-{}-{tag}", std::process::id()));
        std::fs::write(&path, bytes).expect("write");
        let t = Toolchain::of(&File::open(&path).expect("open"));
        std::fs::remove_file(&path).expect("cleanup");
        t
    }

    #[test]
    fn the_toolchain_is_told_from_its_marks_even_across_a_chunk_boundary() {
        let pad = vec![0u8; (1 << 20) - 5];
        let across = |mark: &[u8]| [&pad[..], mark, b"tail"].concat();
        // A Go or Rust binary carries GCC's .comment too: their own mark decides.
        let cases: [(&[u8], Toolchain); 6] = [
            (b"GCC: (Debian 12) \xff Go buildinf:\x08", Toolchain::Go),
            (b"GCC: (Debian 12)\0rustc version 1.89.0", Toolchain::Rust),
            (
                b"/rustc/0123abcd/library/std/src/panicking.rs",
                Toolchain::Rust,
            ),
            (b"GCC: (Debian 12.2.0-14) 12.2.0", Toolchain::C),
            (b"Debian clang version 14.0.6", Toolchain::C),
            (b"\x7fELF nothing that says", Toolchain::Unknown),
        ];
        for (i, (bytes, want)) in cases.iter().enumerate() {
            assert_eq!(of(bytes, &format!("{i}")), *want, "{bytes:?}");
            assert_eq!(
                of(&across(bytes), &format!("{i}x")),
                *want,
                "across: {bytes:?}"
            );
        }
        assert!(Toolchain::Go.static_build().contains("CGO_ENABLED=0"));
        assert!(Toolchain::Rust.static_build().contains("+crt-static"));
        assert!(Toolchain::C.static_build().contains("-static"));
    }
}
