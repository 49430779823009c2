//! The resource limits of a run: what an entry declares (its `limits` member, signed with the
//! rest), the two named presets, and the limits of one launch once the invoker has lowered them.
//!
//! An entry without `limits` runs under [`Limits::STANDARD`]. An entry's `limits` names a preset
//! (default `standard`) and may set any field, which replaces the preset's value. The invoker may
//! only lower a limit: a `dot-launch` option above the entry's value is refused before anything
//! is created ([`Limits::lowered`]).
//!
//! | limit | field | `dot-launch` option | `standard` | `strict` | enforced by |
//! |---|---|---|---|---|---|
//! | memory | `memory_bytes` | `--max-memory` | 1 GiB | 256 MiB | `RLIMIT_AS` (`process`) |
//! | CPU | `cpu_seconds` | `--max-cpu-seconds` | deadline × tasks | 10 s | `RLIMIT_CPU`, every thread together (`process`) |
//! | tasks | `tasks` | `--max-tasks` | 256 | 8 | `RLIMIT_NPROC` of the run's own identity (`process`) |
//! | descriptors | `descriptors` | `--max-descriptors` | 64 | 32 | `RLIMIT_NOFILE` (`process`) |
//! | outputs | `outputs` | `--max-outputs` | 256 | 16 | the commit (both levels) |
//! | output bytes | `output_bytes` | `--max-output-bytes` | 64 MiB | 8 MiB | the commit (both levels); `RLIMIT_FSIZE` and the stage (`process`) |
//! | deadline | `deadline_ms` | `--deadline-ms` | 30 s | 10 s | the launcher's wall clock (both levels) |
//!
//! Without a declared `cpu_seconds` (the `standard` preset), the CPU budget is the deadline
//! (whole seconds, rounded up) times the task bound: no run can spend more CPU than that before
//! its deadline, so the CPU limit then never stops a run the deadline would not have stopped, and
//! two threads spinning get the whole deadline. A declared `cpu_seconds` is a limit of its own.
//!
//! [`Limits`] is the one type of a run's limits, with one name per number: the run result's
//! `limits`, what `dot-launch` holds a run to (`launch::exec::RunLimits`, with the invoker's
//! stream bounds), what `--explain` prints (`limits.run`), and where the runner's command line
//! takes its values from ([`crate::runner::RunnerLimits`], the same names plus the stage). The
//! command-line options that set them are defined once (`cli::with_limit_options!`).

use serde::{Deserialize, Deserializer, Serialize};
use std::fmt;

/// A named set of limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Preset {
    /// What every entry without `limits` gets.
    Standard,
    /// Tighter bounds for small plugins (too little memory for a Go runtime, which needs about
    /// 700 MiB of address space to start).
    Strict,
}

impl fmt::Display for Preset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Preset::Standard => "standard",
            Preset::Strict => "strict",
        })
    }
}

impl std::str::FromStr for Preset {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "standard" => Ok(Preset::Standard),
            "strict" => Ok(Preset::Strict),
            other => Err(format!(
                "unknown preset {other:?}; expected standard or strict"
            )),
        }
    }
}

impl Preset {
    /// The preset's limits.
    pub fn limits(self) -> Limits {
        match self {
            Preset::Standard => Limits::STANDARD,
            Preset::Strict => Limits::STRICT,
        }
    }
}

/// A field that, when present, holds a value: `null` is refused (absent means "the preset's").
pub(crate) fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<T>, D::Error> {
    match Option::<T>::deserialize(d)? {
        Some(v) => Ok(Some(v)),
        None => Err(serde::de::Error::custom(
            "null is not a value here: leave the field out",
        )),
    }
}

/// An entry's `limits` member, exactly as stored: a preset and the fields that replace its values.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeclaredLimits {
    /// The base (default `standard`).
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub preset: Option<Preset>,
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub memory_bytes: Option<u64>,
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub cpu_seconds: Option<u64>,
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub tasks: Option<u64>,
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub descriptors: Option<u64>,
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub outputs: Option<u64>,
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub output_bytes: Option<u64>,
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub deadline_ms: Option<u64>,
}

