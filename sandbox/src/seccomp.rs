//! The seccomp program as the runner installs it. `build.rs` compiles the policy (`policy`, the
//! single source) with `bpf` once at build time, with the per-launch values set to zero; each
//! launch copies that program, takes the policy's digest over it, and fills in its own pid and exec
//! cookie. The tests below check that the result is exactly what `bpf::program` compiles for the
//! same values, and the digest built with it is the digest of those bytes.

use crate::bpf;
use crate::policy::Params;
use proto::Sha256;
use seccompiler::BackendError;
use sys::confine::SockFilter;

/// Which per-launch value an instruction of the built program holds (in its `k`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slot {
    Pid,
    CookieHigh,
    CookieLow,
}

mod built {
    use super::Slot;
    include!(concat!(env!("OUT_DIR"), "/seccomp_program.rs"));
}

/// The program built at build time (`false` when the build machine could not build it, and the
/// runner compiles the policy itself).
pub fn prebuilt() -> bool {
    !built::fixed::TEMPLATE.is_empty()
}

/// Converts seccompiler's instructions to the kernel's type.
pub fn to_kernel(code: &[seccompiler::sock_filter]) -> Vec<SockFilter> {
    code.iter()
        .map(|i| SockFilter {
            code: i.code,
            jt: i.jt,
            jf: i.jf,
            k: i.k,
        })
        .collect()
}

/// The program for `p` and the policy's digest: SHA-256 of the program with the per-launch values
/// (pid, cookie) set to zero, so two launches under the same policy report the same digest and the
/// cookie never leaves the runner.
pub fn program_and_digest(p: Params) -> Result<(Vec<SockFilter>, Sha256), BackendError> {
    if !prebuilt() {
        let zero = bpf::program(Params {
            pid: 0,
            cookie: 0,
            runtime: p.runtime,
        })?;
        let code = to_kernel(&bpf::program(p)?);
        return Ok((code, Sha256::of(&bpf::program_bytes(&zero))));
    }
    let (template, slots, sha256) = if p.runtime {
        (
            built::runtime::TEMPLATE,
            built::runtime::SLOTS,
            built::runtime::SHA256,
        )
    } else {
        (
            built::fixed::TEMPLATE,
            built::fixed::SLOTS,
            built::fixed::SHA256,
        )
    };
    let mut code: Vec<SockFilter> = template
        .iter()
        .map(|&(code, jt, jf, k)| SockFilter { code, jt, jf, k })
        .collect();
    // Taken at build time over these very bytes (the tests check it): no hashing at run time.
    let digest = Sha256(sha256);
    for &(at, slot) in slots {
        code[at].k = match slot {
            Slot::Pid => p.pid,
            Slot::CookieHigh => (p.cookie >> 32) as u32,
            Slot::CookieLow => p.cookie as u32,
        };
    }
    Ok((code, digest))
}

/// The policy's digest alone (`runtime`: the variant for a run with runtime directories).
pub fn policy_sha256(runtime: bool) -> Result<Sha256, BackendError> {
    program_and_digest(Params {
        pid: 0,
        cookie: 0,
        runtime,
    })
    .map(|(_, d)| d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prebuilt_program_is_the_policy_compiled() {
        assert!(
            prebuilt(),
            "build.rs built the program on this x86-64 Linux build"
        );
        for runtime in [false, true] {
            for (pid, cookie) in [
                (0, 0),
                (1, 1),
                (4242, 0x1234_5678_9abc_def0),
                (u32::MAX, u64::MAX),
            ] {
                let p = Params {
                    pid,
                    cookie,
                    runtime,
                };
                let (code, _) = program_and_digest(p).expect("program");
                let compiled = to_kernel(&bpf::program(p).expect("policy"));
                let fields = |c: &[SockFilter]| -> Vec<_> {
                    c.iter().map(|i| (i.code, i.jt, i.jf, i.k)).collect()
                };
                assert_eq!(fields(&code), fields(&compiled), "{p:?}");
            }
        }
        assert!(!built::fixed::SLOTS.is_empty() && !built::runtime::SLOTS.is_empty());
    }

    #[test]
    fn the_digest_ignores_the_per_launch_values() {
        for runtime in [false, true] {
            let zero = bpf::program(Params {
                pid: 0,
                cookie: 0,
                runtime,
            })
            .expect("policy");
            let want = Sha256::of(&bpf::program_bytes(&zero));
            assert_eq!(policy_sha256(runtime).ok(), Some(want));
            let (_, d) = program_and_digest(Params {
                pid: 77,
                cookie: 0xfeed,
                runtime,
            })
            .expect("program");
            assert_eq!(d, want);
        }
        assert_ne!(policy_sha256(false).ok(), policy_sha256(true).ok());
    }
}
