//! The plugin's stage: prepared before the spawn, and its `out/` opened after the run for the
//! commit.
//!
//! At `audit` the stage is on disk in the run directory: `stage/in/` with the file inputs and an
//! empty `stage/out/`, the plugin's working directory. At `process` the plugin's stage is the
//! runner's private tmpfs (`dot-sandbox`'s `stage` module); on disk there is only what the runner
//! copies into it, `stage/in/` with the file inputs, and nothing at all for a run without file
//! inputs: no directory is made (and removed again) that nothing would use.

use crate::exec::Observed;
use crate::inputs::Inputs;
use crate::rundir::RunDir;
use crate::LaunchError;
use proto::Containment;
use std::os::unix::fs::DirBuilderExt;
use std::path::PathBuf;

/// Makes the on-disk stage `containment` needs (see the module's text) and returns the directory
/// the spawned process starts in: the stage when there is one, else the run directory (which
/// holds nothing but the journal, so a runner finds no `in/` there).
pub(crate) fn prepare(
    run: &RunDir,
    inputs: &Inputs,
    containment: Containment,
) -> Result<PathBuf, LaunchError> {
    let stage = run.stage();
    let dirs: &[&str] = match containment {
        Containment::Audit => &["", "in", "out"],
        Containment::Process if inputs.files.is_empty() => return Ok(run.path.clone()),
        Containment::Process => &["", "in"],
    };
    for sub in dirs {
        let dir = stage.join(sub);
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
    Ok(stage)
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
