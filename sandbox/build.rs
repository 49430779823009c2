//! Builds the seccomp program once, at build time, from the policy in `src/policy.rs` (the single
//! source), compiled by `src/bpf.rs`: the program with its per-launch values (the runner's pid, the exec cookie) set to zero,
//! its SHA-256 (the policy's identity), and where those values go. `dot-sandbox` copies it and fills the values in on each launch,
//! instead of building the rules and compiling them every time. The unit tests check that the
//! filled-in copy is exactly what the policy compiles to.

#[allow(dead_code)]
#[path = "src/bpf.rs"]
mod bpf;
#[allow(dead_code)]
#[path = "src/policy.rs"]
mod policy;

use std::fmt::Write as _;

fn main() {
    println!("cargo:rerun-if-changed=src/policy.rs");
    println!("cargo:rerun-if-changed=src/bpf.rs");
    println!("cargo:rerun-if-changed=build.rs");
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    let host = std::env::var("HOST").unwrap_or_default();
    let target = std::env::var("TARGET").unwrap_or_default();
    // The syscall numbers come from the build machine's libc: build the table only when the build
    // machine is the target architecture; elsewhere the runner compiles the policy at run time.
    let text = if host.starts_with("x86_64-")
        && target.starts_with("x86_64-")
        && target.contains("linux")
    {
        generate()
    } else {
        ["fixed", "runtime"]
            .iter()
            .map(|m| {
                format!(
                    "pub mod {m} {{\n    use super::Slot;\n    pub const TEMPLATE: &[(u16, u8, u8, u32)] = &[];\n    \
                     pub const SLOTS: &[(usize, Slot)] = &[];\n    pub const SHA256: [u8; 32] = [0; 32];\n}}\n"
                )
            })
            .collect()
    };
    std::fs::write(out.join("seccomp_program.rs"), text).expect("writing seccomp_program.rs");
}

fn generate() -> String {
    let mut text = String::new();
    for (module, runtime) in [("fixed", false), ("runtime", true)] {
        let _ = writeln!(text, "pub mod {module} {{\nuse super::Slot;");
        text.push_str(&generate_one(runtime));
        let _ = writeln!(text, "}}");
    }
    text
}

fn generate_one(runtime: bool) -> String {
    const PID: u32 = 0x5eed_0001;
    const COOKIE_HI: u32 = 0x5eed_0002;
    const COOKIE_LO: u32 = 0x5eed_0003;
    let zero = bpf::program(policy::Params {
        pid: 0,
        cookie: 0,
        runtime,
    })
    .expect("policy compiles");
    let marked = bpf::program(policy::Params {
        pid: PID,
        cookie: (u64::from(COOKIE_HI) << 32) | u64::from(COOKIE_LO),
        runtime,
    })
    .expect("policy compiles");
    assert_eq!(
        zero.len(),
        marked.len(),
        "per-launch values change the program's shape"
    );
    let mut text = String::new();
    let _ = writeln!(text, "pub const TEMPLATE: &[(u16, u8, u8, u32)] = &[");
    for i in &zero {
        let _ = writeln!(
            text,
            "    ({:#06x}, {}, {}, {:#010x}),",
            i.code, i.jt, i.jf, i.k
        );
    }
    use sha2::Digest as _;
    let digest: [u8; 32] = sha2::Sha256::digest(bpf::program_bytes(&zero)).into();
    let _ = writeln!(text, "];\npub const SHA256: [u8; 32] = {digest:?};");
    let _ = writeln!(text, "pub const SLOTS: &[(usize, Slot)] = &[");
    for (at, (z, m)) in zero.iter().zip(&marked).enumerate() {
        if z == m {
            continue;
        }
        assert_eq!(
            (z.code, z.jt, z.jf, z.k),
            (m.code, m.jt, m.jf, 0),
            "instruction {at}"
        );
        let slot = match m.k {
            PID => "Slot::Pid",
            COOKIE_HI => "Slot::CookieHigh",
            COOKIE_LO => "Slot::CookieLow",
            other => panic!("instruction {at} holds an unknown per-launch value {other:#x}"),
        };
        let _ = writeln!(text, "    ({at}, {slot}),");
    }
    let _ = writeln!(text, "];");
    text
}
