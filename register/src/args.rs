//! The command line of `dot-register`. The doc comments are the `--help` text.

use argh::FromArgs;
use proto::Containment;
use std::path::PathBuf;

/// Create a platform root, manage its trusted publishers, register signed plugins (or local
/// plugins in a development root), remove and list them. Prints JSON on stdout; on failure one
/// error object on stderr and exit 1 (refused), 2 (malformed input) or 5 (I/O). Every check runs
/// before anything is written.
#[derive(FromArgs, Debug)]
pub struct Args {
    #[argh(subcommand)]
    pub command: Command,
}

#[derive(FromArgs, Debug)]
#[argh(subcommand)]
pub enum Command {
    Init(InitArgs),
    Publisher(PublisherArgs),
    Add(AddArgs),
    Dev(DevArgs),
    Remove(RemoveArgs),
    List(ListArgs),
}

/// Create a platform root (directories mode 0700), or check an existing one (idempotent).
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "init")]
pub struct InitArgs {
    /// the root directory (its parent must exist)
    #[argh(option)]
    pub root: PathBuf,
    /// make a development root (writes the DEV marker); an existing non-development root is
    /// refused, never upgraded
    #[argh(switch)]
    pub dev: bool,
}

/// Manage the trust store: the publishers whose signatures are accepted.
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "publisher")]
pub struct PublisherArgs {
    #[argh(subcommand)]
    pub command: PublisherCommand,
}

#[derive(FromArgs, Debug)]
#[argh(subcommand)]
pub enum PublisherCommand {
    Add(PublisherAddArgs),
    Revoke(PublisherRevokeArgs),
    List(PublisherListArgs),
}

/// Trust a publisher's minisign public key (adds the key to an existing publisher).
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "add")]
pub struct PublisherAddArgs {
    /// the platform root
    #[argh(option)]
    pub root: PathBuf,
    /// the publisher id (a name: [a-z0-9][a-z0-9._-]{0,63})
    #[argh(option)]
    pub id: String,
    /// the public key file, as `minisign -G` writes it
    #[argh(option)]
    pub pubkey: PathBuf,
}

/// Revoke a publisher (all its keys), or one key with --key. Entries it signed stop verifying.
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "revoke")]
pub struct PublisherRevokeArgs {
    /// the platform root
    #[argh(option)]
    pub root: PathBuf,
    /// the publisher id
    #[argh(option)]
    pub id: String,
    /// why (recorded in the trust store)
    #[argh(option)]
    pub reason: String,
    /// revoke only this key id (16 uppercase hex digits)
    #[argh(option)]
    pub key: Option<String>,
}

/// List the trusted publishers (JSON array of publisher records).
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "list")]
pub struct PublisherListArgs {
    /// the platform root
    #[argh(option)]
    pub root: PathBuf,
}

/// Register a signed plugin: checks the entry, its signature by a trusted publisher, the
/// executable's size and digest (and static ELF for `process`), then pins the executable in the
/// store and writes the entry and its signature.
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "add")]
pub struct AddArgs {
    /// the platform root
    #[argh(option)]
    pub root: PathBuf,
    /// the entry file (JSON), exactly as signed
    #[argh(option)]
    pub entry: PathBuf,
    /// the entry's minisign signature (ENTRY.minisig)
    #[argh(option)]
    pub signature: PathBuf,
    /// the plugin executable the entry describes
    #[argh(option)]
    pub exe: PathBuf,
    /// replace an already registered plugin of the same name
    #[argh(switch)]
    pub replace: bool,
    /// accept a version lower than the registered one (rollback)
    #[argh(switch)]
    pub allow_downgrade: bool,
}

/// Register a local plugin in a development root (trust "local", no signature): pins the
/// executable and writes an entry built from these options.
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "dev")]
pub struct DevArgs {
    /// the development root
    #[argh(option)]
    pub root: PathBuf,
    /// the plugin name
    #[argh(option)]
    pub name: String,
    /// the plugin executable
    #[argh(option)]
    pub exe: PathBuf,
    /// the containment it requires: audit or process
    #[argh(option)]
    pub containment: Containment,
    /// the plugin version (default 0.1.0)
    #[argh(option, default = "String::from(\"0.1.0\")")]
    pub version: String,
    /// the protocol requirement (default ">=1.0, <2")
    #[argh(option, default = "String::from(\">=1.0, <2\")")]
    pub protocol: String,
    /// a declared input, NAME:string or NAME:file, with :optional appended if not required;
    /// repeatable
    #[argh(option)]
    pub input: Vec<String>,
    /// replace an already registered plugin of the same name
    #[argh(switch)]
    pub replace: bool,
}

/// Remove a plugin's entry and signature (its pinned executable stays in the store).
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "remove")]
pub struct RemoveArgs {
    /// the platform root
    #[argh(option)]
    pub root: PathBuf,
    /// the plugin name
    #[argh(option)]
    pub name: String,
}

/// List the registered plugins, each verified as dot-verify entry does (JSON array with `valid`
/// and, when not valid, the `problem` error object).
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "list")]
pub struct ListArgs {
    /// the platform root
    #[argh(option)]
    pub root: PathBuf,
}
