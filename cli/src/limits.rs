//! The seven limit options, defined once for every command line that takes them (`dot-launch`,
//! `dot-register dev`, `dot-register entry new`): argh has no flattening of one options struct
//! into another, so [`with_limit_options!`](crate::with_limit_options) appends the same fields,
//! with the same help, to each command's struct, and gives it one conversion,
//! `limit_options()`, to [`proto::limits::Asked`] (the values given, in the order of
//! `proto::limits::LIMITS`).

/// Declares the argh struct written inside it with the seven limit options appended
/// (`--max-memory`, `--max-cpu-seconds`, `--max-tasks`, `--max-descriptors`, `--max-outputs`,
/// `--max-output-bytes`, `--deadline-ms`) and a `limit_options()` method returning what was given.
/// `role` ends each option's help: what the value does on this command line (`dot-register`: it
/// replaces the preset's; `dot-launch`: it may only lower the entry's), starting with a space as a
/// doc comment's line does. The fields written inside must end with a comma.
#[macro_export]
macro_rules! with_limit_options {
    (
        role = $role:literal;
        $(#[$meta:meta])*
        $vis:vis struct $name:ident {
            $($fields:tt)*
        }
    ) => {
        $(#[$meta])*
        $vis struct $name {
            $($fields)*
            /// address space in bytes, RLIMIT_AS (process; standard preset 1 GiB);
            #[doc = $role]
            #[argh(option)]
            pub max_memory: Option<u64>,
            /// CPU seconds of every thread together, RLIMIT_CPU (process; standard preset: the
            /// deadline's seconds times the task bound);
            #[doc = $role]
            #[argh(option)]
            pub max_cpu_seconds: Option<u64>,
            /// the most tasks (processes and threads) at once, RLIMIT_NPROC (process; standard
            /// preset 256);
            #[doc = $role]
            #[argh(option)]
            pub max_tasks: Option<u64>,
            /// the most open descriptors, RLIMIT_NOFILE (process; standard preset 64);
            #[doc = $role]
            #[argh(option)]
            pub max_descriptors: Option<u64>,
            /// the most output files committed (standard preset 256);
            #[doc = $role]
            #[argh(option)]
            pub max_outputs: Option<u64>,
            /// the most output bytes, every output together; at process also the largest file,
            /// RLIMIT_FSIZE (standard preset 64 MiB);
            #[doc = $role]
            #[argh(option)]
            pub max_output_bytes: Option<u64>,
            /// the wall deadline in milliseconds (standard preset 30000);
            #[doc = $role]
            #[argh(option)]
            pub deadline_ms: Option<u64>,
        }

        impl $name {
            /// The limit options as given (`None`: not given).
            pub fn limit_options(&self) -> $crate::limits::Asked {
                $crate::limits::Asked {
                    memory_bytes: self.max_memory,
                    cpu_seconds: self.max_cpu_seconds,
                    tasks: self.max_tasks,
                    descriptors: self.max_descriptors,
                    outputs: self.max_outputs,
                    output_bytes: self.max_output_bytes,
                    deadline_ms: self.deadline_ms,
                }
            }
        }
    };
}

pub use proto::limits::Asked;