/// The limits of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    /// Address space, bytes (`RLIMIT_AS`).
    pub memory_bytes: u64,
    /// CPU seconds of every thread together (`RLIMIT_CPU`); absent: the deadline times the
    /// task bound ([`Limits::cpu_budget`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_seconds: Option<u64>,
    /// Tasks (processes and threads) at once (`RLIMIT_NPROC` of the run's own identity).
    pub tasks: u64,
    /// Open descriptors (`RLIMIT_NOFILE`).
    pub descriptors: u64,
    /// Output files committed.
    pub outputs: u64,
    /// Bytes of every output together; also the largest file (`RLIMIT_FSIZE`).
    pub output_bytes: u64,
    /// Wall deadline, milliseconds from the spawn.
    pub deadline_ms: u64,
}

/// One limit: its entry field, its `dot-launch` option and the range an entry may declare.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limit {
    /// Its field in `limits`.
    pub field: &'static str,
    /// The same, as the entry's field path (`limits.memory_bytes`).
    pub path: &'static str,
    pub option: &'static str,
    pub min: u64,
    pub max: u64,
}

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

/// Every limit, in the order of the table above.
pub const LIMITS: [Limit; 7] = [
    Limit {
        field: "memory_bytes",
        path: "limits.memory_bytes",
        option: "--max-memory",
        min: 16 * MIB,
        max: 1 << 40,
    },
    Limit {
        field: "cpu_seconds",
        path: "limits.cpu_seconds",
        option: "--max-cpu-seconds",
        min: 1,
        max: 7 * 86_400,
    },
    Limit {
        field: "tasks",
        path: "limits.tasks",
        option: "--max-tasks",
        min: 1,
        max: 65_536,
    },
    Limit {
        field: "descriptors",
        path: "limits.descriptors",
        option: "--max-descriptors",
        min: 16,
        max: 65_536,
    },
    Limit {
        field: "outputs",
        path: "limits.outputs",
        option: "--max-outputs",
        min: 0,
        max: 65_536,
    },
    Limit {
        field: "output_bytes",
        path: "limits.output_bytes",
        option: "--max-output-bytes",
        min: 1,
        max: 64 * GIB,
    },
    Limit {
        field: "deadline_ms",
        path: "limits.deadline_ms",
        option: "--deadline-ms",
        min: 1,
        max: 7 * 86_400_000,
    },
];

/// Why an entry's `limits` is not valid: a field out of its range.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("limits.{}: {value} is outside {}..={}", .limit.field, .limit.min, .limit.max)]
pub struct OutOfRange {
    pub limit: Limit,
    pub value: u64,
}

/// The invoker asked more than the entry allows: refused, never clamped.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{} {asked} is above the entry's limit of {entry} ({}); the invoker may only lower it", .limit.option, .limit.field)]
pub struct AboveEntry {
    pub limit: Limit,
    pub entry: u64,
    pub asked: u64,
}

/// What the invoker asked (`None`: the entry's value).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Asked {
    pub memory_bytes: Option<u64>,
    pub cpu_seconds: Option<u64>,
    pub tasks: Option<u64>,
    pub descriptors: Option<u64>,
    pub outputs: Option<u64>,
    pub output_bytes: Option<u64>,
    pub deadline_ms: Option<u64>,
}

impl Asked {
    /// The first value asked below its limit's smallest accepted value, with that limit.
    pub fn below_minimum(&self) -> Option<(Limit, u64)> {
        LIMITS
            .iter()
            .zip(self.values())
            .find_map(|(l, v)| v.filter(|v| *v < l.min).map(|v| (*l, v)))
    }

