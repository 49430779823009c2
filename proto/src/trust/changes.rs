//! The widening between a registered entry and its replacement that needs re-consent.

use crate::digest::Sha256;
use crate::entry::{Containment, Entry, InputDecl, Trust};
use crate::name::Name;
use serde::{Deserialize, Serialize};

/// The widening between a registered entry and its replacement that needs the owner's consent.
/// Serialized canonically (fixed field order, compact JSON); its SHA-256 is what
/// `--accept-changes sha256:HEX` names.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Changes {
    pub name: Name,
    /// The registered entry's digest and the new one: an acceptance is for this exact pair.
    pub from_sha256: Sha256,
    pub to_sha256: Sha256,
    /// Another publisher signs the name: `[old, new]` (a name belongs to its publisher).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub publisher: Option<[Name; 2]>,
    /// Who vouches for the entry changed, `[old, new]`: a publisher's signed entry replaced by a
    /// local one of the owner's (`dev --replace` in a development root), or the other way round.
    /// Like another publisher, it is a change of who the name belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trust: Option<[Trust; 2]>,
    /// `process` → `audit`: the containment requirement's risk was raised.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub containment: Option<[Containment; 2]>,
    /// Inputs the new entry declares that the old did not (or declares with another kind).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inputs_added: Vec<InputDecl>,
    /// The protocol range changed and is not provably narrower or equal: `[old, new]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<[String; 2]>,
    /// Limits the new entry raises above the old one's (docs/protocol.md "Limits").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub limits_raised: Vec<RaisedLimit>,
    /// Runtime directories the new entry declares that the old did not: more of the host visible.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runtime_added: Vec<crate::entry::RuntimeDir>,
    /// Environment names the new entry declares that the old did not: more the invoker can set.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env_added: Vec<crate::entry::EnvName>,
}

/// One limit raised by a replacement: its entry field, the old value and the new.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RaisedLimit {
    pub limit: String,
    pub from: u64,
    pub to: u64,
}

impl Changes {
    /// The widening from `old` to `new`, or `None` when nothing widened.
    pub fn between(old: &Entry, new: &Entry) -> Option<Changes> {
        let publisher = match (&old.publisher, &new.publisher) {
            (Some(a), Some(b)) if a != b => Some([a.clone(), b.clone()]),
            _ => None,
        };
        let trust = (old.trust != new.trust).then_some([old.trust, new.trust]);
        let containment = (old.containment == Containment::Process
            && new.containment == Containment::Audit)
            .then_some([old.containment, new.containment]);
        let inputs_added: Vec<InputDecl> = new
            .inputs
            .iter()
            .filter(|i| old.input(i.name.as_str()).is_none_or(|o| o.kind != i.kind))
            .cloned()
            .collect();
        let protocol = (!protocol_not_wider(&old.protocol, &new.protocol))
            .then(|| [old.protocol.clone(), new.protocol.clone()]);
        let limits_raised: Vec<RaisedLimit> = old
            .run_limits()
            .each()
            .into_iter()
            .zip(new.run_limits().each())
            .filter(|((_, from), (_, to))| to > from)
            .map(|((limit, from), (_, to))| RaisedLimit {
                limit: limit.field.to_owned(),
                from,
                to,
            })
            .collect();
        let runtime_added: Vec<crate::entry::RuntimeDir> = new
            .runtime
            .iter()
            .filter(|d| !old.runtime.contains(d))
            .cloned()
            .collect();
        let env_added: Vec<crate::entry::EnvName> = new
            .env
            .iter()
            .filter(|n| !old.env.contains(n))
            .cloned()
            .collect();
        if publisher.is_none()
            && trust.is_none()
            && containment.is_none()
            && inputs_added.is_empty()
            && protocol.is_none()
            && limits_raised.is_empty()
            && runtime_added.is_empty()
            && env_added.is_empty()
        {
            return None;
        }
        Some(Changes {
            name: new.name.clone(),
            from_sha256: old.sha256,
            to_sha256: new.sha256,
            publisher,
            trust,
            containment,
            inputs_added,
            protocol,
            limits_raised,
            runtime_added,
            env_added,
        })
    }

    /// `sha256:HEX` of the canonical serialization.
    pub fn token(&self) -> String {
        let bytes = serde_json::to_vec(self).unwrap_or_default();
        format!("sha256:{}", Sha256::of(&bytes).to_hex())
    }

