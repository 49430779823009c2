//! The plugin's stage: prepared before the spawn (`in/` with the file inputs, an empty `out/`),
//! and its `out/` opened after the run for the commit.

use crate::exec::Observed;
use crate::inputs::Inputs;
use crate::rundir::RunDir;
use crate::LaunchError;
use std::os::unix::fs::DirBuilderExt;

/// The stage: `in/` with the file inputs (copied from the descriptors opened at check time) and an
/// empty `out/`.
pub(crate) fn prepare(run: &RunDir, inputs: &Inputs) -> Result<(), LaunchError> {
    let stage = run.stage();
    for dir in [stage.clone(), stage.join("in"), stage.join("out")] {
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&dir)
            .map_err(|e| LaunchError::io("creating the stage", &dir, e))?;
    }
    for f in &inputs.files {
        crate::cancel::check(crate::cancel::During::Stage)?;
        let dest = stage.join("in").join(&f.key);
        let mut out = sys::fs::create_new(&dest, 0o600)
            .map_err(|e| LaunchError::io("copying a file input", &dest, e))?;
        let mut src = &f.file;
        std::io::copy(&mut src, &mut out)
            .map_err(|e| LaunchError::io("copying a file input", &f.path, e))?;
    }
    Ok(())
}

/// The stage's `out/`, opened: in the private tmpfs the runner handed over (`process`), or in the
/// run directory (`audit`).
pub(crate) fn out_dir(run: &RunDir, o: &Observed) -> Result<std::fs::File, LaunchError> {
    let path = run.stage().join("out");
    let fd = match &o.stage {
        Some(stage) => sys::fs::open_dir_at(stage, "out"),
        None => sys::fs::open_dir(&path),
    };
    fd.map(std::fs::File::from)
        .map_err(|e| LaunchError::io("opening the stage's out/", path, e.into()))
}