    fn values(&self) -> [Option<u64>; 7] {
        [
            self.memory_bytes,
            self.cpu_seconds,
            self.tasks,
            self.descriptors,
            self.outputs,
            self.output_bytes,
            self.deadline_ms,
        ]
    }
}

impl DeclaredLimits {
    fn values(&self) -> [Option<u64>; 7] {
        [
            self.memory_bytes,
            self.cpu_seconds,
            self.tasks,
            self.descriptors,
            self.outputs,
            self.output_bytes,
            self.deadline_ms,
        ]
    }

    /// The declared limits made of command-line values (`dot-register dev` and `entry new` take
    /// the `dot-launch` option names, plus `--preset`): `None` when nothing is declared, so an
    /// entry made without these options has no `limits` member at all.
    pub fn from_options(preset: Option<Preset>, given: Asked) -> Option<DeclaredLimits> {
        let d = DeclaredLimits {
            preset,
            memory_bytes: given.memory_bytes,
            cpu_seconds: given.cpu_seconds,
            tasks: given.tasks,
            descriptors: given.descriptors,
            outputs: given.outputs,
            output_bytes: given.output_bytes,
            deadline_ms: given.deadline_ms,
        };
        (d != DeclaredLimits::default()).then_some(d)
    }

    /// The command-line options that declare these limits (`--preset strict`, `--max-memory N`,
    /// …), in the table's order: what [`DeclaredLimits::from_options`] reads back.
    pub fn options(&self) -> Vec<(&'static str, String)> {
        let mut v = Vec::new();
        if let Some(p) = self.preset {
            v.push(("--preset", p.to_string()));
        }
        for (limit, value) in LIMITS.iter().zip(self.values()) {
            if let Some(value) = value {
                v.push((limit.option, value.to_string()));
            }
        }
        v
    }

    /// Checks every declared value against its range.
    pub fn validate(&self) -> Result<(), OutOfRange> {
        for (limit, value) in LIMITS.iter().zip(self.values()) {
            if let Some(v) = value {
                if v < limit.min || v > limit.max {
                    return Err(OutOfRange {
                        limit: *limit,
                        value: v,
                    });
                }
            }
        }
        Ok(())
    }

    /// The limits these declare: the preset's, each declared field replacing its value.
    pub fn resolve(&self) -> Limits {
        self.preset
            .unwrap_or(Preset::Standard)
            .limits()
            .replaced(self.values())
    }
}

impl Limits {
    /// The limits of an entry without `limits`: what dot has always given a run, except the CPU
    /// budget, which is the deadline over every task.
    pub const STANDARD: Limits = Limits {
        memory_bytes: GIB,
        cpu_seconds: None,
        tasks: 256,
        descriptors: 64,
        outputs: 256,
        output_bytes: 64 * MIB,
        deadline_ms: 30_000,
    };

    /// Tighter bounds for small, single-purpose plugins.
    pub const STRICT: Limits = Limits {
        memory_bytes: 256 * MIB,
        cpu_seconds: Some(10),
        tasks: 8,
        descriptors: 32,
        outputs: 16,
        output_bytes: 8 * MIB,
        deadline_ms: 10_000,
    };

    /// The limits an entry declares (`None`: no `limits` member, the standard preset).
    pub fn of(declared: Option<&DeclaredLimits>) -> Limits {
        declared
            .map(DeclaredLimits::resolve)
            .unwrap_or(Limits::STANDARD)
    }

    /// The CPU seconds the run may spend, every thread together: the declared value, or the
    /// deadline (whole seconds, rounded up) times the task bound.
    pub fn cpu_budget(&self) -> u64 {
        self.cpu_seconds.unwrap_or_else(|| {
            self.deadline_ms
                .div_ceil(1000)
                .max(1)
                .saturating_mul(self.tasks)
        })
    }

    /// Each limit with its value (the CPU budget resolved), in the table's order.
    pub fn each(&self) -> [(Limit, u64); 7] {
        let v = self.values();
        std::array::from_fn(|i| (LIMITS[i], v[i]))
    }

