//! The seccomp policy compiled to classic BPF, as pure functions: a short hand-written prefix, and
//! a compiler that lays the refusals (`policy`, derived from its allowlist) out as a binary search
//! tree over syscall numbers.
//!
//! Program shape:
//!
//! 1. prefix: architecture is not x86-64 → kill the process; `nr >= 0x40000000` (the x32 ABI, which
//!    seccompiler does not handle) → kill the process; `clone3` → `ENOSYS` (its flags live in
//!    memory a filter cannot read; glibc and Go fall back to `clone`, whose flags it can).
//! 2. a binary search over the syscall-number line cut into segments: allowed runs, denied runs
//!    (`EPERM`), single syscalls denied by argument (the seccompiler rule chain, `EPERM` on match),
//!    and every number above the highest syscall the policy knows (`ENOSYS`). The search is made
//!    of comparisons only: each one jumps straight to the code of the segment it settles on.
//! 3. that code, once per distinct action (allow, `EPERM`, `ENOSYS`, each distinct rule chain):
//!    the three signal calls share one chain. A set of values allowed (or refused) for one
//!    argument (the `ioctl` requests, the `fcntl` commands, the `prctl` options, the `madvise`
//!    advice) is one load and one comparison per value, and a set of flags (`clone`'s namespace
//!    flags) one load and one bit test, not one seccompiler rule per value or flag.
//!
//! Only the two prefix checks kill. This file is also compiled into the crate's build script
//! (`build.rs`), with `policy`.

use crate::policy::{deny_rules, Deny, Params, Rules, MAX_KNOWN_NR};
use seccompiler::{sock_filter, BackendError};

/// `AUDIT_ARCH_X86_64`.
pub const AUDIT_ARCH_X86_64: u32 = 62 | 0x8000_0000 | 0x4000_0000;
/// Syscall numbers at or above this are the x32 ABI.
pub const X32_SYSCALL_BIT: u32 = 0x4000_0000;
/// `SECCOMP_RET_*` values.
pub const RET_KILL_PROCESS: u32 = 0x8000_0000;
pub const RET_ERRNO: u32 = 0x0005_0000;
pub const RET_ALLOW: u32 = 0x7fff_0000;

fn stmt(code: u16, k: u32) -> sock_filter {
    sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    }
}

fn jump(code: u16, k: u32, jt: u8, jf: u8) -> sock_filter {
    sock_filter { code, jt, jf, k }
}

const LD_W_ABS: u16 = 0x20;
/// `offsetof(struct seccomp_data, args)`: the low 32 bits of argument `n` are at `16 + 8 * n`
/// (little endian).
const ARGS_OFFSET: u32 = 16;
const JA: u16 = 0x05;
const JEQ_K: u16 = 0x15;
const JGE_K: u16 = 0x35;
const JSET_K: u16 = 0x45;
pub const RET_K: u16 = 0x06;

/// The hand-written prefix: architecture check, x32 kill, `clone3` → `ENOSYS`. Leaves the syscall
/// number in the accumulator.
pub fn prefix() -> Vec<sock_filter> {
    vec![
        stmt(LD_W_ABS, 4),
        jump(JEQ_K, AUDIT_ARCH_X86_64, 1, 0),
        stmt(RET_K, RET_KILL_PROCESS),
        stmt(LD_W_ABS, 0),
        jump(JGE_K, X32_SYSCALL_BIT, 0, 1),
        stmt(RET_K, RET_KILL_PROCESS),
        jump(JEQ_K, libc::SYS_clone3 as u32, 0, 1),
        stmt(RET_K, RET_ERRNO | libc::ENOSYS as u32),
    ]
}

/// What one segment of the syscall-number line does.
#[derive(Clone, Debug, PartialEq)]
enum Leaf {
    Allow,
    Deny,
    Unknown,
    ByArgument(Vec<Deny>),
}

/// Cuts `0..X32_SYSCALL_BIT` into segments `(first nr, leaf)`, merging neighbours that act alike.
fn segments(rules: &Rules) -> Vec<(u32, Leaf)> {
    let mut out: Vec<(u32, Leaf)> = Vec::new();
    for nr in 0..=MAX_KNOWN_NR + 1 {
        let leaf = if nr > MAX_KNOWN_NR {
            Leaf::Unknown
        } else {
            match rules.get(&i64::from(nr)) {
                None => Leaf::Allow,
                Some(chain) if chain.is_empty() => Leaf::Deny,
                Some(chain) => Leaf::ByArgument(chain.clone()),
            }
        };
        let merge = matches!(
            (out.last(), &leaf),
            (Some((_, Leaf::Allow)), Leaf::Allow) | (Some((_, Leaf::Deny)), Leaf::Deny)
        );
        if !merge {
            out.push((nr, leaf));
        }
    }
    out
}

