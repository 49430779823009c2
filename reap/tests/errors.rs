//! The error kinds of `dot-reap` a test cannot cause on purpose (a process the kernel will not let
//! die), checked on the typed error: kind, exit code, fields and the command to run next.
#![allow(clippy::unwrap_used)]

use proto::{ExitCode, Kind, ToErrorObject};
use reap::ReapError;

#[test]
fn survivors_are_reap_survivors_exit_5_with_the_command_to_try_again() {
    let e = ReapError::Survivors {
        pgid: 4242,
        samples: 200,
        survivors: vec![4243],
    };
    testkit::assert_typed(&e, Kind::ReapSurvivors);
    assert_eq!(Kind::ReapSurvivors.exit_code(), ExitCode::System);
    let obj = e.to_error_object();
    testkit::assert_kind!(obj, Kind::ReapSurvivors);
    assert_eq!(obj.field.as_deref(), Some("survivors"));
    assert_eq!(obj.value.as_deref(), Some("[4243]"));
    assert_eq!(obj.next.as_deref(), Some("dot-reap --pgid 4242"));
}