    /// One line for people.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some([a, b]) = &self.publisher {
            parts.push(format!("publisher {a} -> {b}"));
        }
        if let Some([a, b]) = &self.trust {
            parts.push(format!("trust {a} -> {b}"));
        }
        if let Some([a, b]) = &self.containment {
            parts.push(format!("containment {a} -> {b}"));
        }
        for i in &self.inputs_added {
            parts.push(format!(
                "input added: {} ({}{})",
                i.name,
                i.kind,
                if i.required { ", required" } else { "" }
            ));
        }
        if let Some([a, b]) = &self.protocol {
            parts.push(format!("protocol {a:?} -> {b:?}"));
        }
        for r in &self.limits_raised {
            parts.push(format!("limit {} {} -> {}", r.limit, r.from, r.to));
        }
        for d in &self.runtime_added {
            parts.push(format!("runtime added: {d}"));
        }
        for n in &self.env_added {
            parts.push(format!("environment name added: {n}"));
        }
        parts.join("; ")
    }
}

/// `true` only when the new protocol requirement provably accepts no version the old one did not:
/// the same requirement, or both are simple ranges (`>=`, `>`, `<`, `<=`, `=` on full versions
/// without pre-release tags, joined by `,`) and the new interval lies inside the old one. Anything
/// this cannot prove counts as wider.
pub fn protocol_not_wider(old: &str, new: &str) -> bool {
    let (Ok(o), Ok(n)) = (
        semver::VersionReq::parse(old),
        semver::VersionReq::parse(new),
    ) else {
        return false;
    };
    if o == n {
        return true;
    }
    match (Interval::of(&o), Interval::of(&n)) {
        (Some(o), Some(n)) => n.within(&o),
        _ => false,
    }
}

/// A version interval with optional bounds; `(version, inclusive)`.
#[derive(Debug)]
struct Interval {
    lo: Option<(semver::Version, bool)>,
    hi: Option<(semver::Version, bool)>,
}

impl Interval {
    fn of(req: &semver::VersionReq) -> Option<Interval> {
        use semver::Op;
        let mut iv = Interval { lo: None, hi: None };
        for c in &req.comparators {
            if !c.pre.is_empty() {
                return None;
            }
            // `>=1.2` and `<2` mean `>=1.2.0` and `<2.0.0`; other operators on a partial version
            // (`<=1.2`, `>1`, `=1`) cover ranges this does not model.
            let partial = c.minor.is_none() || c.patch.is_none();
            if partial && !matches!(c.op, Op::GreaterEq | Op::Less) {
                return None;
            }
            let v = semver::Version::new(c.major, c.minor.unwrap_or(0), c.patch.unwrap_or(0));
            match c.op {
                Op::GreaterEq => iv.raise((v, true)),
                Op::Greater => iv.raise((v, false)),
                Op::LessEq => iv.lower((v, true)),
                Op::Less => iv.lower((v, false)),
                Op::Exact => {
                    iv.raise((v.clone(), true));
                    iv.lower((v, true));
                }
                _ => return None,
            }
        }
        Some(iv)
    }

    fn raise(&mut self, b: (semver::Version, bool)) {
        let tighter = match &self.lo {
            None => true,
            Some(cur) => b.0 > cur.0 || (b.0 == cur.0 && !b.1),
        };
        if tighter {
            self.lo = Some(b);
        }
    }

    fn lower(&mut self, b: (semver::Version, bool)) {
        let tighter = match &self.hi {
            None => true,
            Some(cur) => b.0 < cur.0 || (b.0 == cur.0 && !b.1),
        };
        if tighter {
            self.hi = Some(b);
        }
    }