fn leaf_code(leaf: &Leaf) -> Vec<sock_filter> {
    let deny = stmt(RET_K, RET_ERRNO | libc::EPERM as u32);
    match leaf {
        Leaf::Allow => vec![stmt(RET_K, RET_ALLOW)],
        Leaf::Deny => vec![deny],
        Leaf::Unknown => vec![stmt(RET_K, RET_ERRNO | libc::ENOSYS as u32)],
        Leaf::ByArgument(chain) => {
            let mut code = Vec::new();
            for d in chain {
                match d {
                    // seccompiler's rule code falls through when every condition matches and
                    // otherwise jumps past the instruction that follows it: the same layout its
                    // own filter uses.
                    Deny::Rule(r) => code.extend(rule_body(Vec::<sock_filter>::from(r.clone()))),
                    Deny::NoneOf { arg, values } => code.extend(none_of(*arg, values)),
                    Deny::AnyBit { arg, mask } => {
                        code.push(stmt(LD_W_ABS, ARGS_OFFSET + 8 * u32::from(*arg)));
                        code.push(jump(JSET_K, *mask, 0, 1));
                    }
                }
                code.push(deny.clone());
            }
            code.push(stmt(RET_K, RET_ALLOW));
            code
        }
    }
}

/// Loads argument `arg`'s low 32 bits and compares it with each value: a match skips the
/// instruction that follows the comparisons (the caller's deny), no match falls into it.
fn none_of(arg: u8, values: &[u32]) -> Vec<sock_filter> {
    let mut code = vec![stmt(LD_W_ABS, ARGS_OFFSET + 8 * u32::from(arg))];
    let n = values.len();
    for (i, &v) in values.iter().enumerate() {
        // At most a few dozen values: the remaining count fits a jump offset.
        let past_deny = (n - i) as u8;
        code.push(jump(JEQ_K, v, past_deny, 0));
    }
    code
}

/// A seccompiler rule without the two jumps it opens with: `JA 1` (into the rule) and `JA n` (out
/// of it, for seccompiler's own layout). Here nothing jumps to the second one and the first only
/// skips it; the conditions' own jumps are relative and land after the rule, so they are unchanged.
fn rule_body(code: Vec<sock_filter>) -> Vec<sock_filter> {
    match code.as_slice() {
        [enter, out, rest @ ..] if enter.code == JA && enter.k == 1 && out.code == JA => {
            rest.to_vec()
        }
        _ => code,
    }
}

/// A balanced search over `segs` on the syscall number held in the accumulator, each segment's code
/// inline at its leaf (the layout used when the shared layout below does not fit 8-bit jumps).
fn tree(segs: &[(u32, Leaf)]) -> Vec<sock_filter> {
    if segs.len() == 1 {
        return leaf_code(&segs[0].1);
    }
    let mid = segs.len() / 2;
    let left = tree(&segs[..mid]);
    let right = tree(&segs[mid..]);
    let mut code = Vec::with_capacity(left.len() + right.len() + 2);
    match u8::try_from(left.len()) {
        Ok(skip) => code.push(jump(JGE_K, segs[mid].0, skip, 0)),
        Err(_) => {
            code.push(jump(JGE_K, segs[mid].0, 0, 1));
            code.push(stmt(JA, left.len() as u32));
        }
    }
    code.extend(left);
    code.extend(right);
    code
}

/// Where a comparison of the search jumps: another comparison, or the code of a segment's action.
#[derive(Clone, Copy)]
enum Goto {
    Node(usize),
    Action(usize),
}

/// One `nr >= k` comparison of the search: `ge` when true, `lt` when false.
struct Node {
    k: u32,
    ge: Goto,
    lt: Goto,
}