    fn values(&self) -> [u64; 7] {
        [
            self.memory_bytes,
            self.cpu_budget(),
            self.tasks,
            self.descriptors,
            self.outputs,
            self.output_bytes,
            self.deadline_ms,
        ]
    }

    /// These limits lowered as the invoker asked. A value above this one's is refused
    /// ([`AboveEntry`], the first in the table's order), never clamped. A CPU budget that was the
    /// deadline times the tasks follows the lowered deadline and tasks unless asked for itself.
    pub fn lowered(&self, asked: &Asked) -> Result<Limits, AboveEntry> {
        for ((limit, entry), asked) in LIMITS.iter().zip(self.values()).zip(asked.values()) {
            if let Some(asked) = asked.filter(|a| *a > entry) {
                return Err(AboveEntry {
                    limit: *limit,
                    entry,
                    asked,
                });
            }
        }
        Ok(self.replaced(asked.values()))
    }

    /// These limits with each value that `values` holds (in the table's order) in its place.
    fn replaced(&self, values: [Option<u64>; 7]) -> Limits {
        let [memory_bytes, cpu_seconds, tasks, descriptors, outputs, output_bytes, deadline_ms] =
            values;
        Limits {
            memory_bytes: memory_bytes.unwrap_or(self.memory_bytes),
            cpu_seconds: cpu_seconds.or(self.cpu_seconds),
            tasks: tasks.unwrap_or(self.tasks),
            descriptors: descriptors.unwrap_or(self.descriptors),
            outputs: outputs.unwrap_or(self.outputs),
            output_bytes: output_bytes.unwrap_or(self.output_bytes),
            deadline_ms: deadline_ms.unwrap_or(self.deadline_ms),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_standard_preset_is_what_an_entry_without_limits_gets() {
        assert_eq!(Limits::of(None), Limits::STANDARD);
        assert_eq!(DeclaredLimits::default().resolve(), Limits::STANDARD);
        assert_eq!(Preset::Strict.limits(), Limits::STRICT);
        // 30 s over 256 tasks: two spinning threads are not stopped before the deadline.
        assert_eq!(Limits::STANDARD.cpu_budget(), 30 * 256);
        assert_eq!(Limits::STRICT.cpu_budget(), 10);
        for l in [Limits::STANDARD, Limits::STRICT] {
            let declared = DeclaredLimits {
                memory_bytes: Some(l.memory_bytes),
                cpu_seconds: l.cpu_seconds,
                tasks: Some(l.tasks),
                descriptors: Some(l.descriptors),
                outputs: Some(l.outputs),
                output_bytes: Some(l.output_bytes),
                deadline_ms: Some(l.deadline_ms),
                preset: None,
            };
            assert_eq!(
                declared.validate(),
                Ok(()),
                "a preset is within every range"
            );
        }
    }

    #[test]
    fn declared_limits_round_trip_through_their_options() {
        assert_eq!(DeclaredLimits::from_options(None, Asked::default()), None);
        let d = DeclaredLimits::from_options(
            Some(Preset::Strict),
            Asked {
                cpu_seconds: Some(60),
                deadline_ms: Some(90_000),
                ..Asked::default()
            },
        )
        .expect("declared");
        let opts = d.options();
        assert_eq!(
            opts,
            vec![
                ("--preset", "strict".to_owned()),
                ("--max-cpu-seconds", "60".to_owned()),
                ("--deadline-ms", "90000".to_owned()),
            ]
        );
    }

    #[test]
    fn declared_fields_replace_the_presets_values() {
        let d = DeclaredLimits {
            preset: Some(Preset::Strict),
            cpu_seconds: Some(60),
            deadline_ms: Some(90_000),
            ..DeclaredLimits::default()
        };
        let l = d.resolve();
        assert_eq!(l.cpu_seconds, Some(60));
        assert_eq!(l.deadline_ms, 90_000);
        assert_eq!(l.memory_bytes, Limits::STRICT.memory_bytes);
        assert_eq!(l.tasks, Limits::STRICT.tasks);
    }

    #[test]
    fn the_cpu_budget_follows_the_deadline_and_tasks_unless_declared() {
        let l = Limits {
            deadline_ms: 2_500,
            tasks: 4,
            ..Limits::STANDARD
        };
        assert_eq!(l.cpu_budget(), 12);
        let lowered = l
            .lowered(&Asked {
                deadline_ms: Some(1_000),
                ..Asked::default()
            })
            .expect("lower");
        assert_eq!(lowered.cpu_budget(), 4);
        let tiny = Limits {
            deadline_ms: 1,
            tasks: 1,
            ..Limits::STANDARD
        };
        assert_eq!(tiny.cpu_budget(), 1, "never zero");
    }

    #[test]
    fn the_invoker_may_lower_but_never_raise() {
        let entry = Limits::STRICT;
        let same = entry
            .lowered(&Asked {
                tasks: Some(8),
                deadline_ms: Some(10_000),
                ..Asked::default()
            })
            .expect("equal is not above");
        assert_eq!(same, entry);
        let lower = entry
            .lowered(&Asked {
                memory_bytes: Some(64 << 20),
                cpu_seconds: Some(2),
                outputs: Some(0),
                ..Asked::default()
            })
            .expect("lower");
        assert_eq!(lower.memory_bytes, 64 << 20);
        assert_eq!(lower.cpu_seconds, Some(2));
        assert_eq!(lower.outputs, 0);
        let cases = [
            (
                Asked {
                    memory_bytes: Some(512 << 20),
                    ..Asked::default()
                },
                "--max-memory",
                256 << 20,
                512 << 20,
            ),
            (
                Asked {
                    cpu_seconds: Some(11),
                    ..Asked::default()
                },
                "--max-cpu-seconds",
                10,
                11,
            ),
            (
                Asked {
                    descriptors: Some(33),
                    ..Asked::default()
                },
                "--max-descriptors",
                32,
                33,
            ),
            (
                Asked {
                    deadline_ms: Some(10_001),
                    ..Asked::default()
                },
                "--deadline-ms",
                10_000,
                10_001,
            ),
        ];
        for (asked, option, entry_value, asked_value) in cases {
            let e = entry.lowered(&asked).expect_err(option);
            assert_eq!(
                (e.limit.option, e.entry, e.asked),
                (option, entry_value, asked_value)
            );
        }
        // Above a derived CPU budget is refused too.
        let e = Limits::STANDARD
            .lowered(&Asked {
                cpu_seconds: Some(30 * 256 + 1),
                ..Asked::default()
            })
            .expect_err("above the derived budget");
        assert_eq!(e.entry, 30 * 256);
    }

    #[test]
    fn each_declared_value_is_range_checked() {
        for limit in LIMITS {
            let mut values = [None; 7];
            let at = LIMITS.iter().position(|l| *l == limit).expect("listed");
            for (value, ok) in [(limit.min, true), (limit.max, true), (limit.max + 1, false)]
                .into_iter()
                .chain((limit.min > 0).then(|| (limit.min - 1, false)))
            {
                values[at] = Some(value);
                let d = DeclaredLimits {
                    preset: None,
                    memory_bytes: values[0],
                    cpu_seconds: values[1],
                    tasks: values[2],
                    descriptors: values[3],
                    outputs: values[4],
                    output_bytes: values[5],
                    deadline_ms: values[6],
                };
                match d.validate() {
                    Ok(()) => assert!(ok, "{} {value}", limit.field),
                    Err(e) => {
                        assert!(!ok, "{} {value}", limit.field);
                        assert_eq!((e.limit, e.value), (limit, value));
                    }
                }
            }
        }
    }
}