    /// `self` ⊆ `outer`.
    fn within(&self, outer: &Interval) -> bool {
        let lo_ok = match (&outer.lo, &self.lo) {
            (None, _) => true,
            (Some(_), None) => false,
            (Some(o), Some(s)) => s.0 > o.0 || (s.0 == o.0 && (o.1 || !s.1)),
        };
        let hi_ok = match (&outer.hi, &self.hi) {
            (None, _) => true,
            (Some(_), None) => false,
            (Some(o), Some(s)) => s.0 < o.0 || (s.0 == o.0 && (o.1 || !s.1)),
        };
        lo_ok && hi_ok
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signed_entry_replaced_by_a_local_one_is_a_change() {
        let signed = crate::Entry::parse(
            br#"{"schema":1,"name":"hello","version":"1.0.0","trust":"signed","publisher":"acme","sha256":"0000000000000000000000000000000000000000000000000000000000000000","size":1,"protocol":">=1.0, <2","inputs":[],"containment":"process"}"#,
        )
        .expect("signed entry");
        let mut local = signed.clone();
        local.trust = Trust::Local;
        local.publisher = None;
        let c = Changes::between(&signed, &local).expect("a change");
        assert_eq!(c.trust, Some([Trust::Signed, Trust::Local]));
        assert_eq!(c.publisher, None);
        assert!(
            c.describe().contains("trust signed -> local"),
            "{}",
            c.describe()
        );
        let back = Changes::between(&local, &signed).expect("a change");
        assert_eq!(back.trust, Some([Trust::Local, Trust::Signed]));
        assert_eq!(Changes::between(&signed, &signed), None);
        // Without a change of trust the token is what it was before the field existed.
        let mut wider = signed.clone();
        wider.containment = Containment::Audit;
        let c = Changes::between(&signed, &wider).expect("a widening");
        assert!(!serde_json::to_string(&c).expect("json").contains("trust"));
    }

    #[test]
    fn protocol_widening_is_judged_on_intervals() {
        assert!(protocol_not_wider(">=1.0, <2", ">=1.0, <2"));
        assert!(protocol_not_wider(">=1.0.0, <2.0.0", ">=1.0, <2"));
        assert!(protocol_not_wider(">=1.0, <2", ">=1.2, <2"));
        assert!(protocol_not_wider(">=1.0, <2", "=1.5.0"));
        assert!(!protocol_not_wider(">=1.0, <2", ">=1.0, <3"));
        assert!(!protocol_not_wider(">=1.0, <2", ">=0.9, <2"));
        assert!(!protocol_not_wider(">=1.0, <2", ">=1.0"));
        assert!(!protocol_not_wider(">1.0.0, <2", ">=1.0.0, <2"));
        // Caret and tilde are not interpreted: treated as wider.
        assert!(!protocol_not_wider(">=1.0, <2", "^1.0"));
    }

    fn entry(limits: Option<&str>) -> Entry {
        let limits = limits
            .map(|l| format!(r#","limits":{l}"#))
            .unwrap_or_default();
        let json = format!(
            r#"{{"schema":1,"name":"hello","version":"1.0.0","trust":"local","sha256":"{}",
            "size":1,"protocol":">=1.0, <2","inputs":[],"containment":"process"{limits}}}"#,
            "ab".repeat(32)
        );
        Entry::parse(json.as_bytes()).expect("valid")
    }

    #[test]
    fn adding_an_environment_name_is_a_widening_and_removing_one_is_not() {
        let with = |names: &[&str]| Entry {
            env: names.iter().map(|n| n.parse().expect("a name")).collect(),
            ..entry(None)
        };
        let none = with(&[]);
        let one = with(&["RUST_BACKTRACE"]);
        let two = with(&["RUST_BACKTRACE", "RUST_LOG"]);
        assert_eq!(Changes::between(&two, &one), None);
        assert_eq!(Changes::between(&one, &none), None);
        let c = Changes::between(&one, &two).expect("a widening");
        assert_eq!(c.env_added, vec!["RUST_LOG".parse().expect("a name")]);
        assert_eq!(c.describe(), "environment name added: RUST_LOG");
    }

    #[test]
    fn another_publisher_for_the_name_is_a_change() {
        let json = |publisher: &str| {
            format!(
                r#"{{"schema":1,"name":"hello","version":"1.0.0","trust":"signed","publisher":"{publisher}",
                "sha256":"{}","size":1,"protocol":">=1.0, <2","inputs":[],"containment":"process"}}"#,
                "ab".repeat(32)
            )
        };
        let acme = Entry::parse(json("acme").as_bytes()).expect("valid");
        let beta = Entry::parse(json("beta").as_bytes()).expect("valid");
        assert_eq!(Changes::between(&acme, &acme), None);
        let c = Changes::between(&acme, &beta).expect("a change");
        let names = c.publisher.as_ref().map(|[a, b]| [a.as_str(), b.as_str()]);
        assert_eq!(names, Some(["acme", "beta"]));
        assert_eq!(c.describe(), "publisher acme -> beta");
    }

    #[test]
    fn raising_a_limit_is_a_widening_and_lowering_is_not() {
        let standard = entry(None);
        let strict = entry(Some(r#"{"preset":"strict"}"#));
        assert_eq!(
            Changes::between(&standard, &strict),
            None,
            "every limit lower"
        );
        assert_eq!(
            Changes::between(&standard, &entry(Some(r#"{"preset":"standard"}"#))),
            None,
            "the same limits, written out"
        );
        let c = Changes::between(&strict, &entry(Some(r#"{"preset":"strict","tasks":9}"#)))
            .expect("raised");
        assert_eq!(
            c.limits_raised,
            vec![RaisedLimit {
                limit: "tasks".into(),
                from: 8,
                to: 9
            }]
        );
        assert_eq!(c.describe(), "limit tasks 8 -> 9");
        // A longer deadline raises the CPU budget it makes, too.
        let c =
            Changes::between(&standard, &entry(Some(r#"{"deadline_ms":31000}"#))).expect("raised");
        let raised: Vec<&str> = c.limits_raised.iter().map(|r| r.limit.as_str()).collect();
        assert_eq!(raised, ["cpu_seconds", "deadline_ms"]);
    }
}