/// Emits the comparisons for `segs` (whose actions are `ids`) in pre-order, left before right.
fn search(segs: &[(u32, Leaf)], ids: &[usize], nodes: &mut Vec<Node>) -> Goto {
    if segs.len() == 1 {
        return Goto::Action(ids[0]);
    }
    let at = nodes.len();
    nodes.push(Node {
        k: segs[segs.len() / 2].0,
        ge: Goto::Node(0),
        lt: Goto::Node(0),
    });
    let mid = segs.len() / 2;
    let lt = search(&segs[..mid], &ids[..mid], nodes);
    let ge = search(&segs[mid..], &ids[mid..], nodes);
    nodes[at].lt = lt;
    nodes[at].ge = ge;
    Goto::Node(at)
}

/// The search with each distinct action's code once, after it; `None` if a jump needs more than
/// the 8 bits a conditional jump has.
fn shared_layout(segs: &[(u32, Leaf)]) -> Option<Vec<sock_filter>> {
    let mut actions: Vec<&Leaf> = Vec::new();
    let ids: Vec<usize> = segs
        .iter()
        .map(|(_, leaf)| match actions.iter().position(|a| *a == leaf) {
            Some(i) => i,
            None => {
                actions.push(leaf);
                actions.len() - 1
            }
        })
        .collect();
    let mut nodes = Vec::new();
    let root = search(segs, &ids, &mut nodes);
    let bodies: Vec<Vec<sock_filter>> = actions.iter().map(|a| leaf_code(a)).collect();
    let mut starts = Vec::with_capacity(bodies.len());
    let mut at = nodes.len();
    for b in &bodies {
        starts.push(at);
        at += b.len();
    }
    let target = |g: Goto| match g {
        Goto::Node(i) => i,
        Goto::Action(a) => starts[a],
    };
    let mut code = Vec::with_capacity(at);
    if let Goto::Action(a) = root {
        // A single segment: fall into its action, which must then come first.
        if starts[a] != 0 {
            return None;
        }
    }
    for (pc, n) in nodes.iter().enumerate() {
        let jt = u8::try_from(target(n.ge) - (pc + 1)).ok()?;
        let jf = u8::try_from(target(n.lt) - (pc + 1)).ok()?;
        code.push(jump(JGE_K, n.k, jt, jf));
    }
    for b in bodies {
        code.extend(b);
    }
    Some(code)
}

/// The whole program: prefix, then the search over `rules` (the shared layout when its jumps fit,
/// else the inline one).
pub fn compile(rules: &Rules) -> Vec<sock_filter> {
    let segs = segments(rules);
    let mut code = prefix();
    code.extend(shared_layout(&segs).unwrap_or_else(|| tree(&segs)));
    code
}

/// The program for `p`.
pub fn program(p: Params) -> Result<Vec<sock_filter>, BackendError> {
    deny_rules(p).map(|r| compile(&r))
}

/// The program's bytes as the kernel receives them: 8 bytes per instruction (code, jt, jf, k),
/// native endian. The policy's digest is SHA-256 of these bytes for the program with the
/// per-launch values set to zero (`build.rs` takes it at build time, `seccomp` otherwise).
pub fn program_bytes(code: &[sock_filter]) -> Vec<u8> {
    let mut out = Vec::with_capacity(code.len() * 8);
    for i in code {
        out.extend(i.code.to_ne_bytes());
        out.push(i.jt);
        out.push(i.jf);
        out.extend(i.k.to_ne_bytes());
    }
    out
}

/// What the tests of the policy and of the compiler share: a classic-BPF interpreter, seccompiler's
/// own compilation of the rules, and the program for fixed per-launch values.
#[cfg(test)]
pub mod testing {
    use super::*;
    use crate::policy::dword;
    use seccompiler::{SeccompAction, SeccompCmpOp as Op, SeccompRule};
    use std::collections::BTreeMap;

    /// The same rules as seccompiler rules only: a `NoneOf` becomes one rule of `Dword` `Ne`
    /// conditions, each bit of an `AnyBit` a `Dword` `MaskedEq` rule.
    pub fn seccompiler_rules(
        rules: &Rules,
    ) -> Result<BTreeMap<i64, Vec<SeccompRule>>, BackendError> {
        let mut out = BTreeMap::new();
        for (&nr, chain) in rules {
            let mut expanded = Vec::new();
            for d in chain {
                match d {
                    Deny::Rule(r) => expanded.push(r.clone()),
                    Deny::NoneOf { arg, values } => {
                        let conds = values
                            .iter()
                            .map(|&v| dword(*arg, Op::Ne, u64::from(v)))
                            .collect::<Result<Vec<_>, _>>()?;
                        expanded.push(SeccompRule::new(conds)?);
                    }
                    Deny::AnyBit { arg, mask } => {
                        for bit in (0..32)
                            .map(|b| 1u64 << b)
                            .filter(|b| u64::from(*mask) & b != 0)
                        {
                            expanded.push(SeccompRule::new(vec![dword(
                                *arg,
                                Op::MaskedEq(bit),
                                bit,
                            )?])?);
                        }
                    }
                }
            }
            out.insert(nr, expanded);
        }
        Ok(out)
    }

