//! A system registry in a scratch tree (`--sysroot`), populated as a publisher and an admin do it:
//! `dot-register init --layer`, `publisher add`, `entry new` signed with a real minisign key,
//! `add`. Shared by the layered-precedence suite and the plugin package's round trip.

use super::{ok, tool};
use proto::layers::SystemLayers;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use testkit::{KeyPair, TempDir};

/// A publisher: an id and its minisign key, its public key file written in `dir`.
pub struct Publisher {
    pub id: String,
    pub key: KeyPair,
    pub pubkey: PathBuf,
}

impl Publisher {
    pub fn new(id: &str, dir: &Path) -> Publisher {
        let key = KeyPair::generate();
        let pubkey = key.pk_path(dir);
        Publisher {
            id: id.to_owned(),
            key,
            pubkey,
        }
    }

    /// `dot-register entry new` for `exe` as `name` at `version`, signed by this publisher: the
    /// entry's and its signature's paths, in `dir`.
    pub fn sign_entry(
        &self,
        dir: &Path,
        name: &str,
        exe: &Path,
        containment: &str,
        version: &str,
    ) -> (PathBuf, PathBuf) {
        let out = ok(
            tool("dot-register")
                .args(["entry", "new", "--name", name, "--exe"])
                .arg(exe)
                .args(["--publisher", &self.id, "--containment", containment])
                .args(["--version", version, "--input", "name:string:optional"])
                .output()
                .unwrap(),
            "dot-register entry new",
        );
        let entry = dir.join(format!("{name}-{}-{version}.json", self.id));
        std::fs::write(&entry, &out.stdout).unwrap();
        let sig = self.key.sign_file(&entry, true);
        (entry, sig)
    }
}

/// The two system layers under a scratch sysroot.
pub struct System {
    pub dir: TempDir,
    pub sysroot: PathBuf,
    pub layers: SystemLayers,
}

impl System {
    /// An empty sysroot: the layers' parent directories exist, the layers do not.
    pub fn new() -> System {
        let dir = TempDir::new();
        // Traversable by every user: the suites run tools as nobody from here.
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let sysroot = dir.join("sysroot");
        let layers = SystemLayers::new(Some(&sysroot));
        for d in [&layers.vendor, &layers.admin] {
            std::fs::create_dir_all(d.parent().unwrap()).unwrap();
        }
        System {
            dir,
            sysroot,
            layers,
        }
    }

    /// `dot-register init --layer --root DIR`.
    pub fn init_layer(dir: &Path) {
        ok(
            tool("dot-register")
                .args(["init", "--layer", "--root"])
                .arg(dir)
                .output()
                .unwrap(),
            "dot-register init --layer",
        );
    }

    /// Trusts `p` in the layer `dir` and registers `exe` as `name` signed by it (the layer made
    /// first when missing); `staging` as a package stages its vendor layer (`--staging`), or as
    /// the admin writes theirs.
    pub fn publish(
        staging: bool,
        layer: &Path,
        p: &Publisher,
        name: &str,
        exe: &Path,
        containment: &str,
        version: &str,
    ) {
        if !layer.exists() {
            System::init_layer(layer);
        }
        let work = layer.parent().unwrap().join(".work");
        std::fs::create_dir_all(&work).unwrap();
        ok(
            tool("dot-register")
                .args(["publisher", "add", "--root"])
                .arg(layer)
                .args(["--id", &p.id, "--pubkey"])
                .arg(&p.pubkey)
                .args(staging.then_some("--staging"))
                .output()
                .unwrap(),
            "dot-register publisher add",
        );
        let (entry, sig) = p.sign_entry(&work, name, exe, containment, version);
        ok(
            tool("dot-register")
                .args(["add", "--replace", "--root"])
                .arg(layer)
                .arg("--entry")
                .arg(&entry)
                .arg("--signature")
                .arg(&sig)
                .arg("--exe")
                .arg(exe)
                .args(staging.then_some("--staging"))
                .output()
                .unwrap(),
            "dot-register add",
        );
        std::fs::remove_dir_all(&work).unwrap();
    }

    /// `TOOL ARGS --sysroot SYSROOT`.
    pub fn cmd(&self, tool_name: &str, args: &[&str]) -> Command {
        let mut c = tool(tool_name);
        c.args(args).arg("--sysroot").arg(&self.sysroot);
        c
    }

    /// `dot-verify entry NAME --sysroot SYSROOT`.
    pub fn verify(&self, name: &str) -> Output {
        self.cmd("dot-verify", &["entry", name]).output().unwrap()
    }
}