    /// seccompiler's own linear compilation of the same rules (tests compare the two).
    pub fn linear_reference(rules: &Rules) -> Result<Vec<sock_filter>, BackendError> {
        let filter = seccompiler::SeccompFilter::new(
            seccompiler_rules(rules)?,
            SeccompAction::Allow,
            SeccompAction::Errno(libc::EPERM as u32),
            seccompiler::TargetArch::x86_64,
        )?;
        filter.try_into()
    }

    /// A classic-BPF interpreter for seccomp programs (the subset these programs use).
    pub fn run(code: &[sock_filter], arch: u32, nr: u32, args: [u64; 6]) -> u32 {
        let mut data = Vec::with_capacity(64);
        data.extend(nr.to_le_bytes());
        data.extend(arch.to_le_bytes());
        data.extend(0u64.to_le_bytes());
        for a in args {
            data.extend(a.to_le_bytes());
        }
        let (mut a, mut pc) = (0u32, 0usize);
        loop {
            let i = &code[pc];
            pc += 1;
            match i.code {
                0x20 => {
                    let k = i.k as usize;
                    a = u32::from_le_bytes(data[k..k + 4].try_into().expect("4 bytes"));
                }
                0x54 => a &= i.k,
                0x05 => pc += i.k as usize,
                0x15 | 0x25 | 0x35 | 0x45 => {
                    let hit = match i.code {
                        0x15 => a == i.k,
                        0x25 => a > i.k,
                        0x35 => a >= i.k,
                        _ => a & i.k != 0,
                    };
                    pc += usize::from(if hit { i.jt } else { i.jf });
                }
                0x06 => return i.k,
                other => panic!("unexpected BPF opcode {other:#x}"),
            }
        }
    }

    pub const TIOCSTI: u64 = libc::TIOCSTI;
    pub const TIOCLINUX: u64 = libc::TIOCLINUX;
    pub const SHM_EXEC: u64 = libc::SHM_EXEC as u64;
    pub const PR_SET_PTRACER: u64 = libc::PR_SET_PTRACER as u64;
    pub const CLONE_NEWTIME: u64 = libc::CLONE_NEWTIME as u64;

    pub const P: Params = Params {
        pid: 4242,
        cookie: 0x1234_5678_9abc_def0,
        runtime: false,
    };
    pub const EPERM: u32 = RET_ERRNO | libc::EPERM as u32;
    pub const ENOSYS: u32 = RET_ERRNO | libc::ENOSYS as u32;

    pub fn prog() -> Vec<sock_filter> {
        program(P).expect("policy compiles")
    }

    pub fn call(nr: i64, args: [u64; 6]) -> u32 {
        run(&prog(), AUDIT_ARCH_X86_64, nr as u32, args)
    }
}

#[cfg(test)]
mod tests {
    use super::testing::*;
    use super::*;

    #[test]
    fn foreign_architecture_and_x32_are_killed() {
        let code = prog();
        assert_eq!(run(&code, 0x4000_0003, 0, [0; 6]), RET_KILL_PROCESS);
        assert_eq!(
            run(&code, AUDIT_ARCH_X86_64, X32_SYSCALL_BIT, [0; 6]),
            RET_KILL_PROCESS
        );
        let x32_socket = X32_SYSCALL_BIT | libc::SYS_socket as u32;
        assert_eq!(
            run(&code, AUDIT_ARCH_X86_64, x32_socket, [0; 6]),
            RET_KILL_PROCESS
        );
        assert_eq!(
            run(&code, AUDIT_ARCH_X86_64, u32::MAX, [0; 6]),
            RET_KILL_PROCESS
        );
    }

    #[test]
    fn clone3_and_unknown_syscalls_get_enosys() {
        assert_eq!(call(libc::SYS_clone3, [0; 6]), ENOSYS);
        assert_eq!(call(i64::from(MAX_KNOWN_NR) + 1, [0; 6]), ENOSYS);
        assert_eq!(call(0x3fff_ffff, [0; 6]), ENOSYS);
    }

    /// The tree gives the same answer as seccompiler's own linear program for every known
    /// syscall number and a spread of arguments.
    #[test]
    fn tree_matches_seccompiler_linear_program() {
        for p in [P, Params { runtime: true, ..P }] {
            tree_matches_for(p);
        }
    }

    fn tree_matches_for(p: Params) {
        let rules = deny_rules(p).expect("rules");
        let shared = compile(&rules);
        let mut inline = prefix();
        inline.extend(tree(&segments(&rules)));
        assert!(
            shared_layout(&segments(&rules)).is_some(),
            "the shared layout fits"
        );
        assert!(
            shared.len() < inline.len(),
            "{} vs {}",
            shared.len(),
            inline.len()
        );
        for tree in [shared, inline] {
            same_answers(&tree, &rules);
        }
    }

    fn same_answers(tree: &[sock_filter], rules: &Rules) {
        let linear = linear_reference(rules).expect("linear");
        let values = [
            0u64,
            1,
            u64::from(P.pid),
            u64::from(P.pid) | (1 << 32),
            P.cookie,
            u64::MAX,
            u64::from(u32::MAX),
            (libc::CLONE_THREAD | libc::CLONE_VM | libc::CLONE_SIGHAND) as u64,
            (libc::CLONE_THREAD | libc::CLONE_NEWUSER) as u64,
            (libc::CLONE_THREAD | libc::CLONE_VM | libc::CLONE_NEWCGROUP) as u64,
            (libc::CLONE_THREAD | libc::CLONE_NEWIPC | libc::CLONE_NEWUTS) as u64 | (1 << 35),
            libc::CLONE_NEWNS as u64,
            libc::PROT_EXEC as u64,
            (libc::PROT_READ | libc::PROT_WRITE) as u64,
            TIOCSTI,
            TIOCSTI | (1 << 40),
            PR_SET_PTRACER,
            SHM_EXEC,
            CLONE_NEWTIME,
            libc::F_SETOWN as u64,
            10 | (1 << 36), // F_SETSIG
            15,             // F_SETOWN_EX
            libc::F_NOTIFY as u64,
            libc::F_SETFL as u64,
            libc::F_GETOWN as u64,
            libc::O_ASYNC as u64,
            libc::FIOASYNC | (7 << 32),
            0x8901, // FIOSETOWN
            libc::FS_IOC_SETFLAGS,
            0x401c_5820, // FS_IOC_FSSETXATTR
        ];
        for nr in 0..=MAX_KNOWN_NR {
            if nr == libc::SYS_clone3 as u32 {
                continue;
            }
            for &v in &values {
                for pos in 0..6 {
                    let mut args = [0u64; 6];
                    args[pos] = v;
                    let want = run(&linear, AUDIT_ARCH_X86_64, nr, args);
                    assert_eq!(
                        run(tree, AUDIT_ARCH_X86_64, nr, args),
                        want,
                        "nr {nr} {args:?}"
                    );
                }
                let all = [v; 6];
                let want = run(&linear, AUDIT_ARCH_X86_64, nr, all);
                assert_eq!(
                    run(tree, AUDIT_ARCH_X86_64, nr, all),
                    want,
                    "nr {nr} {all:?}"
                );
            }
            // Two arguments together (`F_SETFL` with `O_ASYNC`).
            let o_async = libc::O_ASYNC as u64;
            for (a1, a2) in [
                (libc::F_SETFL as u64, o_async),
                (libc::F_SETFL as u64 | (1 << 33), o_async | 1),
                (libc::F_SETFL as u64, o_async << 32),
                (libc::F_GETFL as u64, o_async),
            ] {
                let args = [3, a1, a2, 0, 0, 0];
                let want = run(&linear, AUDIT_ARCH_X86_64, nr, args);
                assert_eq!(
                    run(tree, AUDIT_ARCH_X86_64, nr, args),
                    want,
                    "nr {nr} {args:?}"
                );
            }
        }
    }

    #[test]
    fn program_is_short() {
        let code = prog();
        let linear = linear_reference(&deny_rules(P).expect("rules")).expect("linear");
        assert!(
            code.len() < linear.len(),
            "{} vs {}",
            code.len(),
            linear.len()
        );
        assert!(code.len() < 300, "{} instructions", code.len());
    }
}
